import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { loadConfig } from '#shared/config.ts';
import { sql } from '#shared/db/pool.ts';
import { holdLimits } from '../worker/webhooks/holdings.ts';
import { LEASE_MS } from '../worker/webhooks/lease.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import { spawnRole, type RoleProcess } from './helpers/roles.ts';
import { createAccount } from './helpers/fixtures.ts';
import { addEndpoint, emit, eventually, startReceiver, type Receiver } from './helpers/receiver.ts';

const test = suite('webhooks: real worker processes, killed and side by side');
let receiver: Receiver;
const children = new Set<ChildProcess>();

test.before(async () => {
  receiver = await startReceiver();
});
test.after(async () => {
  for (const child of children) child.kill('SIGKILL');
  await receiver.close();
});

/** `node worker/main.ts` on the suite's database, as the Procfile runs it. */
function spawnWorker(db: TestDatabase, env: Record<string, string> = {}): RoleProcess {
  return spawnRole('worker/main.ts', {
    DATABASE_URL: db.url, PUBLIC_BASE_URL: 'http://127.0.0.1:3000/v1',
    WEBHOOK_CONCURRENCY_PER_ENDPOINT: String(PER_ENDPOINT), SHUTDOWN_GRACE_MS: '5000', ...env,
  }, children);
}

async function stop(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill(signal);
  await exited;
}

const cotacao = () => ({ objeto: 'cotacao', id: randomUUID(), codigo: 'COT-1', status: 'rascunho' });
const Count = z.object({ n: z.number() });
const BURST = 500;
const PER_ENDPOINT = 10;

/** Workers listening for new events and jobs (each holds one LISTEN connection). */
const listeners = (db: TestDatabase) => db.pool.oneFirst(sql.type(Count)`
  SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'worker-listen'`);

test('a worker SIGKILLed mid-burst: its deliveries run again within 30 s, duplicates only of attempts it left interrupted, every attempt in the log', async () => {
  const db = await createTestDatabase();
  const account = await createAccount(db.pool, { plano: 'farm' });
  await addEndpoint(db.pool, receiver, { contaId: account.contaId, usuarioId: account.usuarioId, path: '/kill' });
  // Slow enough that the burst is in flight when the worker dies.
  receiver.respond(() => ({ status: 200, delayMs: 30 }));
  const first = spawnWorker(db);
  await eventually(() => listeners(db), (n) => n === 1);
  const ids = await Promise.all(Array.from({ length: BURST }, () => emit(db.pool, account.contaId, 'cotacao.criada', cotacao())));
  await receiver.waitFor(BURST / 5, (r) => r.path === '/kill', 30_000);
  await stop(first, 'SIGKILL');
  const killedAt = Date.now();
  const heldByTheDead = await db.pool.oneFirst(sql.type(Count)`
    SELECT count(*)::int AS n FROM deliveries WHERE status = 'pending' AND lease_id IS NOT NULL`);
  assert.ok(heldByTheDead > 0, 'the dead worker held deliveries');

  await new Promise((resolve) => setTimeout(resolve, 1_000));
  const second = spawnWorker(db);
  // No clock is moved: the dead worker's deliveries come back by their leases running out alone.
  const done = await eventually(
    () => db.pool.oneFirst(sql.type(Count)`SELECT count(*)::int AS n FROM deliveries WHERE status = 'succeeded'`),
    (n) => n === BURST, 30_000);
  if (done !== BURST) {
    // What held the rest back, for the failure's message: each one's attempts and their errors.
    const stuck = await db.pool.any(sql.type(z.object({ id: z.string(), status: z.string(), errors: z.array(z.string().nullable()) }))`
      SELECT d.id, d.status, array_agg(a.error ORDER BY a.attempt) AS errors
        FROM deliveries d JOIN delivery_attempts a ON a.conta_id = d.conta_id AND a.delivery_id = d.id
       WHERE d.status <> 'succeeded' GROUP BY d.id, d.status`);
    assert.unreachable(`${done} of ${BURST} delivered 30 s after the kill: ${JSON.stringify(stuck)}\n${second.output()}`);
  }
  const recoveredInMs = Date.now() - killedAt;

  const got = receiver.received.filter((r) => r.path === '/kill');
  for (const r of got) assert.is(r.json.id, r.id, 'the webhook-id is the event id, in a repetition too');
  const times = new Map<string, number>();
  for (const r of got) times.set(r.id, (times.get(r.id) ?? 0) + 1);
  assert.equal(new Set(times.keys()), new Set(ids), 'every event arrived');
  const duplicates = got.length - times.size;

  const log = await db.pool.one(sql.type(z.object({ attempts: z.number(), interrupted: z.number(), open: z.number() }))`
    SELECT count(*)::int AS attempts,
           (count(*) FILTER (WHERE succeeded IS NULL AND error LIKE 'interrompida%'))::int AS interrupted,
           (count(*) FILTER (WHERE succeeded IS NULL AND error IS NULL))::int AS open
      FROM delivery_attempts`);
  const logged = await db.pool.any(sql.type(z.object({ event_id: z.string(), n: z.number() }))`
    SELECT d.event_id, count(*)::int AS n FROM delivery_attempts a JOIN deliveries d ON d.conta_id = a.conta_id AND d.id = a.delivery_id
     GROUP BY d.event_id`);
  for (const { event_id, n } of logged) {
    assert.ok(n >= (times.get(event_id) ?? 0), `event ${event_id}: ${times.get(event_id)} requests arrived, ${n} attempts logged`);
  }
  assert.is(log.open, 0, 'no attempt is left without an outcome or the mark of its interruption');
  assert.ok(duplicates <= log.interrupted, `${duplicates} duplicates, ${log.interrupted} attempts interrupted by the kill`);
  // Held at the kill: requests out, answers not yet recorded and deliveries taken and waiting, at most
  // what a worker holds of one endpoint.
  const held = holdLimits(loadConfig({ WEBHOOK_CONCURRENCY_PER_ENDPOINT: String(PER_ENDPOINT) })).perEndpoint;
  assert.ok(log.interrupted <= held, `${log.interrupted} attempts interrupted, ${held} held at most`);
  assert.is(log.attempts, BURST + log.interrupted, 'one attempt per delivery, plus one per interrupted attempt');
  console.log(`     killed holding ${heldByTheDead}; all ${BURST} delivered ${recoveredInMs} ms after the kill; ${duplicates} duplicates, ${log.interrupted} interrupted`);
  await stop(second, 'SIGTERM');
  await db.close();
});

