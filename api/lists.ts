// Lists (DESIGN §8) at the HTTP edge: the envelope { dados, proximo_cursor }, the common query
// parameters (limite 1-100, default 25; cursor; atualizado_desde) and the cost of §8.2. The SQL
// side of paging is shared/db/paging.ts.
import { z } from 'zod';
import type { Cost } from './routes/types.ts';

export const LIMITE_PADRAO = 25;
export const LIMITE_MAXIMO = 100;

/** Query parameters every list takes; a route adds its filters with .extend(). */
export const listQuery = z
  .object({
    limite: z.coerce.number().int().min(1).max(LIMITE_MAXIMO).default(LIMITE_PADRAO)
      .describe(`Page size, 1 to ${LIMITE_MAXIMO}. Above 25 the call costs 3 units.`),
    cursor: z.string().min(1).max(512).optional().describe('proximo_cursor of the previous page.'),
    atualizado_desde: z.iso.datetime({ offset: true }).optional()
      .describe('Only records changed at or after this instant.'),
  })
  .strict();

export const envelope = <T extends z.ZodType>(item: T) =>
  z.object({
    dados: z.array(item),
    proximo_cursor: z.string().nullable().describe('Pass as cursor for the next page; null on the last page.'),
  });

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

export { toPage } from '../shared/db/paging.ts';
