// Daily cleanup of rows whose retention has passed: the request log after 30 days, in batches so
// a large backlog never holds long locks.
import { sql } from '../../shared/db/pool.ts';
import type { JobDef } from './types.ts';

export const REQUEST_LOG_RETENTION_DAYS = 30;
const BATCH = 5_000;

export const requestLogRetention: JobDef = {
  name: 'request-log-retention',
  cron: '17 3 * * *',
  handler: async (_jobs, { pool, log }) => {
    let total = 0;
    for (;;) {
      const deleted = await pool.query(sql.typeAlias('void')`
        DELETE FROM request_log WHERE requisicao_id IN (
          SELECT requisicao_id FROM request_log
           WHERE created_at < now() - make_interval(days => ${REQUEST_LOG_RETENTION_DAYS})
           LIMIT ${BATCH})`);
      total += deleted.rowCount;
      if (deleted.rowCount < BATCH) break;
    }
    log.info({ deleted: total }, 'request log retention');
  },
};
