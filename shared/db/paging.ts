// Keyset paging for every list: a page starts after a position (sort value and id), so no row is
// skipped or repeated at a page boundary under concurrent inserts and updates. What a position
// looks like to a client (an opaque cursor) is the API's business (api/routes/lists.ts).
import { sql } from './pool.ts';

/** The column a list is ordered by; ties are broken by id. */
export type SortColumn = 'criado_em' | 'atualizado_em';

/** Where a page starts: the sort value exactly as PostgreSQL printed it (microseconds and offset), and the id. */
export type Posicao = { ts: string; id: string };

export type Pagina = { limite: number; cursor?: Posicao; atualizado_desde?: string };

/** Oldest first (every list) or newest first (the event log). */
export type Direction = 'asc' | 'desc';

/**
 * The WHERE and ORDER BY/LIMIT of one page, for a table aliased as `alias`. Fetches one row more
 * than limite to know whether a next page exists.
 */
export function pageClauses(alias: string, sort: SortColumn, page: Pagina, direction: Direction = 'asc') {
  const column = sql.identifier([alias, sort]);
  const id = sql.identifier([alias, 'id']);
  const after = direction === 'asc' ? sql.fragment`>` : sql.fragment`<`;
  const order = direction === 'asc' ? sql.fragment`ASC` : sql.fragment`DESC`;
  const conditions = [
    page.cursor ? sql.fragment`(${column}, ${id}) ${after} (${page.cursor.ts}::timestamptz, ${page.cursor.id}::uuid)` : sql.fragment`true`,
    page.atualizado_desde
      ? sql.fragment`${sql.identifier([alias, 'atualizado_em'])} >= ${page.atualizado_desde}::timestamptz`
      : sql.fragment`true`,
  ];
  const sortKey = sql.fragment`${column} ${order}, ${id} ${order}`;
  return {
    where: sql.join(conditions, sql.fragment` AND `),
    cursorColumn: sql.fragment`${column}::text AS cursor_ts`,
    orderLimit: sql.fragment`ORDER BY ${sortKey} LIMIT ${page.limite + 1}`,
  };
}

/** The rows of the page (the extra one cut off) and the position after its last row when more follow. */
export function cutPage<R extends { id: string; cursor_ts: string }>(rows: readonly R[], limite: number): { rows: R[]; next: Posicao | null } {
  const page = rows.slice(0, limite);
  const last = page.at(-1);
  return { rows: page, next: rows.length > limite && last ? { ts: last.cursor_ts, id: last.id } : null };
}
