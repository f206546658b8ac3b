// Idempotency records are kept 24 hours (contract §4.2 rule 2); this hourly job deletes expired
// ones in batches.
import { sql } from '../../shared/db/pool.ts';
import type { JobDef } from './types.ts';

const BATCH = 5_000;

export const idempotencyPurge: JobDef = {
  name: 'idempotency-purge',
  cron: '*/15 * * * *',
  handler: async (_jobs, { pool, log }) => {
    let total = 0;
    for (;;) {
      const deleted = await pool.query(sql.typeAlias('void')`
        DELETE FROM idempotency_keys WHERE (conta_id, chave_id, key) IN (
          SELECT conta_id, chave_id, key FROM idempotency_keys WHERE expires_at <= now() LIMIT ${BATCH})`);
      total += deleted.rowCount;
      if (deleted.rowCount < BATCH) break;
    }
    if (total) log.info({ deleted: total }, 'expired idempotency keys purged');
  },
};
