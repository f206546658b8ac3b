// Lists (docs/decisions/0024-representations-lists-and-filters.md) at the HTTP edge: the
// envelope { dados, proximo_cursor }, the common query parameters (limite 1-100, default 25; cursor;
// atualizado_desde), the cost of contract §8.2, and the cursor. The SQL side of paging is
// shared/db/paging.ts.
//
// A cursor is opaque to clients: base64url of [sort value, id, binding]. It is checked whole when it
// comes back (a timestamp PostgreSQL can read, a UUID) and it is bound: valid only for the list,
// ordem and filters that made it (a short hash of them), so a cursor of another list or query is a
// 400 rather than a page of something else.
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { cutPage, type Posicao } from '#shared/db/paging.ts';
import type { Cost } from '../admission/cost.ts';
import { conditionalHeaders } from '../http/etag.ts';
import { Instante } from './fields.ts';
import { etagHeaders } from '../reference/openapi.ts';

export const LIMITE_PADRAO = 25;
export const LIMITE_MAXIMO = 100;

const paging = {
  limite: z.coerce.number().int().min(1).max(LIMITE_MAXIMO).default(LIMITE_PADRAO)
    .describe(`Tamanho da página, de 1 a ${LIMITE_MAXIMO}. Acima de 25, a chamada custa 3 unidades.`),
  cursor: z.string().min(1).max(512).optional()
    .describe('O proximo_cursor da página anterior, com a mesma ordem e os mesmos filtros.'),
};
const atualizadoDesde = {
  atualizado_desde: Instante.optional().describe('Só os registros alterados a partir deste instante, inclusive.'),
};

const CURSOR_INVALIDO = 'cursor inválido: use o proximo_cursor desta lista, com a mesma ordem e os mesmos filtros';

/**
 * The query of the list `lista`: paging parameters, atualizado_desde and the list's filters. The
 * parsed value carries the cursor decoded into the position it stands for, and the binding the next
 * cursor gets.
 */
export function listQuery<S extends z.ZodRawShape = Record<never, never>>(lista: string, filters?: S) {
  return boundQuery(lista, { ...atualizadoDesde, ...(filters ?? ({} as S)) });
}

/**
 * The query of a list whose records never change once listed (the event log, delivery attempts):
 * paging and the list's filters, without atualizado_desde.
 */
export function unchangingListQuery<S extends z.ZodRawShape = Record<never, never>>(lista: string, filters?: S) {
  return boundQuery(lista, filters ?? ({} as S));
}

/** The query of a fixed list (fixedPage): paging only, as its records never change. */
export const fixedListQuery = (lista: string) => unchangingListQuery(lista);

function boundQuery<S extends z.ZodRawShape>(lista: string, filters: S) {
  return z.object({ ...paging, ...filters }).strict().transform((query, ctx) => {
    const { cursor, limite: _limite, ...criteria } = query as { cursor?: string; limite: number } & Record<string, unknown>;
    const vinculo = bindingOf(lista, criteria);
    const posicao = cursor === undefined ? undefined : decodeCursor(cursor, vinculo);
    if (posicao === null) {
      ctx.addIssue({ code: 'custom', path: ['cursor'], message: CURSOR_INVALIDO });
      return z.NEVER;
    }
    return { ...query, cursor: posicao, vinculo };
  });
}

function bindingOf(lista: string, criteria: Record<string, unknown>): string {
  const defined = Object.entries(criteria).filter(([, v]) => v !== undefined).sort(([a], [b]) => a.localeCompare(b));
  return createHash('sha256').update(JSON.stringify([lista, defined])).digest('base64url').slice(0, 12);
}

// The sort value exactly as PostgreSQL prints a timestamptz: 2026-11-23 00:45:01.123456+00.
const TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})(\.\d{1,6})?[+-](\d{2})(:\d{2})?$/;
const CursorShape = z.tuple([z.string().regex(TIMESTAMP), z.uuid(), z.string()]);

function validTimestamp(ts: string): boolean {
  const [, y, mo, d, h, mi, s, , oh] = TIMESTAMP.exec(ts)?.map(Number) ?? [];
  if (y === undefined || mo === undefined || d === undefined || h === undefined || mi === undefined || s === undefined || oh === undefined) return false;
  const daysInMonth = new Date(Date.UTC(2000 + (y % 400), mo, 0)).getUTCDate();
  return y >= 1 && mo >= 1 && mo <= 12 && d >= 1 && d <= daysInMonth && h <= 23 && mi <= 59 && s <= 59 && oh <= 15;
}

