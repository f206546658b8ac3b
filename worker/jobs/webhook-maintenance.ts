// Every ten minutes: give deliveries whose pg-boss job was lost (failed past its retries, or
// deleted) back to the scheduler, and purge what is past its retention: hourly counters after two
// days, events (with their deliveries and attempts) 30 days after their relay and last delivery.
import { notifyDeliveriesDue } from '../../shared/db/delivery-ops.ts';
import { forgetLostJobs } from '../../shared/db/delivery-maintenance.ts';
import { inBatches, purge } from '../../shared/db/retention.ts';
import { DELIVERY_QUEUE } from '../webhooks/queue.ts';
import type { JobDef } from './types.ts';

export const webhookMaintenance: JobDef = {
  name: 'webhook-maintenance',
  cron: '*/10 * * * *',
  handler: async (_jobs, { pool, log }) => {
    const rescued = await inBatches(1_000, (limit) => forgetLostJobs(pool, DELIVERY_QUEUE, limit));
    if (rescued > 0) await notifyDeliveriesDue(pool);
    const counters = await purge(pool, 'webhook_uso_por_hora');
    const events = await purge(pool, 'outbox');
    log.info({ rescued, counters, events }, 'webhook maintenance');
  },
};
