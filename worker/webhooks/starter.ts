// Starts attempts: before a request goes out, the attempt is recorded (startAttempts) for the jobs
// this worker still holds as fetched, in one statement shared by the attempts starting at that
// moment. A job whose claim was lost (its heartbeat ran out while this worker stalled, and another
// worker may hold it now) is not sent: two live workers never send the same delivery.
import type { Job } from 'pg-boss';
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

export function createStarter(deps: { pool: Pool }): Starter {
  return turnBatch<Job<DeliveryJob>, Started>(async (jobs) => {
    const rows = await startAttempts(deps.pool, DELIVERY_QUEUE,
      jobs.map((j) => ({ contaId: j.data.c, deliveryId: j.data.d, jobId: j.id, retryCount: j.retryCount })));
    const byJob = new Map(rows.map((r) => [r.jobId, r]));
    return jobs.map((j): Started => {
      const row = byJob.get(j.id);
      if (!row?.held) return 'lost';
      return row.attempt ?? 'gone';
    });
  }, { max: 500, parallel: 4 });
}
