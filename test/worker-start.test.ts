// A worker's start (worker/main.ts): pg-boss and its jobs wait until what was waiting to go out at
// start has gone (catchUp), at most CATCH_UP_MAX_MS. What counts as waiting is somethingWaiting:
// events due to be relayed and due deliveries nobody holds, not what waits for a later time.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { sql, type Db, type Tx } from '#shared/db/pool.ts';
import { somethingWaiting } from '#shared/db/deliveries.ts';
import { catchUp } from '../worker/main.ts';
import { createTestDatabase, rolledBack, type TestDatabase } from './helpers/db.ts';
import { createAccount, type TestAccount } from './helpers/fixtures.ts';
import { plantDeliveries, plantEndpoint, plantEvents } from './helpers/planted.ts';

const test = suite('worker start: pg-boss after the backlog');
let db: TestDatabase;
let account: TestAccount;
let endpointId: string;

test.before(async () => {
  db = await createTestDatabase();
  account = await createAccount(db.pool);
  endpointId = await plantEndpoint(db.pool, account);
});
test.after(async () => db.close());

const inTx = (work: (tx: Tx) => Promise<void>) => rolledBack(db.pool, work);
const pending = (tx: Db, nextAttemptAt: string) => plantEvents(tx, account.contaId).then((eventIds) =>
  plantDeliveries(tx, { contaId: account.contaId, endpointId, eventIds, status: 'pending', nextAttemptAt }));

test('nothing waits when the outbox is relayed and no delivery is due', () => inTx(async (tx) => {
  await plantEvents(tx, account.contaId, { count: 3 });
  assert.is(await somethingWaiting(tx), false);
}));

test('an event due and not relayed waits', () => inTx(async (tx) => {
  await plantEvents(tx, account.contaId, { relayedAgo: null });
  assert.is(await somethingWaiting(tx), true);
}));

test('an event whose time has not come (a grouping window still open) does not wait', () => inTx(async (tx) => {
  await plantEvents(tx, account.contaId, { relayedAgo: null, criadoAgo: '-30 seconds' });
  assert.is(await somethingWaiting(tx), false);
}));

test('a due delivery waits; one held under a lease, or retried later, does not; a finished one does not', () => inTx(async (tx) => {
  await pending(tx, '30 seconds');
  const done = await plantEvents(tx, account.contaId);
  await plantDeliveries(tx, { contaId: account.contaId, endpointId, eventIds: done, status: 'succeeded' });
  assert.is(await somethingWaiting(tx), false);
  await pending(tx, '-1 second');
  assert.is(await somethingWaiting(tx), true);
}));

test('catchUp returns at once when nothing waits, and after its bound when something does', async () => {
  let started = performance.now();
  await catchUp(db.pool, 3_000);
  assert.ok(performance.now() - started < 1_500, `nothing waiting: returned after ${performance.now() - started} ms`);

  const [id] = await pending(db.pool, '-1 second');
  try {
    started = performance.now();
    await catchUp(db.pool, 400);
    const waited = performance.now() - started;
    // Three polls 100 ms apart fit in the bound; a timer may fire a millisecond early, so a little less.
    assert.ok(waited >= 250, `a due delivery: returned after ${waited} ms`);
  } finally {
    await db.pool.query(sql.typeAlias('void')`DELETE FROM deliveries WHERE conta_id = ${account.contaId} AND id = ${id ?? null}`);
  }
});

test.run();
