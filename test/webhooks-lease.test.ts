// Deliveries under a lease (shared/db/deliveries.ts; worker/webhooks/lease.ts): a take records the
// attempt's start before anything is sent; a leased delivery is nobody else's until its lease runs
// out, and then the worker that held it can neither renew nor record it; takes are bounded per
// endpoint; a delivery given back unsent leaves no attempt; concurrent takes never share a delivery;
// a take or a relay pass writes the outcomes it is given, and never takes a delivery it records.
import { randomUUID } from 'node:crypto';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { releaseLeases, renewLeases, takeDeliveries, type TakeLimits, type TakenDelivery } from '#shared/db/deliveries.ts';
import { INTERRUPTED, recordResults, type DeliveryResult, type Lease } from '#shared/db/outcomes.ts';
import { relayOutbox } from '#shared/db/outbox.ts';
import { sql } from '#shared/db/pool.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import { createAccount, createPlan, type TestAccount } from './helpers/fixtures.ts';
import { plantEndpoint } from './helpers/planted.ts';
import { addEndpoint, emit, eventually, startReceiver, type Receiver } from './helpers/receiver.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { capturedLog } from './helpers/log-lines.ts';
import { startRecorder } from '../worker/webhooks/recorder.ts';

const test = suite('webhooks: deliveries under a lease');
let db: TestDatabase;

test.before(async () => {
  db = await createTestDatabase();
});
test.after(() => db.close());
// Every test starts with nothing due (each test's deliveries are its own).
test.before.each(async () => {
  await db.pool.query(sql.unsafe`UPDATE deliveries SET status = 'succeeded', completed_at = now(), lease_id = NULL WHERE status = 'pending'`);
});

const LEASE_MS = 10_000;
const limits = (over: Partial<TakeLimits> = {}): TakeLimits =>
  ({ limit: 100, scan: 100, perEndpoint: 100, endpoints: new Map(), leaseMs: LEASE_MS, ...over });

/** An account with `endpoints` endpoints and `events` events relayed to each of them. */
async function relayed(events: number, endpoints = 1): Promise<{ account: TestAccount; endpointIds: string[] }> {
  const account = await createAccount(db.pool, { plano: 'farm' });
  const endpointIds: string[] = [];
  for (let i = 0; i < endpoints; i++) endpointIds.push(await plantEndpoint(db.pool, account, `https://erp.example.com/${i}`));
  for (let i = 0; i < events; i++) await emit(db.pool, account.contaId, 'cotacao.criada', { objeto: 'cotacao', id: randomUUID(), codigo: 'COT-1', status: 'rascunho' });
  while ((await relayOutbox(db.pool, 500)).relayed > 0);
  return { account, endpointIds };
}

const leaseOf = (row: TakenDelivery): Lease => ({ contaId: row.conta_id, deliveryId: row.id, leaseId: row.lease_id });
const resultOf = (row: TakenDelivery, status: number): DeliveryResult => ({
  ...leaseOf(row), endpointId: row.endpoint_id, status: status < 300 ? 'succeeded' : 'pending',
  nextAttemptAt: status < 300 ? null : new Date(Date.now() + 5_000), disable: null,
  attempt: { number: row.attempt, startedAt: new Date(), durationMs: 3, succeeded: status < 300, responseStatus: status, responseBody: 'ok', error: null },
});
const noRuns = { healthy: [], failing: [] };

const Attempt = z.object({ attempt: z.number(), succeeded: z.boolean().nullable(), response_status: z.number().nullable(), error: z.string().nullable() });
const attemptsOf = (row: { conta_id: string; id: string }) => db.pool.any(sql.type(Attempt)`
  SELECT attempt, succeeded, response_status, error FROM delivery_attempts
   WHERE conta_id = ${row.conta_id} AND delivery_id = ${row.id} ORDER BY attempt`);
const Delivery = z.object({ lease_id: z.string().nullable(), attempts: z.number(), status: z.string(), due: z.boolean(), lease_s: z.number() });
const deliveryOf = (row: { conta_id: string; id: string }) => db.pool.one(sql.type(Delivery)`
  SELECT lease_id, attempts, status, next_attempt_at <= now() AS due,
         round(extract(epoch FROM next_attempt_at - now()))::int AS lease_s
    FROM deliveries WHERE conta_id = ${row.conta_id} AND id = ${row.id}`);
