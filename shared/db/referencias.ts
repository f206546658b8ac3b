// Catalog references of quotation and order items: each variation checked against the caller's
// account in one query, with its product, display name and, for quotations, the unit price of the
// channel's tier for the quantity (the highest a_partir_de not above it).
import { z } from 'zod';
import { regraRecusou } from '../errors.ts';
import { sql, type Db } from './pool.ts';

const VariacaoRef = z.object({
  n: z.number().int(),
  existe: z.boolean(),
  ativa: z.boolean(),
  produto_id: z.string().nullable(),
  nome: z.string().nullable(),
  preco_centavos: z.number().int().nullable(),
});

export type PedidoDeVariacao = { campo: string; variacaoId: string; quantidade: number };
export type Variacao = { produtoId: string; variacaoId: string; nome: string; precoCentavos: number | null };

/**
 * Resolves every variation in order; a variation of another account, unknown, or of an inactive
 * product is 422 referencia_invalida naming the item. canalId null: no price is looked up.
 */
export async function resolverVariacoes(db: Db, contaId: string, pedidos: readonly PedidoDeVariacao[], canalId: string | null): Promise<Variacao[]> {
  if (pedidos.length === 0) return [];
  const rows = await db.any(sql.type(VariacaoRef)`
    SELECT x.n::int AS n, v.id IS NOT NULL AS existe, coalesce(v.ativa AND p.ativo, false) AS ativa,
           v.produto_id, p.nome || ' ' || v.nome AS nome,
           (SELECT pr.preco_centavos::float8 FROM precos pr
             WHERE pr.conta_id = ${contaId} AND pr.variacao_id = v.id AND pr.canal_id = ${canalId}
               AND pr.a_partir_de <= x.quantidade
             ORDER BY pr.a_partir_de DESC LIMIT 1) AS preco_centavos
      FROM unnest(${sql.array(pedidos.map((p) => p.variacaoId), 'uuid')}::uuid[],
                  ${sql.array(pedidos.map((p) => p.quantidade), 'int4')}::int[]) WITH ORDINALITY AS x (variacao_id, quantidade, n)
      LEFT JOIN variacoes v ON v.conta_id = ${contaId} AND v.id = x.variacao_id
      LEFT JOIN produtos p ON p.conta_id = v.conta_id AND p.id = v.produto_id
     ORDER BY x.n`);
  return rows.map((row, i) => {
    const pedido = pedidos[i];
    if (!pedido) throw new Error('variation lookup returned more rows than asked');
    if (!row.existe || !row.produto_id || !row.nome) {
      throw regraRecusou('referencia_invalida', `${pedido.campo}: a variação ${pedido.variacaoId} não existe nesta conta.`);
    }
    if (!row.ativa) throw regraRecusou('referencia_invalida', `${pedido.campo}: a variação ${pedido.variacaoId} ou o seu produto está inativo.`);
    return { produtoId: row.produto_id, variacaoId: pedido.variacaoId, nome: row.nome, precoCentavos: row.preco_centavos };
  });
}
