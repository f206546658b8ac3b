// Every few hours: the partitions of the tables partitioned by day, a week ahead
// (shared/db/partitions.ts). Running in two workers at once, each day's partition is still made once.
import { ensurePartitions } from '#shared/db/partitions.ts';
import type { JobDef } from './types.ts';

export const partitionsAhead: JobDef = {
  name: 'partitions-ahead',
  cron: '41 */6 * * *',
  handler: async (_jobs, { pool, log }) => {
    const made = await ensurePartitions(pool);
    if (made > 0) log.info({ made }, 'partitions made ahead');
  },
};
