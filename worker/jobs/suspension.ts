// Lifts a key's suspension when its 15 minutes are over (contract §5.5) and forgets the refusals
// that caused it. Scheduled by the web process at the moment of suspension.
import { sql } from '#shared/db/pool.ts';
import { QUEUES } from '#shared/jobs.ts';
import type { JobDef } from './types.ts';

export const liftSuspension: JobDef<{ contaId: string; chaveId: string }> = {
  name: QUEUES.liftSuspension,
  queue: { retryLimit: 5, retryDelay: 5 },
  handler: async (jobs, { pool, log }) => {
    for (const job of jobs) {
      const { contaId, chaveId } = job.data;
      const lifted = await pool.query(sql.typeAlias('void')`
        UPDATE chaves_api SET suspensa_ate = NULL, recusas_consecutivas = 0
         WHERE conta_id = ${contaId} AND id = ${chaveId} AND suspensa_ate IS NOT NULL AND suspensa_ate <= now()`);
      log.info({ chave_id: chaveId, lifted: lifted.rowCount }, 'suspension lifted');
    }
  },
};
