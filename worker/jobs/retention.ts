// Daily: the request log after 30 days, by dropping its days' partitions (and deleting, in batches,
// what the default partition kept of those days), and the suspensions of keys (shared/db/retention.ts).
import { dropExpiredPartitions } from '#shared/db/partitions.ts';
import { purge, RETENTION } from '#shared/db/retention.ts';
import type { JobDef } from './types.ts';

export const requestLogRetention: JobDef = {
  name: 'request-log-retention',
  cron: '17 3 * * *',
  handler: async (_jobs, { pool, log }) => {
    const partitions = await dropExpiredPartitions(pool, 'request_log', RETENTION.requestLogDays);
    const deleted = await purge(pool, 'request_log');
    const suspensions = await purge(pool, 'suspensions');
    log.info({ partitions, deleted, suspensions }, 'request log retention');
  },
};
