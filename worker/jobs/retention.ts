// Daily: the request log and the suspensions of keys after 30 days, in batches (shared/db/retention.ts).
import { purge } from '../../shared/db/retention.ts';
import type { JobDef } from './types.ts';

export const requestLogRetention: JobDef = {
  name: 'request-log-retention',
  cron: '17 3 * * *',
  handler: async (_jobs, { pool, log }) => {
    const deleted = await purge(pool, 'request_log');
    const suspensoes = await purge(pool, 'suspensoes');
    log.info({ deleted, suspensoes }, 'request log retention');
  },
};
