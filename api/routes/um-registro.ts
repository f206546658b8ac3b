// What every GET of one record is (DESIGN §7): the id in the path, the price of one resource, the
// record read in the caller's account (404 otherwise), and a 200 with its strong ETag, or a bodiless
// 304 when If-None-Match names it; the record's table, so that admission can tell a 304 before it
// charges.
import { z } from 'zod';
import { naoEncontrado } from '../../shared/errors.ts';
import type { Db } from '../../shared/db/pool.ts';
import type { Caller } from '../caller.ts';
import { oneResource } from '../cost.ts';
import { conditionalHeaders, conditionalReply, etagFor } from '../etag.ts';
import { etagHeaders } from '../openapi.ts';
import type { Deps, Reply, RouteContext, RouteDef } from './types.ts';

type Conditional = NonNullable<RouteDef<undefined, undefined, undefined, undefined>['conditional']>;

export function umRegistro<S extends z.ZodType, R extends { id: string }>(lido: {
  conditional: Conditional;
  descricao: string;
  schema: S;
  exemplo: unknown;
  /** The record in the caller's account (and, where it matters, visible to the caller), or null. */
  ler: (db: Db, contaId: string, id: string, caller: Caller) => Promise<R | null>;
  /** The 404's detail. */
  ausente: string;
  versao: (registro: R) => number;
  /** Which of conditional.variantes this caller reads (a body that differs between callers). */
  variante?: (caller: Caller) => string;
  apresentar: (registro: R, caller: Caller, deps: Deps) => unknown;
}) {
  return {
    cost: oneResource,
    params: z.object({ id: z.uuid() }),
    conditional: lido.conditional,
    headers: conditionalHeaders,
    responses: {
      200: { description: lido.descricao, schema: lido.schema, headers: etagHeaders, example: lido.exemplo },
      304: { description: 'Nada mudou desde o ETag enviado; sem corpo e sem cobrança no mês.', headers: etagHeaders },
    },
    handler: async ({ caller, params, headers, db, deps }: RouteContext<{ id: string }, unknown, { 'if-none-match'?: string }, unknown>): Promise<Reply> => {
      const registro = await lido.ler(db, caller.contaId, params.id, caller);
      if (!registro) throw naoEncontrado(lido.ausente);
      const etag = etagFor(registro.id, lido.versao(registro), lido.variante?.(caller));
      return conditionalReply(headers['if-none-match'], etag, () => lido.apresentar(registro, caller, deps));
    },
  };
}