/** An event's criado_em as the database gives it. */
const takeEvent = (id: string) => db.pool.oneFirst(sql.type(z.object({ criado_em: z.string() }))`SELECT criado_em FROM outbox WHERE id = ${id}`);
/** The lease ran out (its worker died or stalled): what LEASE_MS of waiting would do. */
const runOut = (row: { conta_id: string; id: string }) => db.pool.query(sql.unsafe`
  UPDATE deliveries SET next_attempt_at = now() - interval '1 second' WHERE conta_id = ${row.conta_id} AND id = ${row.id}`);

test('a take records attempt 1 as started, without an outcome, and leases the delivery to the lease\'s end', async () => {
  await relayed(1);
  const [row, ...more] = await takeDeliveries(db.pool, limits());
  assert.ok(row);
  assert.is(more.length, 0);
  assert.is(row.attempt, 1);
  assert.is(row.run_attempts, 1);
  assert.equal(await attemptsOf(row), [{ attempt: 1, succeeded: null, response_status: null, error: null }]);
  const d = await deliveryOf(row);
  assert.equal([d.lease_id, d.attempts, d.due, d.lease_s], [row.lease_id, 1, false, LEASE_MS / 1000]);
});

test('a leased delivery is nobody else\'s until its lease runs out; then it is taken again, and the first holder can neither renew nor record it', async () => {
  await relayed(1);
  const [first] = await takeDeliveries(db.pool, limits());
  assert.ok(first);
  assert.equal(await takeDeliveries(db.pool, limits()), [], 'not taken again while leased');
  assert.equal([...await renewLeases(db.pool, [leaseOf(first)], LEASE_MS)], [first.id], 'its holder renews it');

  await runOut(first);
  const [second] = await takeDeliveries(db.pool, limits());
  assert.ok(second && second.id === first.id);
  assert.not.equal(second.lease_id, first.lease_id);
  assert.is(second.attempt, 2);
  assert.equal([...await renewLeases(db.pool, [leaseOf(first)], LEASE_MS)], [], 'the first lease is gone');
  assert.equal([...await recordResults(db.pool, [resultOf(first, 200)], noRuns)], [], 'the first holder records nothing');

  assert.equal([...await recordResults(db.pool, [resultOf(second, 200)], noRuns)], [second.id]);
  assert.equal(await attemptsOf(second), [
    { attempt: 1, succeeded: null, response_status: null, error: INTERRUPTED },
    { attempt: 2, succeeded: true, response_status: 200, error: null },
  ]);
  const d = await deliveryOf(second);
  assert.equal([d.lease_id, d.status], [null, 'succeeded']);
});

test('a retry leaves the lease and waits for its time; a delivery given back unsent is due at once with its attempt undone', async () => {
  await relayed(2);
  const [retried, givenBack] = await takeDeliveries(db.pool, limits());
  assert.ok(retried && givenBack);
  await recordResults(db.pool, [resultOf(retried, 500)], noRuns);
  const r = await deliveryOf(retried);
  assert.equal([r.lease_id, r.status, r.due, r.attempts], [null, 'pending', false, 1]);

  assert.is(await releaseLeases(db.pool, [leaseOf(givenBack)]), 1);
  const g = await deliveryOf(givenBack);
  assert.equal([g.lease_id, g.status, g.due, g.attempts], [null, 'pending', true, 0]);
  assert.equal(await attemptsOf(givenBack), [], 'no request went out: no attempt');
  const [again] = await takeDeliveries(db.pool, limits());
  assert.is(again?.attempt, 1, 'taken again as attempt 1');
});

