// What lets admission know a request for a repetition before it charges anything (contract §8.2:
// a 304 or an idempotent repetition costs 1 in the burst and 0 in the month, as a read). Built from
// the raw request, before validation: a probe is only sent when every part of it is well formed;
// otherwise the request is charged in full and validation answers it.
import type { IncomingHttpHeaders } from 'node:http';
import { IF_NONE_MATCH_MAX, versionsIn } from './etag.ts';
import { parseIdempotencyKey } from '../writes/idempotency.ts';
import type { Prova, RegistroPedido } from '../admission/admission-row.ts';
import type { AnyRoute } from '../routes/types.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * What an Idempotency-Key is bound to: the method and the concrete path (POST /cotacoes/<id>/status),
 * so a key used on one resource is a conflict on another, never a replay of what it did there.
 */
export function resourceOf(route: AnyRoute, params: unknown): string {
  const values = (params ?? {}) as Record<string, unknown>;
  // Ids in one case: the same record written with capitals is the same path.
  return `${route.method} ${route.path.replace(/\{(\w+)\}/g, (_m, name: string) => String(values[name]).toLowerCase())}`;
}

export function provaOf(route: AnyRoute, params: Record<string, string>, headers: IncomingHttpHeaders): Prova | null {
  if (!Object.values(params).every((v) => UUID.test(v))) return null;
  if (route.method === 'POST') {
    const raw = headers['idempotency-key'];
    const chave = route.idempotency && typeof raw === 'string' ? parseIdempotencyKey(raw) : null;
    return chave === null ? null : { chave, rota: resourceOf(route, params) };
  }
  const ifNoneMatch = headers['if-none-match'];
  if (!route.conditional || typeof ifNoneMatch !== 'string' || ifNoneMatch.length > IF_NONE_MATCH_MAX) return null;
  // A list's page is known only once read: charged as a repetition until then (conditional-list.ts).
  if ('lista' in route.conditional) return { provisoria: true };
  if (!params.id) return null;
  const versoes = versionsIn(ifNoneMatch, params.id.toLowerCase(), route.conditional.variantes ?? ['']);
  return versoes === null ? null : { tabela: route.conditional.tabela, id: params.id, versoes };
}

/** The record a GET of one record asks admission to read with it, when PostgreSQL builds its representation and the id is well formed. */
export function registroOf(route: AnyRoute, params: Record<string, string>): RegistroPedido | null {
  const conditional = route.conditional;
  if (route.method !== 'GET' || !conditional || !('tabela' in conditional) || !conditional.representado) return null;
  return params.id && UUID.test(params.id) ? { tabela: conditional.tabela, id: params.id } : null;
}
