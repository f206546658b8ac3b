// Reading products (docs/decisions/0028-catalog-documents.md): each product's document, the JSON
// text of its representation that the catalog's triggers keep in its row (sql/code/catalogo.sql,
// produto_documento()). A page is one index range scan of produtos giving its products by id and
// version, and the documents the web process does not hold yet at those versions, text it sends as
// it is (docs/decisions/0028-catalog-documents.md); one product is its document, parsed.
import { z } from 'zod';
import { cutPage, pageClauses, type Posicao, type SortColumn } from './paging.ts';
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

/** A product's document, as the API shows it. */
export const ProdutoDocumento = z.object({
  id: z.string(),
  sku: z.string(),
  nome: z.string(),
  descricao: z.string().nullable(),
  ativo: z.boolean(),
  variacoes: z.array(Variacao),
  criado_em: z.string(),
  atualizado_em: z.string(),
});
export type ProdutoDocumento = z.infer<typeof ProdutoDocumento>;

/** One product: its document and its version (the source of its ETag). */
export type ProdutoLido = { id: string; row_version: number; produto: ProdutoDocumento };

export type FiltrosProdutos = {
  limite: number;
  cursor?: Posicao;
  atualizado_desde?: string;
  ordem?: SortColumn;
  sku?: string;
  ativo?: boolean;
  canal_id?: string;
};

/** A product of a page: its id and version (its document changes only with its version). */
export type ProdutoNaPagina = { id: string; row_version: number };

/** A page: its products in the list's order, and where the next page starts (null: this is the last). */
export type PaginaDeProdutos = { produtos: ProdutoNaPagina[]; proxima: Posicao | null };

const PaginaRow = z.object({ id: z.string(), row_version: z.number(), cursor_ts: z.string() });

/**
 * The page's statement: limite + 1 products by id and version in the list's order (the extra one
 * tells whether a next page exists), without their documents, which the web process mostly holds
 * already (exported for the benchmark's EXPLAIN).
 */
export function consultaDaPagina(contaId: string, filtros: FiltrosProdutos) {
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
  return sql.type(PaginaRow)`
    SELECT p.id, p.row_version::float8 AS row_version, ${page.cursorColumn}
      FROM produtos p
     WHERE ${sql.join(conditions, sql.fragment` AND `)}
     ${page.orderLimit}`;
}

export async function paginaDeProdutos(db: Db, contaId: string, filtros: FiltrosProdutos): Promise<PaginaDeProdutos> {
  const { rows, next } = cutPage(await db.any(consultaDaPagina(contaId, filtros)), filtros.limite);
  return { produtos: rows.map(({ id, row_version }) => ({ id, row_version })), proxima: next };
}

const DocumentoRow = z.object({ id: z.string(), row_version: z.number(), documento: z.string() });

/**
 * The documents of the account's products `ids`, each with the version it belongs to (which may be
 * newer than the one a page read a moment before); a product deleted meanwhile is absent. One row
 * per product: a document is a few KB, where a page's documents joined would be one value of hundreds
 * of KB that PostgreSQL, the driver and the web process would each build whole.
 */
export async function documentosDosProdutos(db: Db, contaId: string, ids: readonly string[]): Promise<readonly z.infer<typeof DocumentoRow>[]> {
  if (ids.length === 0) return [];
  return db.any(sql.type(DocumentoRow)`
    SELECT id, row_version::float8 AS row_version, documento
      FROM produtos WHERE conta_id = ${contaId} AND id = ANY(${sql.array(ids, 'uuid')})`);
}

export async function lerProduto(db: Db, contaId: string, id: string): Promise<ProdutoLido | null> {
  const row = await db.maybeOne(sql.type(z.object({ id: z.string(), row_version: z.number().int(), documento: z.string() }))`
    SELECT id, row_version::float8 AS row_version, documento FROM produtos WHERE conta_id = ${contaId} AND id = ${id}`);
  return row && { id: row.id, row_version: row.row_version, produto: ProdutoDocumento.parse(JSON.parse(row.documento)) };
}