test('takes are bounded per endpoint: no more than its bound of one endpoint, none of an endpoint the worker holds full', async () => {
  const { endpointIds: [x, y] } = await relayed(12, 2);
  const first = await takeDeliveries(db.pool, limits({ perEndpoint: 5 }));
  const by = (rows: readonly TakenDelivery[], e: string | undefined) => rows.filter((r) => r.endpoint_id === e).length;
  assert.equal([by(first, x), by(first, y)], [5, 5]);
  const second = await takeDeliveries(db.pool, limits({ perEndpoint: 5, endpoints: new Map([[x ?? '', 0], [y ?? '', 2]]) }));
  assert.equal([by(second, x), by(second, y)], [0, 2], 'x is full; y has room for 2');
  const third = await takeDeliveries(db.pool, limits({ limit: 3 }));
  assert.is(third.length, 3, 'and never more than the limit');
});

test('concurrent takes never share a delivery, and together take every one', async () => {
  await relayed(120, 2);
  const taken: (readonly TakenDelivery[])[] = [];
  for (;;) {
    const round = await Promise.all([1, 2, 3].map(() => takeDeliveries(db.pool, limits({ limit: 15, scan: 15 }))));
    taken.push(...round);
    if (round.every((r) => r.length === 0)) break;
  }
  const ids = taken.flat().map((r) => r.id);
  assert.is(ids.length, 240);
  assert.is(new Set(ids).size, 240, 'each delivery taken once');
});

test('the relay takes for its worker what it creates, within its bounds per endpoint and the hourly cap; the rest is due for any worker', async () => {
  const account = await createAccount(db.pool, { plano: 'farm' });
  const [x, y] = [await plantEndpoint(db.pool, account, 'https://erp.example.com/x'), await plantEndpoint(db.pool, account, 'https://erp.example.com/y')];
  const events: string[] = [];
  for (let i = 0; i < 6; i++) events.push(await emit(db.pool, account.contaId, 'cotacao.criada', { objeto: 'cotacao', id: randomUUID(), codigo: 'COT-1', status: 'rascunho' }));
  const relayed = await relayOutbox(db.pool, 100, limits({ perEndpoint: 4, endpoints: new Map([[y ?? '', 0]]) }));
  assert.is(relayed.relayed, 6);
  assert.equal(relayed.taken.map((t) => t.endpoint_id), [x, x, x, x], 'four to x (its bound), none to y (full)');
  assert.equal(relayed.taken.map((t) => t.event_id), events.slice(0, 4), 'in the events\' order');
  for (const t of relayed.taken) {
    assert.is(t.attempt, 1);
    assert.equal(await attemptsOf(t), [{ attempt: 1, succeeded: null, response_status: null, error: null }], 'started before anything is sent');
    assert.is((await deliveryOf(t)).lease_id, t.lease_id);
  }
  const rest = await takeDeliveries(db.pool, limits());
  assert.equal(rest.map((r) => r.endpoint_id).sort(), [x, x, y, y, y, y, y, y].sort(), 'the rest due at once, for any worker');
  assert.equal(relayed.taken[0]?.criado_em, (await takeEvent(events[0] ?? '')), 'the event\'s time as every read gives it');
});

test('a take and a relay pass write the outcomes they are given, and a take never takes a delivery it records', async () => {
  const { account } = await relayed(4);
  const [a, b, ...rest] = await takeDeliveries(db.pool, limits({ limit: 2 }));
  assert.ok(a && b);
  assert.is(rest.length, 0);
  // a's lease ran out before its outcome was written: it is due, yet recorded, not taken again.
  await runOut(a);
  const next = await takeDeliveries(db.pool, limits(), { results: [resultOf(a, 200)], runs: noRuns });
  assert.equal(next.map((r) => r.id).includes(a.id), false, 'the delivery recorded is not taken');
  assert.is(next.length, 2, 'the two left');
  const da = await deliveryOf(a);
  assert.equal([da.lease_id, da.status], [null, 'succeeded']);
  assert.equal(await attemptsOf(a), [{ attempt: 1, succeeded: true, response_status: 200, error: null }]);

  await emit(db.pool, account.contaId, 'cotacao.criada', { objeto: 'cotacao', id: randomUUID(), codigo: 'COT-1', status: 'rascunho' });
  const pass = await relayOutbox(db.pool, 100, limits(), { results: [resultOf(b, 503)], runs: noRuns });
  assert.is(pass.relayed, 1);
  assert.is(pass.taken.length, 1, 'the new event taken');
  const retried = await deliveryOf(b);
  assert.equal([retried.lease_id, retried.status, retried.due], [null, 'pending', false], 'b waits for its retry');
  assert.equal(await attemptsOf(b), [{ attempt: 1, succeeded: false, response_status: 503, error: null }]);
});

