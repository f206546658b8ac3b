// Keyset paging for every list: opaque cursors that keep their place under concurrent inserts and
// updates (no row skipped or repeated at a page boundary).
import { z } from 'zod';
import { dadosInvalidos } from '../errors.ts';
import { sql } from './pool.ts';

/** The column a list is ordered by; ties are broken by id. */
export type SortColumn = 'criado_em' | 'atualizado_em';

type Cursor = { ts: string; id: string };

// The sort value exactly as PostgreSQL prints a timestamptz: 2026-11-23 00:45:01.123456+00.
const CursorShape = z.tuple([z.string().regex(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d{1,6})?[+-]\d{2}(:\d{2})?$/), z.uuid()]);

function encodeCursor(cursor: Cursor): string {
  return Buffer.from(JSON.stringify([cursor.ts, cursor.id])).toString('base64url');
}

export function decodeCursor(value: string | undefined): Cursor | null {
  if (value === undefined) return null;
  try {
    const [ts, id] = CursorShape.parse(JSON.parse(Buffer.from(value, 'base64url').toString('utf8')));
    return { ts, id };
  } catch {
    throw dadosInvalidos('O cursor é inválido.', [{ campo: 'cursor', mensagem: 'cursor inválido' }]);
  }
}

/**
 * The WHERE and ORDER BY/LIMIT of one page, for a table aliased as `alias`. The cursor holds the
 * sort value as PostgreSQL printed it (microseconds and offset), so no row is skipped or repeated
 * at a page boundary. Fetches one row more than limite to know whether a next page exists.
 */
export function pageClauses(alias: string, sort: SortColumn, query: { limite: number; cursor?: string; atualizado_desde?: string }) {
  const column = sql.identifier([alias, sort]);
  const id = sql.identifier([alias, 'id']);
  const cursor = decodeCursor(query.cursor);
  const conditions = [
    cursor ? sql.fragment`(${column}, ${id}) > (${cursor.ts}::timestamptz, ${cursor.id}::uuid)` : sql.fragment`true`,
    query.atualizado_desde
      ? sql.fragment`${sql.identifier([alias, 'atualizado_em'])} >= ${query.atualizado_desde}::timestamptz`
      : sql.fragment`true`,
  ];
  return {
    where: sql.join(conditions, sql.fragment` AND `),
    cursorColumn: sql.fragment`${column}::text AS cursor_ts`,
    orderLimit: sql.fragment`ORDER BY ${column}, ${id} LIMIT ${query.limite + 1}`,
  };
}

/** Cuts the extra row off and builds the envelope with the next page's cursor. */
export function toPage<R extends { id: string; cursor_ts: string }, T>(rows: readonly R[], limite: number, present: (row: R) => T) {
  const page = rows.slice(0, limite);
  const last = page.at(-1);
  return {
    dados: page.map(present),
    proximo_cursor: rows.length > limite && last ? encodeCursor({ ts: last.cursor_ts, id: last.id }) : null,
  };
}
