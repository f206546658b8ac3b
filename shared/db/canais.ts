// Queries on sales channels.
import { z } from 'zod';
import { pageClauses, type Posicao } from './paging.ts';
import { sql, type Db } from './pool.ts';

export const CanalRow = z.object({
  id: z.string(),
  nome: z.string(),
  tipo: z.enum(['loja_propria', 'marketplace', 'atacado', 'outro']),
  taxa_percentual_bps: z.number().int(),
  ativo: z.boolean(),
  criado_em: z.string(),
  atualizado_em: z.string(),
  cursor_ts: z.string(),
});
export type CanalRow = z.infer<typeof CanalRow>;

export async function listarCanais(db: Db, contaId: string, query: { limite: number; cursor?: Posicao; atualizado_desde?: string }) {
  const page = pageClauses('c', 'criado_em', query);
  return db.any(sql.type(CanalRow)`
    SELECT c.id, c.nome, c.tipo, c.taxa_percentual_bps, c.ativo, c.criado_em, c.atualizado_em, ${page.cursorColumn}
      FROM canais c
     WHERE c.conta_id = ${contaId} AND ${page.where}
     ${page.orderLimit}`);
}

export type NovoCanal = { nome: string; tipo: CanalRow['tipo']; taxaPercentualBps?: number; ativo?: boolean };

export async function criarCanal(db: Db, contaId: string, canal: NovoCanal): Promise<{ id: string }> {
  return db.one(sql.type(z.object({ id: z.string() }))`
    INSERT INTO canais (conta_id, nome, tipo, taxa_percentual_bps, ativo)
    VALUES (${contaId}, ${canal.nome}, ${canal.tipo}, ${canal.taxaPercentualBps ?? 0}, ${canal.ativo ?? true})
    RETURNING id`);
}
