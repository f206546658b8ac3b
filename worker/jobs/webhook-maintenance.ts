// Every ten minutes: purge what is past its retention: hourly counters after two days, events
// (with their deliveries and attempts) 30 days after their relay and last delivery. (A dead
// worker's deliveries need nothing here: their leases run out.)
import { purge } from '../../shared/db/retention.ts';
import type { JobDef } from './types.ts';

export const webhookMaintenance: JobDef = {
  name: 'webhook-maintenance',
  cron: '*/10 * * * *',
  handler: async (_jobs, { pool, log }) => {
    const counters = await purge(pool, 'webhook_uso_por_hora');
    const events = await purge(pool, 'outbox');
    log.info({ counters, events }, 'webhook maintenance');
  },
};
