// Reading products (DESIGN §9): each product's document, the JSON text of its representation that
// the catalog's triggers keep in its row (sql/code/catalogo.sql, produto_documento()). A page is one
// index range scan of produtos and the concatenation of its documents, text the web process sends as
// it is (docs/decisions.md, "Catalog documents"); one product is its document, parsed.
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

/**
 * A page: its documents joined by commas (the JSON array's elements), how many it holds, and where
 * the next page starts (null: this is the last).
 */
export type PaginaDeProdutos = {
  itens: string;
  /** Each product of the page by id and version (its document changes only with its version), in the page's order. */
  versoes: string;
  quantidade: number;
  proxima: Posicao | null;
};

// The page's rows are numbered in the list's order (limite + 1 are read, to know whether a next page
// exists); the documents of the first limite are joined, and the last of them is the next position.
// The brackets are the web process's: each concatenation here would copy the page's text again.
const PaginaRow = z.object({
  itens: z.string(),
  versoes: z.string(),
  linhas: z.number().int(),
  ultimo_ts: z.string().nullable(),
  ultimo_id: z.string().nullable(),
});

/** The page's one statement (exported for the benchmark's EXPLAIN). */
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
  const limite = filtros.limite;
  // Joined in the list's order, which the rows already come in (PostgreSQL 16 and later skip the sort).
  return sql.type(PaginaRow)`
    SELECT coalesce(string_agg(documento, ',' ORDER BY chave, id) FILTER (WHERE n <= ${limite}), '') AS itens,
           coalesce(string_agg(id::text || '.' || row_version, ',' ORDER BY chave, id) FILTER (WHERE n <= ${limite}), '') AS versoes,
           count(*)::int AS linhas,
           min(cursor_ts) FILTER (WHERE n = ${limite}) AS ultimo_ts,
           min(id::text) FILTER (WHERE n = ${limite}) AS ultimo_id
      FROM (SELECT p.id, p.documento, p.row_version, ${sql.identifier(['p', filtros.ordem ?? 'criado_em'])} AS chave, ${page.cursorColumn},
                   row_number() OVER (ORDER BY ${page.order}) AS n
              FROM produtos p
             WHERE ${sql.join(conditions, sql.fragment` AND `)}
             ${page.orderLimit}) pagina`;
}

export async function paginaDeProdutos(db: Db, contaId: string, filtros: FiltrosProdutos): Promise<PaginaDeProdutos> {
  const limite = filtros.limite;
  const row = await db.one(consultaDaPagina(contaId, filtros));
  const proxima = row.linhas > limite && row.ultimo_ts !== null && row.ultimo_id !== null ? { ts: row.ultimo_ts, id: row.ultimo_id } : null;
  return { itens: row.itens, versoes: row.versoes, quantidade: Math.min(row.linhas, limite), proxima };
}

export async function lerProduto(db: Db, contaId: string, id: string): Promise<ProdutoLido | null> {
  const row = await db.maybeOne(sql.type(z.object({ id: z.string(), row_version: z.number().int(), documento: z.string() }))`
    SELECT id, row_version::float8 AS row_version, documento FROM produtos WHERE conta_id = ${contaId} AND id = ${id}`);
  return row && { id: row.id, row_version: row.row_version, produto: ProdutoDocumento.parse(JSON.parse(row.documento)) };
}
