// Idempotency records are kept 24 hours (contract §4.2 rule 2, §8.4); every 15 minutes this job
// deletes expired ones in batches. An expired record is never replayed even before it is deleted
// (the claim reads only live ones), so the purge only bounds the table. What POST /eventos/recuperar
// answered goes with them: only a repetition of its key reads it.
import { purge } from '#shared/db/retention.ts';
import type { JobDef } from './types.ts';

export const idempotencyPurge: JobDef = {
  name: 'idempotency-purge',
  cron: '*/15 * * * *',
  handler: async (_jobs, { pool, log }) => {
    const deleted = await purge(pool, 'idempotency_keys');
    if (deleted) log.info({ deleted }, 'expired idempotency keys purged');
    const recuperacoes = await purge(pool, 'recuperacoes');
    if (recuperacoes) log.info({ deleted: recuperacoes }, 'answers of expired recoveries purged');
  },
};