test('the recorder writes alone an outcome no statement claims, and those whose statement failed', async () => {
  await relayed(2);
  const [a, b] = await takeDeliveries(db.pool, limits());
  assert.ok(a && b);
  const { log } = capturedLog('warn');
  const recorder = startRecorder({ pool: db.pool, log });
  await recorder.record({ result: resultOf(a, 200), failingSince: null });
  assert.is((await deliveryOf(a)).status, 'succeeded', 'written alone once its wait is over');
  const written = recorder.record({ result: resultOf(b, 200), failingSince: null });
  const claim = recorder.claim();
  assert.equal(claim?.outcomes.results.map((r) => r.deliveryId), [b.id]);
  assert.is(recorder.claim(), null, 'claimed once');
  claim?.settle(new Error('the statement that claimed it failed'));
  await written;
  assert.is((await deliveryOf(b)).status, 'succeeded');
});

test('what the relay takes counts against the hourly cap', async () => {
  await createPlan(db.pool, 'duas_por_hora', { entregas_webhook_por_hora: 2 });
  const account = await createAccount(db.pool, { plano: 'duas_por_hora' });
  await plantEndpoint(db.pool, account);
  for (let i = 0; i < 3; i++) await emit(db.pool, account.contaId, 'cotacao.criada', { objeto: 'cotacao', id: randomUUID(), codigo: 'COT-1', status: 'rascunho' });
  const relayed = await relayOutbox(db.pool, 100, limits());
  assert.is(relayed.taken.length, 2, 'the hour\'s two');
  assert.equal(await takeDeliveries(db.pool, limits()), [], 'the third is held to the next hour by the next take');
});

/**
 * A web process and a worker on a database of their own, one account with an endpoint at `path` of a
 * receiver answering 200 after `delayMs`, the worker sending `perEndpoint` requests at a time to it.
 */
async function withWorker(
  options: { path: string; perEndpoint: number; delayMs: number },
  run: (ctx: { app: TestApp; receiver: Receiver; account: TestAccount; emitir: (codigo: string) => Promise<string> }) => Promise<void>,
): Promise<void> {
  const receiver = await startReceiver();
  const app = await startTestApp({ worker: true, env: { WEBHOOK_CONCURRENCY_PER_ENDPOINT: String(options.perEndpoint) } });
  try {
    const account = await createAccount(app.db.pool, { plano: 'farm' });
    await addEndpoint(app.db.pool, receiver, { contaId: account.contaId, usuarioId: account.usuarioId, path: options.path });
    receiver.respond(() => ({ status: 200, delayMs: options.delayMs }));
    const emitir = (codigo: string) => emit(app.db.pool, account.contaId, 'cotacao.criada', { objeto: 'cotacao', id: randomUUID(), codigo, status: 'rascunho' });
    await run({ app, receiver, account, emitir });
  } finally {
    await app.stop();
    await receiver.close();
  }
}

