// Admission: one round trip to PostgreSQL (the api_admit function) authenticates the key,
// authorizes the route, takes a concurrency slot and charges every limit for the request's cost,
// answering with everything the response headers need.
import { z } from 'zod';
import { hashToken, tokenDoCabecalho } from '../shared/domain/chaves.ts';
import { sql, type Pool } from '../shared/db/pool.ts';
import { ApiError, escopoInsuficiente, indisponivel, naoAutenticado } from '../shared/errors.ts';
import type { CircuitBreaker } from './breaker.ts';
import { minuteClass, rateLimitHeaders, type Charge, type LimitsBookkeeper } from './limits.ts';
import type { AnyRoute, Caller, Cost } from './routes/types.ts';

const int = z.number().int().nullable();
const AdmissionRow = z.object({
  outcome: z.enum(['ok', 'nao_autenticado', 'escopo_insuficiente', 'limite_excedido', 'indisponivel']),
  reason: z.string().nullable(),
  conta_id: z.string().nullable(),
  chave_id: z.string().nullable(),
  usuario_id: z.string().nullable(),
  plano_id: z.string().nullable(),
  permissoes: z.array(z.string()).nullable(),
  slot_held: z.boolean().nullable(),
  retry_after: int,
  suspended_until: z.string().nullable(),
  window_start: z.string().nullable(),
  mes: z.string().nullable(),
  rajada_q: int, rajada_w: int, rajada_r: int, rajada_t: int,
  minuto_q: int, minuto_r: int, minuto_t: int,
  mes_q: int, mes_r: int, mes_t: int,
});
type AdmissionRow = z.infer<typeof AdmissionRow>;
const AdmissionJson = z.object({ admission: AdmissionRow });

export type AdmissionDeps = { pool: Pool; breaker: CircuitBreaker; limits: LimitsBookkeeper };

export type Admitted = { ok: true; caller: Caller; charge: Charge; headers: Record<string, string> };
export type Refused = {
  ok: false;
  error: ApiError;
  /** The caller when the key was valid (for the request log). */
  caller: Caller | null;
  headers: Record<string, string>;
  /** Set when this refusal suspended the key. */
  suspendedUntil: Date | null;
};

export async function admit(deps: AdmissionDeps, authorization: string | undefined, route: AnyRoute, cost: Cost): Promise<Admitted | Refused> {
  const token = tokenDoCabecalho(authorization);
  if (!token) return refused(naoAutenticado(), null, {});
  const classe = minuteClass(cost);
  const hash = hashToken(token);
  const hashHex = hash.toString('hex');
  const contaHint = deps.limits.accountOfToken(hashHex);
  const releases = contaHint ? deps.limits.takeReleases(contaHint) : [];
  let row: AdmissionRow;
  try {
    row = await deps.breaker.run(() =>
      // A named prepared statement: parsed and planned once per connection, not per request. One
      // json column rather than 22: measured, it halves the client's CPU for this query.
      deps.pool.oneFirst(sql.prepared('api_admit', AdmissionJson)`
        SELECT to_json(a) AS admission
          FROM api_admit(${sql.binary(hash)}, ${route.scope}, ${route.permission}, ${cost.units},
                         ${classe}, ${deps.limits.holder}, ${sql.array(releases, 'uuid')}) a`),
    );
  } catch (error) {
    if (contaHint) deps.limits.returnReleases(contaHint, releases);
    throw error;
  }
  // The function applies the releases only once it holds the account's lock (the limits stage).
  const reachedLimits = row.outcome === 'ok' || row.outcome === 'limite_excedido';
  if (contaHint && !reachedLimits) deps.limits.returnReleases(contaHint, releases);
  if (row.outcome === 'nao_autenticado') return refused(naoAutenticado(), null, {});
  const caller = toCaller(row);
  deps.limits.rememberAccount(hashHex, caller.contaId);
  const headers = row.rajada_q === null ? {} : rateLimitHeaders(limitState(row));
  if (row.outcome !== 'ok') {
    const error = refusal(row, route);
    const suspendedUntil = row.outcome === 'limite_excedido' && row.suspended_until ? new Date(row.suspended_until) : null;
    return refused(error, caller, headers, suspendedUntil);
  }
  return {
    ok: true,
    caller,
    headers,
    charge: {
      chaveId: caller.chaveId,
      contaId: caller.contaId,
      classe,
      windowStart: row.window_start ?? '',
      mes: row.mes ?? '',
      units: Math.min(cost.units, row.rajada_q ?? cost.units),
    },
  };
}

function refused(error: ApiError, caller: Caller | null, headers: Record<string, string>, suspendedUntil: Date | null = null): Refused {
  return { ok: false, error, caller, headers, suspendedUntil };
}

function toCaller(row: AdmissionRow): Caller {
  return {
    contaId: row.conta_id ?? '',
    chaveId: row.chave_id ?? '',
    usuarioId: row.usuario_id ?? '',
    planoId: row.plano_id ?? '',
    permissoes: row.permissoes ?? [],
  };
}

const n = (v: number | null) => v ?? 0;
function limitState(row: AdmissionRow) {
  return {
    rajada: { q: n(row.rajada_q), w: n(row.rajada_w), r: n(row.rajada_r), t: n(row.rajada_t) },
    minuto: { q: n(row.minuto_q), r: n(row.minuto_r), t: n(row.minuto_t) },
    mes: { q: n(row.mes_q), r: n(row.mes_r), t: n(row.mes_t) },
  };
}

const LIMITES: Record<string, string> = {
  simultaneas: 'requisições simultâneas',
  rajada: 'rajada da chave',
  minuto: 'requisições por minuto da conta',
  mes: 'chamadas do mês da conta',
};

function refusal(row: AdmissionRow, route: AnyRoute): ApiError {
  switch (row.reason) {
    case 'conta_bloqueada':
      return escopoInsuficiente('A conta está bloqueada.');
    case 'modulo_desligado':
      return escopoInsuficiente('O módulo de API não está ativo para esta conta.');
    case 'chave_suspensa':
      return escopoInsuficiente(
        `A chave está suspensa por recusas seguidas por limite de uso, até ${row.suspended_until ?? 'breve'}.`,
      );
    case 'escopo':
      return escopoInsuficiente(`A chave não tem o escopo ${route.scope}.`);
    case 'permissao':
      return escopoInsuficiente(`Quem criou a chave não tem a permissão ${route.permission}.`);
    case 'api_desligada':
      return indisponivel('A API está desligada no momento.', n(row.retry_after));
    default:
      if (row.outcome === 'limite_excedido') {
        return new ApiError(429, 'limite_excedido', `Limite de ${LIMITES[row.reason ?? ''] ?? 'uso'} excedido; aguarde Retry-After segundos.`, {
          retryAfter: n(row.retry_after),
        });
      }
      throw new Error(`unexpected admission outcome ${row.outcome}/${row.reason}`);
  }
}
