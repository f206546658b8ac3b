// The expiry routine (docs/decisions/0029-quotation-and-order-states.md): a sent quotation whose
// validade has passed (in the account's time zone) becomes expirada, with origem.via 'rotina' in
// its events. Batched, and rows locked by a concurrent change are skipped (the next run takes
// them), so it never waits on a request.
import { z } from 'zod';
import { comOrigem } from './origem.ts';
import { sql, type Pool } from './pool.ts';

const LOTE = 500;

export async function expirarCotacoes(pool: Pool, contaId: string | null = null): Promise<{ expiradas: number }> {
  let expiradas = 0;
  for (;;) {
    const rows = await comOrigem(pool, 'rotina', (tx) => tx.any(sql.type(z.object({ id: z.string() }))`
      UPDATE cotacoes SET status = 'expirada'
       WHERE status = 'enviada' AND (conta_id, id) IN (
         SELECT c.conta_id, c.id FROM cotacoes c JOIN contas a ON a.id = c.conta_id
          WHERE c.status = 'enviada' AND c.validade < (now() AT TIME ZONE a.fuso_horario)::date
            AND (${contaId}::uuid IS NULL OR c.conta_id = ${contaId})
          ORDER BY c.validade
          LIMIT ${LOTE}
            FOR UPDATE OF c SKIP LOCKED)
      RETURNING id`));
    expiradas += rows.length;
    if (rows.length < LOTE) return { expiradas };
  }
}
