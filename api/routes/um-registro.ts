// What every GET of one record is (docs/decisions/0002-head-etags-and-compression.md): the id in the
// path, the price of one resource, the record read in the caller's account (404 otherwise), and a
// 200 with its strong ETag, or a bodiless 304 when If-None-Match names it; the record's table, so
// that admission can tell a 304 before it charges. A 304 that admission already confirmed is
// answered without reading the record. A record whose representation PostgreSQL builds
// (sql/code/representacoes.sql) comes with admission's answer and is sent as it came.
import { z } from 'zod';
import { naoEncontrado } from '#shared/errors.ts';
import type { Db } from '#shared/db/pool.ts';
import { lerRepresentacao } from '#shared/db/representacoes.ts';
import type { Caller } from '../admission/caller.ts';
import { oneResource } from '../admission/cost.ts';
import { conditionalHeaders, conditionalReply, etagFor, ifNoneMatchMatches, versionsIn } from '../http/etag.ts';
import { etagHeaders } from '../reference/openapi.ts';
import type { Deps, Reply, RouteContext, RouteDef } from './types.ts';

type Conditional = NonNullable<RouteDef<undefined, undefined, undefined, undefined>['conditional']>;
type Ctx = RouteContext<{ id: string }, unknown, { 'if-none-match'?: string }, unknown>;

/** How the record is read: built by PostgreSQL, or read and presented here. */
type Leitura<R> =
  | { representado: true }
  | {
    /** The record in the caller's account (and, where it matters, visible to the caller), or null. */
    ler: (db: Db, contaId: string, id: string, caller: Caller) => Promise<R | null>;
    versao: (registro: R) => number;
    apresentar: (registro: R, caller: Caller, deps: Deps) => unknown;
  };

export function umRegistro<S extends z.ZodType, R extends { id: string }>(lido: Leitura<R> & {
  conditional: Conditional;
  descricao: string;
  schema: S;
  exemplo: unknown;
  /** The 404's detail. */
  ausente: string;
  /** Which of conditional.variantes this caller reads (a body that differs between callers). */
  variante?: (caller: Caller) => string;
  /**
   * `ler` hides records of the account from some callers (e.g. events of types their permissions
   * do not show): admission's version check does not know that, so a 304 always reads the record.
   */
  visivelPorChamador?: true;
}) {
  const read = 'representado' in lido ? representado(lido.conditional, lido.ausente) : presented(lido, lido.ausente);
  return {
    cost: oneResource,
    params: z.object({ id: z.uuid() }),
    conditional: 'representado' in lido && 'tabela' in lido.conditional ? { ...lido.conditional, representado: true as const } : lido.conditional,
    headers: conditionalHeaders,
    responses: {
      200: { description: lido.descricao, schema: lido.schema, headers: etagHeaders, example: lido.exemplo },
      304: { description: 'Nada mudou desde o ETag enviado; sem corpo e sem cobrança no mês.', headers: etagHeaders },
    },
    handler: async (ctx: Ctx): Promise<Reply> => {
      const variante = lido.variante?.(ctx.caller) ?? '';
      const confirmed = ctx.repeticao && !lido.visivelPorChamador
        ? confirmedTag(lido.conditional, ctx.headers['if-none-match'], ctx.params.id, variante) : null;
      if (confirmed) return { status: 304, headers: { ETag: confirmed }, billing: 'not_modified' };
      return read(ctx, variante);
    },
  };
}

/** A record PostgreSQL represents: from admission's answer, or read on its own. */
function representado(conditional: Conditional, ausente: string) {
  const tabela = 'tabela' in conditional ? conditional.tabela : '';
  return async ({ caller, params, headers, db, registro }: Ctx, variante: string): Promise<Reply> => {
    const lido = registro !== undefined ? registro : await lerRepresentacao(db, tabela, caller.contaId, params.id, caller.permissoes);
    if (!lido) throw naoEncontrado(ausente);
    const etag = etagFor(params.id.toLowerCase(), lido.versao, variante);
    if (ifNoneMatchMatches(headers['if-none-match'], etag)) return { status: 304, headers: { ETag: etag }, billing: 'not_modified' };
    return { status: 200, json: lido.corpo, headers: { ETag: etag } };
  };
}

/** A record read and presented here. */
function presented<R extends { id: string }>(lido: Extract<Leitura<R>, { ler: unknown }>, ausente: string) {
  return async ({ caller, params, headers, db, deps }: Ctx, variante: string): Promise<Reply> => {
    const registro = await lido.ler(db, caller.contaId, params.id, caller);
    if (!registro) throw naoEncontrado(ausente);
    const etag = etagFor(registro.id, lido.versao(registro), variante);
    return conditionalReply(headers['if-none-match'], etag, () => lido.apresentar(registro, caller, deps));
  };
}

/**
 * The tag of a 304 admission confirmed, when the request's If-None-Match tells which it is: the
 * record's current version is among those its tags name (admission checked it in the same round
 * trip that charged it), so when they name one version only, and this caller's representation of
 * it, that is the tag. `*`, or tags of several versions, are answered by reading the record.
 */
function confirmedTag(conditional: Conditional, ifNoneMatch: string | undefined, id: string, variante: string): string | null {
  if (!ifNoneMatch || !('tabela' in conditional)) return null;
  const record = id.toLowerCase();
  const named = new Set(versionsIn(ifNoneMatch, record, conditional.variantes ?? ['']));
  const mine = versionsIn(ifNoneMatch, record, [variante]);
  const [version] = named;
  if (named.size !== 1 || version === undefined || !mine?.includes(version)) return null;
  return etagFor(record, version, variante);
}
