import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { projectRoot } from '../shared/config.ts';
import { sql } from '../shared/db/pool.ts';
import { createBoss } from '../shared/boss.ts';
import { DELIVERY_QUEUE } from '../worker/webhooks/queue.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
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
function spawnWorker(db: TestDatabase): ChildProcess & { output: () => string } {
  const child = spawn(process.execPath, ['worker/main.ts'], {
    cwd: projectRoot,
    env: { PATH: process.env.PATH, DATABASE_URL: db.url, PUBLIC_BASE_URL: 'http://127.0.0.1:3000/v1', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', LOG_LEVEL: 'warn', SHUTDOWN_GRACE_MS: '5000' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr?.on('data', (c: Buffer) => (output += c.toString()));
  children.add(child);
  child.on('exit', () => children.delete(child));
  return Object.assign(child, { output: () => output });
}

async function stop(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill(signal);
  await exited;
}

const cotacao = () => ({ objeto: 'cotacao', id: randomUUID(), codigo: 'COT-1', status: 'rascunho' });
const Count = z.object({ n: z.number() });

test('a worker killed with SIGKILL mid-delivery: after a restart every event is delivered with its original webhook-id', async () => {
  const db = await createTestDatabase();
  const account = await createAccount(db.pool, { plano: 'farm' });
  await addEndpoint(db.pool, receiver, { contaId: account.contaId, usuarioId: account.usuarioId, path: '/kill' });
  const ids: string[] = [];
  for (let i = 0; i < 40; i++) ids.push(await emit(db.pool, account.contaId, 'cotacao.criada', cotacao()));

  let release: () => void = () => undefined;
  const held = new Promise<void>((resolve) => (release = resolve));
  receiver.respond((r) => (r.path === '/kill' ? held.then(() => ({ status: 200 })) : { status: 200 }));
  const first = spawnWorker(db);
  await receiver.waitFor(10, (r) => r.path === '/kill');
  await stop(first, 'SIGKILL');
  release();
  receiver.respond(() => ({ status: 200 }));

  const inFlight = await db.pool.oneFirst(sql.type(Count)`
    SELECT count(*)::int AS n FROM deliveries WHERE status = 'pending' AND job_id IS NOT NULL`);
  assert.ok(inFlight >= 10, `${inFlight} deliveries were held by the dead worker`);

  // The dead worker's jobs expire: move their start back past the expiry, as pg-boss's own tests
  // do, and run pg-boss's supervision now instead of at its next interval.
  await db.pool.query(sql.unsafe`
    UPDATE pgboss.job SET started_on = started_on - interval '1 hour' WHERE name = ${DELIVERY_QUEUE} AND state = 'active'`);
  const second = spawnWorker(db);
  const boss = createBoss(db.url, { supervise: false, schedule: false, max: 2 });
  boss.on('error', () => undefined);
  await boss.start();
  await boss.supervise(DELIVERY_QUEUE);
  await boss.stop({ graceful: false });

  const done = await eventually(
    () => db.pool.oneFirst(sql.type(Count)`SELECT count(*)::int AS n FROM deliveries WHERE status = 'succeeded'`),
    (n) => n === 40, 20_000);
  assert.is(done, 40, second.output());
  const got = receiver.received.filter((r) => r.path === '/kill');
  assert.equal(new Set(got.map((r) => r.id)), new Set(ids), 'every event arrived at least once');
  for (const r of got) assert.is(r.json.id, r.id, 'the webhook-id is the event id, in retries too');
  assert.ok(got.length > 40, 'the deliveries cut short were sent again');
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
  await eventually(
    () => db.pool.oneFirst(sql.type(Count)`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'worker-listen'`),
    (n) => n === 2);
  const ids: string[] = [];
  for (let round = 0; round < 10; round++) {
    ids.push(...await Promise.all(Array.from({ length: 30 }, () => emit(db.pool, account.contaId, 'cotacao.criada', cotacao()))));
  }
  const got = await receiver.waitFor(600, (r) => r.path === '/x' || r.path === '/y', 30_000);
  const keys = got.map((r) => `${r.path} ${r.id}`);
  assert.is(new Set(keys).size, 600, 'each event reached each endpoint once');
  assert.equal(new Set(got.map((r) => r.id)), new Set(ids));
  const jobs = await db.pool.oneFirst(sql.type(Count)`SELECT count(*)::int AS n FROM pgboss.job WHERE name = ${DELIVERY_QUEUE}`);
  assert.is(jobs, 600, 'one job per delivery: no event was relayed twice');
  const attempts = await eventually(
    () => db.pool.oneFirst(sql.type(Count)`SELECT count(*)::int AS n FROM delivery_attempts`), (n) => n >= 600);
  assert.is(attempts, 600, 'one attempt per delivery');
  for (const w of workers) await stop(w, 'SIGTERM');
  for (const w of workers) assert.is(w.exitCode, 0, w.output());
  assert.equal(receiver.unverified(), []);
  await db.close();
});

test.run();