test('two worker processes relay and deliver every event exactly once', async () => {
  const db = await createTestDatabase();
  const account = await createAccount(db.pool, { plano: 'farm' });
  await addEndpoint(db.pool, receiver, { contaId: account.contaId, usuarioId: account.usuarioId, path: '/x' });
  await addEndpoint(db.pool, receiver, { contaId: account.contaId, usuarioId: account.usuarioId, path: '/y' });
  receiver.respond(() => ({ status: 200 }));
  const workers = [spawnWorker(db), spawnWorker(db)];
  await eventually(() => listeners(db), (n) => n === 2);
  const ids: string[] = [];
  for (let round = 0; round < 10; round++) {
    ids.push(...await Promise.all(Array.from({ length: 30 }, () => emit(db.pool, account.contaId, 'cotacao.criada', cotacao()))));
  }
  const got = await receiver.waitFor(600, (r) => r.path === '/x' || r.path === '/y', 30_000);
  const keys = got.map((r) => `${r.path} ${r.id}`);
  assert.is(new Set(keys).size, 600, 'each event reached each endpoint once');
  assert.equal(new Set(got.map((r) => r.id)), new Set(ids));
  const deliveries = await db.pool.oneFirst(sql.type(Count)`SELECT count(*)::int AS n FROM deliveries`);
  assert.is(deliveries, 600, 'one delivery per event and endpoint: no event was relayed twice');
  const attempts = await eventually(
    () => db.pool.oneFirst(sql.type(Count)`SELECT count(*)::int AS n FROM delivery_attempts`), (n) => n >= 600);
  assert.is(attempts, 600, 'one attempt per delivery');
  for (const w of workers) await stop(w, 'SIGTERM');
  for (const w of workers) assert.is(w.exitCode, 0, w.output());
  assert.equal(receiver.unverified(), []);
  await db.close();
});

test('live workers holding deliveries longer than their lease: each stays with its worker and every event is sent once', async () => {
  const db = await createTestDatabase();
  const account = await createAccount(db.pool, { plano: 'farm' });
  await addEndpoint(db.pool, receiver, { contaId: account.contaId, usuarioId: account.usuarioId, path: '/slow' });
  // One request at a time per worker, each holding at most two deliveries of the endpoint: four
  // events among three workers, so one holds two and the second of those waits for the first; it is
  // recorded past its lease, while another worker has long been idle with room to take it. Only the
  // renewals keep it with its worker.
  const delayMs = Math.ceil(0.55 * LEASE_MS);
  receiver.respond(() => ({ status: 200, delayMs }));
  const workers = [1, 2, 3].map(() => spawnWorker(db, { WEBHOOK_CONCURRENCY_PER_ENDPOINT: '1' }));
  await eventually(() => listeners(db), (n) => n === 3);
  const ids = await Promise.all(Array.from({ length: 4 }, () => emit(db.pool, account.contaId, 'cotacao.criada', cotacao())));
  await eventually(
    () => db.pool.oneFirst(sql.type(Count)`SELECT count(*)::int AS n FROM deliveries WHERE status = 'succeeded'`), (n) => n === 4, 40_000);
  const got = receiver.received.filter((r) => r.path === '/slow');
  assert.is(got.length, 4, 'no event was sent twice');
  assert.equal(new Set(got.map((r) => r.id)), new Set(ids));
  const log = await db.pool.one(sql.type(z.object({ attempts: z.number(), longest: z.number() }))`
    SELECT count(*)::int AS attempts, max(extract(epoch FROM d.completed_at - d.created_at) * 1000)::int AS longest
      FROM delivery_attempts a JOIN deliveries d ON d.conta_id = a.conta_id AND d.id = a.delivery_id`);
  assert.is(log.attempts, 4, 'one attempt each: no lease was taken from its live worker');
  assert.ok(log.longest > LEASE_MS, `a delivery was held ${log.longest} ms from its creation, past its ${LEASE_MS} ms lease`);
  for (const w of workers) await stop(w, 'SIGTERM');
  await db.close();
});

test.run();
