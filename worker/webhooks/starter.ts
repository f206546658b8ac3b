// Starts attempts: before a request goes out, its job's claim is confirmed and refreshed (pg-boss's
// touch, fenced to the fetch that handed it over) and the attempt is recorded (startAttempts), in
// one transaction shared by the attempts starting at that moment. A job whose claim was lost (its
// heartbeat ran out while this worker stalled, and another worker may hold it now) is not sent:
// two live workers never send the same delivery.
import type { Job, PgBoss } from 'pg-boss';
import { z } from 'zod';
import { bossDb } from '../../shared/db/boss-adapter.ts';
import { startAttempts } from '../../shared/db/deliveries.ts';
import type { Pool } from '../../shared/db/pool.ts';
import { DELIVERY_QUEUE, type DeliveryJob } from './queue.ts';
import { turnBatch } from './turn-batch.ts';

/**
 * The attempt's number; 'lost' when this worker no longer holds the job (someone else may: nothing
 * is sent, the job is left alone), 'gone' when the job no longer carries its delivery (it changed
 * since it was loaded: nothing is sent, the job is completed).
 */
export type Started = number | 'lost' | 'gone';
export type Starter = (job: Job<DeliveryJob>) => Promise<Started>;

export function createStarter(deps: { pool: Pool; boss: PgBoss }): Starter {
  return turnBatch<Job<DeliveryJob>, Started>((jobs) => deps.pool.transaction(async (tx) => {
    const held = await touchJobs(deps.boss, jobs, { db: bossDb(tx) });
    const mine = jobs.filter((j) => held.has(j.id));
    const started = new Map((await startAttempts(tx, mine.map((j) => ({ contaId: j.data.c, deliveryId: j.data.d, jobId: j.id }))))
      .map((s) => [s.deliveryId, s.attempt]));
    return jobs.map((j) => (held.has(j.id) ? (started.get(j.data.d) ?? 'gone') : 'lost'));
  }), { max: 500, parallel: 2 });
}

/**
 * Refreshes the heartbeat of jobs this worker holds, fenced to the fetch that handed each one over;
 * answers the ids still held (a job missing was failed by pg-boss's heartbeat check and may be
 * running elsewhere).
 */
export async function touchJobs(boss: PgBoss, jobs: readonly Job<DeliveryJob>[], options: { db?: ReturnType<typeof bossDb> } = {}): Promise<Set<string>> {
  if (jobs.length === 0) return new Set();
  const response = await boss.touch(DELIVERY_QUEUE, jobs.map((j) => ({ id: j.id, retryCount: j.retryCount })), options);
  return new Set(Touched.parse(response).settled);
}

// pg-boss types its answer loosely; touch() answers the ids it refreshed.
const Touched = z.object({ settled: z.array(z.string()) });
