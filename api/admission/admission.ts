// Admission: authenticates the key, authorizes the route, takes a concurrency slot and charges
// every limit for the request's cost, in one round trip to PostgreSQL shared with the other
// requests waiting at that moment (admission-queue.ts); the answer carries everything the response
// headers need.
import { hashToken, tokenDoCabecalho } from '#shared/domain/chaves.ts';
import { ApiError, escopoInsuficiente, indisponivel, naoAutenticado } from '#shared/errors.ts';
import { chargeOf, type AdmissionQueue, type AdmissionRequest } from './admission-queue.ts';
import type { AdmissionRow } from './admission-row.ts';
import { minuteClass, rateLimitHeaders, type Charge } from './limits.ts';
import type { Caller } from './caller.ts';
import type { Cost } from './cost.ts';
import type { Prova, Registro, RegistroPedido } from './admission-row.ts';
import type { AnyRoute } from '../routes/types.ts';


export type Admitted = {
  ok: true; caller: Caller; charge: Charge; headers: Record<string, string>;
  /** The record the request asked admission to read; undefined when it asked for none. */
  registro?: Registro;
};
export type Refused = {
  ok: false;
  error: ApiError;
  /** The caller when the key was valid (for the request log). */
  caller: Caller | null;
  headers: Record<string, string>;
  /** Set when this refusal suspended the key. */
  suspendedUntil: Date | null;
  /** The rule that refused: the limit (rajada, minuto, mes, simultaneas) or the access (escopo, chave_suspensa…). */
  reason: string;
};

export async function admit(
  queue: AdmissionQueue,
  authorization: string | undefined,
  route: AnyRoute,
  cost: Cost,
  prova: Prova | null = null,
  registro: RegistroPedido | null = null,
): Promise<Admitted | Refused> {
  const token = tokenDoCabecalho(authorization);
  if (!token) return refused(naoAutenticado(), null, {}, 'nao_autenticado');
  const request: AdmissionRequest = {
    tokenHash: hashToken(token),
    escopo: route.scope,
    permissao: route.permission,
    custo: cost.units,
    custoMes: cost.mes ?? null,
    classe: minuteClass(cost),
    prova,
    registro,
  };
  return decided(request, await queue.admit(request), route);
}

/**
 * The rest of the price of a list GET admitted as a repetition whose page changed (contract §8.2: the
 * repetition's burst token and read are already taken): the list's other units of the burst and
 * the minute, and its month, under every ceiling; refused, it is a 429 like any request.
 */
export async function topUp(queue: AdmissionQueue, authorization: string | undefined, route: AnyRoute, cost: Cost): Promise<Admitted | Refused> {
  const token = tokenDoCabecalho(authorization);
  if (!token) return refused(naoAutenticado(), null, {}, 'nao_autenticado');
  const request: AdmissionRequest = {
    tokenHash: hashToken(token), escopo: route.scope, permissao: route.permission,
    custo: Math.max(0, cost.units - 1), custoMes: cost.mes ?? cost.units, classe: minuteClass(cost),
  };
  // What the request was charged in all: the list's whole price.
  const whole: AdmissionRequest = { ...request, custo: cost.units, custoMes: cost.mes ?? null };
  return decided(whole, await queue.topUp(request), route);
}

function decided(request: AdmissionRequest, row: AdmissionRow, route: AnyRoute): Admitted | Refused {
  if (row.outcome === 'nao_autenticado') return refused(naoAutenticado(), null, {}, 'nao_autenticado');
  const caller = toCaller(row);
  const headers = row.rajada_q === null ? {} : rateLimitHeaders(limitState(row));
  if (row.outcome !== 'ok') {
    const error = refusal(row, route);
    const suspendedUntil = row.outcome === 'limite_excedido' && row.suspended_until ? new Date(row.suspended_until) : null;
    return refused(error, caller, headers, row.reason ?? row.outcome, suspendedUntil);
  }
  return { ok: true, caller, headers, charge: chargeOf(request, row), ...(row.registro !== undefined ? { registro: row.registro } : {}) };
}

function refused(error: ApiError, caller: Caller | null, headers: Record<string, string>, reason: string, suspendedUntil: Date | null = null): Refused {
  return { ok: false, error, caller, headers, suspendedUntil, reason };
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
    case 'criador_desativado':
      return escopoInsuficiente('Quem criou a chave foi desativado no aplicativo: a chave não tem nenhuma permissão.');
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