function encodeCursor(posicao: Posicao, vinculo: string): string {
  return Buffer.from(JSON.stringify([posicao.ts, posicao.id, vinculo])).toString('base64url');
}

/** The position a cursor stands for, or null when it is not one this list and query made. */
function decodeCursor(value: string, vinculo: string): Posicao | null {
  try {
    const [ts, id, bound] = CursorShape.parse(JSON.parse(Buffer.from(value, 'base64url').toString('utf8')));
    return bound === vinculo && validTimestamp(ts) ? { ts, id } : null;
  } catch {
    return null;
  }
}

export const envelope = <T extends z.ZodType>(item: T) =>
  z.object({
    dados: z.array(item),
    proximo_cursor: z.string().nullable().describe('Envie-o como cursor para pedir a próxima página; null na última.'),
  });

// A list held in memory (the event type catalog) pages like a table: item i stands at a fixed
// instant with the i-th of a run of UUIDs, so its cursors are made, bound and checked like any other.
const FIXED_TS = '2000-01-01 00:00:00+00';
const fixedId = (i: number) => `00000000-0000-4000-8000-${i.toString(16).padStart(12, '0')}`;

/** A page of a fixed list, with the same envelope and cursor rules as the lists of the database. */
export function fixedPage<I, T>(items: readonly I[], query: { limite: number; cursor?: Posicao; vinculo: string }, present: (item: I) => T) {
  const after = query.cursor?.id ?? '';
  const rows = items.map((item, i) => ({ item, id: fixedId(i), cursor_ts: FIXED_TS })).filter((row) => row.id > after);
  return toPage(rows.slice(0, query.limite + 1), query, (row) => present(row.item));
}

/** Cuts the extra row off and builds the envelope with the next page's cursor. */
export function toPage<R extends { id: string; cursor_ts: string }, T>(
  rows: readonly R[],
  query: { limite: number; vinculo: string },
  present: (row: R) => T,
) {
  const page = cutPage(rows, query.limite);
  return { dados: page.rows.map(present), proximo_cursor: page.next ? encodeCursor(page.next, query.vinculo) : null };
}

const COMMA = Buffer.from(',');

/**
 * A page whose items PostgreSQL serialized (one JSON text each), in the same envelope and with the
 * same cursor as toPage's, as the pieces the response writes one after another: the items are sent
 * as they are, never parsed, serialized or joined again.
 */
export function jsonPage(itens: readonly (string | Buffer)[], next: Posicao | null, query: { vinculo: string }): (string | Buffer)[] {
  const pieces: (string | Buffer)[] = ['{"dados":['];
  for (const [i, item] of itens.entries()) {
    if (i > 0) pieces.push(COMMA);
    pieces.push(item);
  }
  pieces.push(`]${pageTail(next, query)}`);
  return pieces;
}

/** What follows a page's items in its envelope: its cursor. */
export function pageTail(next: Posicao | null, query: { vinculo: string }): string {
  return `,"proximo_cursor":${next ? JSON.stringify(encodeCursor(next, query.vinculo)) : 'null'}}`;
}

const PAGING_PARAMS = new Set(['limite', 'cursor', 'ordem']);

/**
 * Contract §8.2: 1 unit up to limite 25, 3 (expensive) for limite 26-100 or two or more filters.
 * Decided from the raw query, before validation, as admission needs it.
 */
export function listCost(raw: URLSearchParams): Cost {
  const limite = Number(raw.get('limite') ?? LIMITE_PADRAO);
  const filters = new Set([...raw.keys()].filter((k) => !PAGING_PARAMS.has(k))).size;
  return limite > LIMITE_PADRAO || filters >= 2 ? { units: 3, classe: 'expensive' } : { units: 1, classe: 'read' };
}

/**
 * What every list declares: its page carries an ETag, and an If-None-Match that names it is a 304
 * at the price of contract §8.2 (1 in the burst, 0 in the month): a poller that finds nothing new pays
 * nothing against its month (api/http/conditional-list.ts).
 */
export const conditionalList = { conditional: { lista: true }, headers: conditionalHeaders } as const;

export function listResponses<S extends z.ZodType>(description: string, schema: S, example: unknown) {
  return {
    200: { description, schema, headers: etagHeaders, example },
    304: { description: 'A página não mudou desde o ETag enviado: sem corpo, 1 na rajada e nada no mês.', headers: etagHeaders },
  };
}