test('a delivery whose lease another worker took while it waited is not sent by the worker that lost it', async () => {
  // One request at a time, 4.5 s each: the second delivery waits in the worker past its first renewal.
  await withWorker({ path: '/roubada', perEndpoint: 1, delayMs: 4_500 }, async ({ app, receiver, emitir }) => {
    const primeiro = await emitir('COT-1');
    const segundo = await emitir('COT-2');
    await receiver.waitFor(1, (r) => r.id === primeiro);
    // The second taken too, and waiting behind the first.
    const leased = () => app.db.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int AS n FROM deliveries WHERE event_id = ${segundo} AND lease_id IS NOT NULL`);
    assert.is(await eventually(leased, (n) => n === 1), 1, 'the second delivery is held by the worker');
    // Another worker takes the waiting one (as after a stall past its lease): a new lease, and its attempt.
    const roubada = await app.db.pool.oneFirst(sql.type(z.object({ id: z.string() }))`
      UPDATE deliveries SET lease_id = gen_random_uuid(), attempts = attempts + 1, run_attempts = run_attempts + 1
       WHERE event_id = ${segundo} AND lease_id IS NOT NULL RETURNING id`);
    await eventually(() => app.db.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int AS n FROM deliveries WHERE event_id = ${primeiro} AND status = 'succeeded'`), (n) => n === 1, 10_000);
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.equal(receiver.received.filter((r) => r.id === segundo), [], 'the worker that lost the lease did not send it');
    const d = await app.db.pool.one(sql.type(z.object({ status: z.string(), leased: z.boolean() }))`
      SELECT status, lease_id IS NOT NULL AS leased FROM deliveries WHERE id = ${roubada}`);
    assert.equal(d, { status: 'pending', leased: true }, 'it stays with the worker that took it');
  });
});

test('a worker stopping gives back what it took and did not send: due at once, no attempt left open, the requests in flight recorded', async () => {
  await withWorker({ path: '/devagar', perEndpoint: 2, delayMs: 1_500 }, async ({ app, receiver, account, emitir }) => {
    for (let i = 0; i < 10; i++) await emitir('COT-1');
    // Two requests out (1.5 s each: the stop comes well before they end), four more taken and waiting
    // behind them (three times the endpoint's concurrency).
    await receiver.waitFor(2, (r) => r.path === '/devagar');
    await app.worker?.stop();
    const rows = await app.db.pool.any(sql.type(z.object({ status: z.string(), attempts: z.number(), leased: z.boolean(), due: z.boolean() }))`
      SELECT status, attempts, lease_id IS NOT NULL AS leased, next_attempt_at <= now() AS due FROM deliveries WHERE conta_id = ${account.contaId}`);
    const sent = receiver.received.filter((r) => r.path === '/devagar').length;
    assert.is(rows.filter((r) => r.status === 'succeeded').length, sent, 'every request that went out is recorded');
    assert.ok(rows.filter((r) => r.status === 'pending').every((r) => r.attempts === 0 && !r.leased && r.due), 'the rest due at once, never attempted');
    const open = await app.db.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int AS n FROM delivery_attempts WHERE conta_id = ${account.contaId} AND succeeded IS NULL`);
    assert.is(open, 0, 'no attempt left without an outcome');
    assert.is(sent, 2, 'nothing waiting was sent once the worker was stopping');
  });
});

test('endpoints of two accounts on one host: one slow with its requests in flight does not hold up the other\'s', async () => {
  const receiver = await startReceiver();
  const app = await startTestApp({ worker: true, env: { WEBHOOK_CONCURRENCY_PER_ENDPOINT: '2' } });
  try {
    const [lenta, rapida] = [await createAccount(app.db.pool, { plano: 'farm' }), await createAccount(app.db.pool, { plano: 'farm' })];
    await addEndpoint(app.db.pool, receiver, { contaId: lenta.contaId, usuarioId: lenta.usuarioId, path: '/lento' });
    await addEndpoint(app.db.pool, receiver, { contaId: rapida.contaId, usuarioId: rapida.usuarioId, path: '/rapido' });
    receiver.respond((r) => ({ status: 200, delayMs: r.path === '/lento' ? 3_000 : 0 }));
    const evento = (contaId: string) => emit(app.db.pool, contaId, 'cotacao.criada', { objeto: 'cotacao', id: randomUUID(), codigo: 'COT-1', status: 'rascunho' });
    for (let i = 0; i < 4; i++) await evento(lenta.contaId);
    await receiver.waitFor(2, (r) => r.path === '/lento');
    const sent = performance.now();
    const id = await evento(rapida.contaId);
    const [got] = await receiver.waitFor(1, (r) => r.id === id);
    assert.ok(got && got.at - sent < 1_500, `the other account's delivery arrived ${Math.round((got?.at ?? Infinity) - sent)} ms later`);
  } finally {
    await app.stop();
    await receiver.close();
  }
});

test.run();
