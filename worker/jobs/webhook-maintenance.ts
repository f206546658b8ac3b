// Every ten minutes: re-enqueue deliveries whose pg-boss job is gone (a job that failed past its
// retries, or was deleted), drop hourly counters older than two days, and delete relayed events
// past their retention in batches.
import { notifyDeliveriesDue } from '../../shared/db/delivery-ops.ts';
import {
  deleteOldEvents,
  deleteOldHourlyCounters,
  forgetJob,
  longEnqueuedDeliveries,
} from '../../shared/db/delivery-maintenance.ts';
import { DELIVERY_QUEUE } from '../webhooks/queue.ts';
import type { JobDef } from './types.ts';

const BATCH = 1_000;
const LIVE = new Set(['created', 'retry', 'active']);

export const webhookMaintenance: JobDef = {
  name: 'webhook-maintenance',
  cron: '*/10 * * * *',
  handler: async (_jobs, { pool, boss, log }) => {
    let rescued = 0;
    for (const d of await longEnqueuedDeliveries(pool, 200)) {
      // A job still queued behind a backlog is left alone; only a job that can no longer run is replaced.
      const job = await boss.getJobById(DELIVERY_QUEUE, d.job_id);
      if (job && LIVE.has(job.state)) continue;
      if (await forgetJob(pool, d.conta_id, d.id, d.job_id)) rescued++;
    }
    if (rescued > 0) await notifyDeliveriesDue(pool);
    const counters = await deleteOldHourlyCounters(pool);
    let events = 0;
    for (let n = BATCH; n === BATCH; events += n) n = await deleteOldEvents(pool, BATCH);
    log.info({ rescued, counters, events }, 'webhook maintenance');
  },
};
