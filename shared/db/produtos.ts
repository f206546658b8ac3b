// Reading products with their variations, parts and price tiers per channel (DESIGN §9). One
// query per page: the nested arrays are built by PostgreSQL (json_agg in lateral subqueries),
// so a page of 100 products is one round trip, not one per product.
import type { FragmentSqlToken, ListSqlToken } from 'slonik';
import { z } from 'zod';
import { pageClauses, type Posicao, type SortColumn } from './paging.ts';
import { sql, type Db } from './pool.ts';

export const Faixa = z.object({ a_partir_de: z.number().int(), preco_centavos: z.number().int() });
export const PrecoCanal = z.object({ canal_id: z.string(), faixas: z.array(Faixa) });
export const Parte = z.object({ id: z.string(), nome: z.string(), quantidade: z.number().int() });
export const Variacao = z.object({
  id: z.string(),
  sku: z.string(),
  nome: z.string(),
  ativa: z.boolean(),
  quantidade_minima: z.number().int(),
  multiplo: z.number().int(),
  partes: z.array(Parte),
  precos: z.array(PrecoCanal),
});

export const ProdutoRow = z.object({
  id: z.string(),
  sku: z.string(),
  nome: z.string(),
  descricao: z.string().nullable(),
  ativo: z.boolean(),
  variacoes: z.array(Variacao),
  criado_em: z.string(),
  atualizado_em: z.string(),
  row_version: z.number().int(),
  cursor_ts: z.string(),
});
export type ProdutoRow = z.infer<typeof ProdutoRow>;

export type FiltrosProdutos = {
  limite: number;
  cursor?: Posicao;
  atualizado_desde?: string;
  ordem?: SortColumn;
  sku?: string;
  ativo?: boolean;
  canal_id?: string;
};

// Variations in the order the screen shows them; parts likewise; channels oldest first; tiers by
// the quantity they start at.
const variacoesDoProduto = sql.fragment`
  SELECT coalesce(json_agg(json_build_object(
           'id', v.id, 'sku', v.sku, 'nome', v.nome, 'ativa', v.ativa,
           'quantidade_minima', v.quantidade_minima, 'multiplo', v.multiplo,
           'partes', coalesce(pt.partes, '[]'::json),
           'precos', coalesce(pr.precos, '[]'::json))
         ORDER BY v.posicao, v.criado_em, v.id), '[]'::json) AS variacoes
    FROM variacoes v
    LEFT JOIN LATERAL (
      SELECT json_agg(json_build_object('id', x.id, 'nome', x.nome, 'quantidade', x.quantidade)
                      ORDER BY x.posicao, x.id) AS partes
        FROM partes x
       WHERE x.conta_id = v.conta_id AND x.variacao_id = v.id) pt ON true
    LEFT JOIN LATERAL (
      SELECT json_agg(json_build_object('canal_id', c.id, 'faixas', f.faixas) ORDER BY c.criado_em, c.id) AS precos
        FROM (SELECT t.canal_id,
                     json_agg(json_build_object('a_partir_de', t.a_partir_de, 'preco_centavos', t.preco_centavos)
                              ORDER BY t.a_partir_de) AS faixas
                FROM precos t
               WHERE t.conta_id = v.conta_id AND t.variacao_id = v.id
               GROUP BY t.canal_id) f
        JOIN canais c ON c.conta_id = v.conta_id AND c.id = f.canal_id) pr ON true
   WHERE v.conta_id = p.conta_id AND v.produto_id = p.id`;

function selectProdutos(where: FragmentSqlToken | ListSqlToken, cursorColumn: FragmentSqlToken, tail: FragmentSqlToken) {
  return sql.type(ProdutoRow)`
    SELECT p.id, p.sku, p.nome, p.descricao, p.ativo, vs.variacoes, p.criado_em, p.atualizado_em, p.row_version::float8 AS row_version,
           ${cursorColumn}
      FROM produtos p
      CROSS JOIN LATERAL (${variacoesDoProduto}) vs
     WHERE ${where}
     ${tail}`;
}

export async function listarProdutos(db: Db, contaId: string, filtros: FiltrosProdutos): Promise<readonly ProdutoRow[]> {
  const page = pageClauses('p', filtros.ordem ?? 'criado_em', filtros);
  const conditions = [sql.fragment`p.conta_id = ${contaId}`, page.where];
  if (filtros.ativo !== undefined) conditions.push(sql.fragment`p.ativo = ${filtros.ativo}`);
  // A product's own sku or the sku of one of its variations (what a marketplace listing knows).
  if (filtros.sku !== undefined) {
    conditions.push(sql.fragment`p.id IN (
      SELECT id FROM produtos WHERE conta_id = ${contaId} AND sku = ${filtros.sku}
      UNION
      SELECT produto_id FROM variacoes WHERE conta_id = ${contaId} AND sku = ${filtros.sku})`);
  }
  // Products sold on the channel: at least one price tier of a variation on it.
  if (filtros.canal_id !== undefined) {
    conditions.push(sql.fragment`p.id IN (
      SELECT v.produto_id
        FROM precos t JOIN variacoes v ON v.conta_id = t.conta_id AND v.id = t.variacao_id
       WHERE t.conta_id = ${contaId} AND t.canal_id = ${filtros.canal_id})`);
  }
  return db.any(selectProdutos(sql.join(conditions, sql.fragment` AND `), page.cursorColumn, page.orderLimit));
}

export async function lerProduto(db: Db, contaId: string, id: string): Promise<ProdutoRow | null> {
  return db.maybeOne(selectProdutos(
    sql.fragment`p.conta_id = ${contaId} AND p.id = ${id}`,
    sql.fragment`p.criado_em::text AS cursor_ts`,
    sql.fragment``,
  ));
}
