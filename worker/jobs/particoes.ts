// Every few hours: the partitions of the tables partitioned by day, a week ahead
// (shared/db/particoes.ts). Running in two workers at once, each day's partition is still made once.
import { garantirParticoes } from '#shared/db/particoes.ts';
import type { JobDef } from './types.ts';

export const particoesAdiante: JobDef = {
  name: 'particoes-adiante',
  cron: '41 */6 * * *',
  handler: async (_jobs, { pool, log }) => {
    const feitas = await garantirParticoes(pool);
    if (feitas > 0) log.info({ feitas }, 'partitions made ahead');
  },
};
