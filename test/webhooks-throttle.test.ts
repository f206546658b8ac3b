// The per-endpoint throttle (issue 37, item 4): set by the operator CLI, held across two real worker
// processes at once, counted by a real receiver per whole second of its arrivals.
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { sql } from '#shared/db/pool.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import { createAccount } from './helpers/fixtures.ts';
import { spawnRole, type RoleProcess } from './helpers/roles.ts';
import { runOps } from './helpers/ops.ts';
import { addEndpoint, emit, eventually, startReceiver, type Received, type Receiver } from './helpers/receiver.ts';

const test = suite('webhooks: a per-endpoint throttle, across workers');
let receiver: Receiver;
let db: TestDatabase;
const children = new Set<ChildProcess>();

test.before(async () => {
  receiver = await startReceiver();
  db = await createTestDatabase();
});
test.after(async () => {
  for (const child of children) child.kill('SIGKILL');
  await receiver.close();
  await db.close();
});

/** `node worker/main.ts` on the suite's database, as the Procfile runs it. */
function spawnWorker(): RoleProcess {
  return spawnRole('worker/main.ts', { DATABASE_URL: db.url, PUBLIC_BASE_URL: 'http://127.0.0.1:3000/v1', SHUTDOWN_GRACE_MS: '5000' }, children);
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  await exited;
}

const Count = z.object({ n: z.number() });
const listeners = () => db.pool.oneFirst(sql.type(Count)`
  SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'worker-listen'`);
const cotacao = () => ({ objeto: 'cotacao', id: randomUUID(), codigo: 'COT-1', status: 'rascunho' });

/** Arrivals per whole second of the receiver's wall clock. */
function perSecond(got: readonly Received[]): Map<number, number> {
  const counts = new Map<number, number>();
  for (const r of got) {
    const second = Math.floor((performance.timeOrigin + r.at) / 1000);
    counts.set(second, (counts.get(second) ?? 0) + 1);
  }
  return counts;
}

test('the CLI sets and removes a throttle; a bad rate or an unknown endpoint is refused', async () => {
  const account = await createAccount(db.pool);
  const endpoint = await addEndpoint(db.pool, receiver, { contaId: account.contaId, usuarioId: account.usuarioId, path: '/cli' });
  const ref = ['--conta', account.contaId, '--endpoint', endpoint.id];
  const set = await runOps(db.url, ['webhooks', 'throttle', ...ref, '--por-segundo', '5']);
  assert.is(set.code, 0, set.stderr);
  assert.equal(set.json, { endpoint_id: endpoint.id, per_second: 5 });
  const rate = () => db.pool.maybeOneFirst(sql.type(z.object({ per_second: z.number() }))`
    SELECT per_second FROM webhook_throttles WHERE endpoint_id = ${endpoint.id}`);
  assert.is(await rate(), 5);
  const off = await runOps(db.url, ['webhooks', 'throttle', ...ref, '--por-segundo', 'off']);
  assert.equal([off.code, off.json], [0, { endpoint_id: endpoint.id, per_second: null }]);
  assert.is(await rate(), null, 'none by default, and none after off');
  for (const bad of ['0', '-1', '2.5', 'muitos']) {
    const refused = await runOps(db.url, ['webhooks', 'throttle', ...ref, '--por-segundo', bad]);
    assert.is.not(refused.code, 0, `--por-segundo ${bad}`);
  }
  const unknown = await runOps(db.url, ['webhooks', 'throttle', '--conta', account.contaId, '--endpoint', randomUUID(), '--por-segundo', '3']);
  assert.is.not(unknown.code, 0);
  assert.match(unknown.stderr, /no endpoint/);
});

test('two workers at once: arrivals at a throttled endpoint never exceed its rate in any whole second, and every delivery arrives once', async () => {
  const RATE = 4;
  const EVENTS = 24;
  const account = await createAccount(db.pool, { plano: 'farm' });
  const lento = await addEndpoint(db.pool, receiver, { contaId: account.contaId, usuarioId: account.usuarioId, path: '/ritmo' });
  await addEndpoint(db.pool, receiver, { contaId: account.contaId, usuarioId: account.usuarioId, path: '/livre' });
  const set = await runOps(db.url, ['webhooks', 'throttle', '--conta', account.contaId, '--endpoint', lento.id, '--por-segundo', String(RATE)]);
  assert.is(set.code, 0, set.stderr);
  receiver.respond(() => ({ status: 200 }));
  const workers = [spawnWorker(), spawnWorker()];
  await eventually(listeners, (n) => n === 2);
  const ids: string[] = [];
  for (let round = 0; round < 3; round++) {
    ids.push(...await Promise.all(Array.from({ length: EVENTS / 3 }, () => emit(db.pool, account.contaId, 'cotacao.criada', cotacao()))));
  }
  const livres = await receiver.waitFor(EVENTS, (r) => r.path === '/livre', 30_000);
  assert.equal(new Set(livres.map((r) => r.id)), new Set(ids), 'the endpoint without a throttle got every event');
  const got = await receiver.waitFor(EVENTS, (r) => r.path === '/ritmo', 60_000);
  assert.is(got.length, EVENTS, 'each event once');
  assert.equal(new Set(got.map((r) => r.id)), new Set(ids), 'every event arrived');
  const counts = perSecond(got);
  const worst = Math.max(...counts.values());
  assert.ok(worst <= RATE, `${worst} arrivals in one second, at most ${RATE}: ${JSON.stringify([...counts])}`);
  const delivered = await eventually(
    () => db.pool.oneFirst(sql.type(Count)`SELECT count(*)::int AS n FROM deliveries WHERE status = 'succeeded' AND endpoint_id = ${lento.id}`),
    (n) => n === EVENTS);
  assert.is(delivered, EVENTS);
  for (const w of workers) await stop(w);
  for (const w of workers) assert.is(w.exitCode, 0, w.output());
  assert.equal(receiver.unverified(), []);
});

test.run();
