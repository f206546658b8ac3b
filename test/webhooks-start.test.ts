// An attempt's start (shared/db/deliveries.ts, startAttempts): recorded only for a job still held as
// it was fetched, and only while the job carries its delivery; never for a job another fetch holds.
import { randomUUID } from 'node:crypto';
import type { Job, PgBoss } from 'pg-boss';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { createBoss } from '../shared/boss.ts';
import { startAttempts } from '../shared/db/deliveries.ts';
import { relayOutbox } from '../shared/db/outbox.ts';
import { sql } from '../shared/db/pool.ts';
import { loadConfig } from '../shared/config.ts';
import { DELIVERY_QUEUE, ensureDeliveryQueue, enqueueJobs, type DeliveryJob } from '../worker/webhooks/queue.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import { createAccount } from './helpers/fixtures.ts';
import { addEndpoint, emit, startReceiver, type Receiver } from './helpers/receiver.ts';

const test = suite('webhooks: starting an attempt');
let db: TestDatabase;
let boss: PgBoss;
let receiver: Receiver;

test.before(async () => {
  db = await createTestDatabase();
  receiver = await startReceiver();
  boss = createBoss(db.url, { max: 2, supervise: false, schedule: false, applicationName: 'test' });
  boss.on('error', () => undefined);
  await boss.start();
  await ensureDeliveryQueue(boss, loadConfig({ DATABASE_URL: db.url, WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' }));
});
test.after(async () => {
  await boss.stop({ graceful: false });
  await receiver.close();
  await db.close();
});

/** One event relayed to one endpoint, its job fetched as a dispatcher would. */
async function fetchedJob(): Promise<Job<DeliveryJob>> {
  const account = await createAccount(db.pool);
  await addEndpoint(db.pool, receiver, { contaId: account.contaId, usuarioId: account.usuarioId, path: `/${randomUUID()}` });
  await emit(db.pool, account.contaId, 'cotacao.criada', { objeto: 'cotacao', id: randomUUID(), codigo: 'COT-1', status: 'rascunho' });
  await db.pool.transaction(async (tx) => enqueueJobs(tx, boss, (await relayOutbox(tx, 100)).deliveries));
  const [job] = await boss.fetch<DeliveryJob>(DELIVERY_QUEUE, { batchSize: 1 });
  if (!job) throw new Error('no job fetched');
  return job;
}

const claimOf = (job: Job<DeliveryJob>, retryCount = job.retryCount) =>
  ({ contaId: job.data.c, deliveryId: job.data.d, jobId: job.id, retryCount });

const Attempt = z.object({ attempt: z.number(), duration_ms: z.number().nullable(), succeeded: z.boolean().nullable() });
const attemptsOf = (job: Job<DeliveryJob>) => db.pool.any(sql.type(Attempt)`
  SELECT attempt, duration_ms, succeeded FROM delivery_attempts WHERE conta_id = ${job.data.c} AND delivery_id = ${job.data.d}`);

test('a job held as fetched starts attempt 1, logged without an outcome before anything is sent', async () => {
  const job = await fetchedJob();
  assert.equal(await startAttempts(db.pool, DELIVERY_QUEUE, [claimOf(job)]), [{ jobId: job.id, held: true, attempt: 1 }]);
  assert.equal(await attemptsOf(job), [{ attempt: 1, duration_ms: null, succeeded: null }]);
});

test('a job held at another retry count (another fetch holds it) starts nothing', async () => {
  const job = await fetchedJob();
  assert.equal(await startAttempts(db.pool, DELIVERY_QUEUE, [claimOf(job, job.retryCount + 1)]), [{ jobId: job.id, held: false, attempt: null }]);
  await boss.complete(DELIVERY_QUEUE, job.id);
  assert.equal(await startAttempts(db.pool, DELIVERY_QUEUE, [claimOf(job)]), [{ jobId: job.id, held: false, attempt: null }], 'nor one no longer active');
  assert.equal(await attemptsOf(job), []);
});

test('a held job whose delivery no longer names it starts nothing', async () => {
  const job = await fetchedJob();
  await db.pool.query(sql.unsafe`UPDATE deliveries SET job_id = gen_random_uuid() WHERE conta_id = ${job.data.c} AND id = ${job.data.d}`);
  assert.equal(await startAttempts(db.pool, DELIVERY_QUEUE, [claimOf(job)]), [{ jobId: job.id, held: true, attempt: null }]);
  assert.equal(await attemptsOf(job), []);
});

test.run();
