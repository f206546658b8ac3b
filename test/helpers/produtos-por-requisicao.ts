// The catalog as the service built it before products kept their documents (issue 20, item 5): the
// same query, word for word, that assembled each product's variations, parts and price tiers with
// nested json_agg on every request, and the page JSON.stringify made of its rows. The reference the
// stored documents are compared with (test/catalogo-documentos.test.ts), and the baseline of the
// catalog benchmark (bench/produtos-por-requisicao.ts).
import type { FragmentSqlToken, ListSqlToken } from 'slonik';
import { z } from 'zod';
import { toPage } from '../../api/routes/lists.ts';
import { pageClauses } from '#shared/db/paging.ts';
import { sql, type Db } from '#shared/db/pool.ts';
import { Variacao, type FiltrosProdutos } from '#shared/db/produtos.ts';

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
  if (filtros.sku !== undefined) {
    conditions.push(sql.fragment`p.id IN (
      SELECT id FROM produtos WHERE conta_id = ${contaId} AND sku = ${filtros.sku}
      UNION
      SELECT produto_id FROM variacoes WHERE conta_id = ${contaId} AND sku = ${filtros.sku})`);
  }
  if (filtros.canal_id !== undefined) {
    conditions.push(sql.fragment`p.id IN (
      SELECT v.produto_id
        FROM precos t JOIN variacoes v ON v.conta_id = t.conta_id AND v.id = t.variacao_id
       WHERE t.conta_id = ${contaId} AND t.canal_id = ${filtros.canal_id})`);
  }
  return db.any(selectProdutos(sql.join(conditions, sql.fragment` AND `), page.cursorColumn, page.orderLimit));
}

export const present = ({ cursor_ts: _c, row_version: _v, ...produto }: ProdutoRow) => produto;

/** The page as GET /produtos answered it: JSON.stringify of the envelope toPage built from the rows. */
export async function paginaPorRequisicao(db: Db, contaId: string, query: FiltrosProdutos & { vinculo: string }): Promise<string> {
  return JSON.stringify(toPage(await listarProdutos(db, contaId, query), query, present));
}

/** Every product of the account as the old builder made it, by id: the text GET /produtos/{id} sent. */
export async function documentosPorRequisicao(db: Db, contaId: string): Promise<Map<string, string>> {
  const rows = await db.any(selectProdutos(sql.fragment`p.conta_id = ${contaId}`, sql.fragment`p.criado_em::text AS cursor_ts`, sql.fragment``));
  return new Map(rows.map((row) => [row.id, JSON.stringify(present(row))]));
}
