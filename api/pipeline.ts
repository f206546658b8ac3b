// The request pipeline (DESIGN §3), the same for every route of the table:
// authentication → authorization → limits (one admission round trip) → validation → handler.
import type { Request, Response } from 'restify';
import { ApiError, fromDatabaseError } from '../shared/errors.ts';
import { admit } from './admission.ts';
import { isUnavailable } from './breaker.ts';
import { BODY_DEADLINE_MS, MAX_BODY_BYTES, readJsonBody } from './body.ts';
import { beginWrite, begunFrom, bodyHash, recordOutcome, recordRefusal, replayedRefusal, type KeyedRequest } from './idempotency.ts';
import { settlementFor, type Billing, type Charge } from './limits.ts';
import { requestState, type RequestState } from './request-state.ts';
import { writeProblem, writeReply } from './respond.ts';
import type { AnyRoute, Deps, Reply, RouteContext } from './routes/types.ts';
import { validateInput, type Parsed } from './validate.ts';

export function routeHandler(route: AnyRoute, deps: Deps) {
  return function handle(req: Request, res: Response, next: (err?: unknown) => void): void {
    const state = requestState(req);
    state.route = route.operationId;
    run(route, deps, req, res, state)
      .catch((error: unknown) => sendError(deps, res, state, error))
      .finally(() => next());
  };
}

async function run(route: AnyRoute, deps: Deps, req: Request, res: Response, state: RequestState): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://localhost');
  const cost = route.cost(url.searchParams);
  const admission = await admit(deps.admissions, req.headers.authorization, route, cost);
  state.caller = admission.caller;
  Object.assign(state.headers, admission.headers);
  if (!admission.ok) {
    if (admission.suspendedUntil && admission.caller) {
      const { contaId, chaveId } = admission.caller;
      deps.jobs.liftSuspension(contaId, chaveId, admission.suspendedUntil).catch((error: unknown) =>
        deps.log.error({ err: error, chave_id: chaveId }, 'could not schedule the end of a suspension'),
      );
    }
    throw admission.error;
  }
  state.slotKey = admission.caller.chaveId;
  state.cost = admission.charge.units;
  state.charge = admission.charge;

  const { parsed, keyed } = await inputOf(route, req, url, state);
  const ctx: RouteContext<unknown, unknown, unknown, unknown> = {
    requestId: state.requestId,
    params: parsed.params,
    query: parsed.query,
    headers: parsed.headers,
    body: parsed.body,
    caller: admission.caller,
    deps,
    db: deps.pool,
  };
  const reply = route.once ? await runOnce(route.once, ctx, keyed, state)
    : route.method === 'GET' ? await handlerOf(route)(ctx)
    : await runWrite(route, ctx, keyed, state);
  if (deps.config.VALIDATE_RESPONSES) checkReply(route, reply);
  if (reply.billing) settle(deps, state, admission.charge, reply.billing);
  writeReply(res, reply, state.headers);
}

type Input = { parsed: Parsed; keyed: KeyedRequest | null };

/** The request's body read and every part of it validated; its Idempotency-Key with the body's hash. */
async function inputOf(route: AnyRoute, req: Request, url: URL, state: RequestState): Promise<Input> {
  const body = route.body
    ? await readJsonBody(req, { maxBytes: MAX_BODY_BYTES, deadlineAt: state.startedAt + BODY_DEADLINE_MS })
    : undefined;
  const parsed = validateInput(route, {
    params: (req.params ?? {}) as Record<string, string>,
    query: url.searchParams,
    headers: req.headers,
    body,
  });
  const key = route.idempotency ? (parsed.headers as Record<string, string | undefined>)['idempotency-key'] : undefined;
  return { parsed, keyed: key ? { key, route: route.operationId, hash: bodyHash(body) } : null };
}

/**
 * A POST runs in one transaction that starts by telling the database's triggers who makes the
 * change and, with an Idempotency-Key, by claiming the key; the change and the key's record commit
 * together. A business refusal is recorded afterwards, on its own.
 */
async function runWrite(
  route: AnyRoute,
  ctx: RouteContext<unknown, unknown, unknown, unknown>,
  keyed: KeyedRequest | null,
  state: RequestState,
): Promise<Reply> {
  try {
    return await ctx.deps.pool.transaction(async (tx) => {
      const begun = await beginWrite(tx, ctx.caller, keyed);
      if (begun.kind === 'replay') {
        // A repetition costs like a read (contract §8.2), whatever the first answer was.
        state.billing = 'replay';
        if (begun.status >= 400) throw replayedRefusal(begun);
        const body = route.replay && begun.resourceId ? await route.replay({ ...ctx, db: tx }, begun.resourceId) : undefined;
        return { status: begun.status, body, headers: { 'Idempotent-Replayed': 'true' }, billing: 'replay' };
      }
      const reply = await handlerOf(route)({ ...ctx, db: tx });
      if (keyed) await recordOutcome(tx, ctx.caller, keyed, { status: reply.status, resourceId: reply.resourceId ?? null });
      return reply;
    });
  } catch (error) {
    if (keyed && state.billing !== 'replay') await recordRefusal(ctx.deps.pool, ctx.caller, keyed, error);
    throw error;
  }
}

/**
 * A POST whose change, Idempotency-Key claim and record are one SQL statement (RouteDef.once), sent
 * with the others waiting for it: the statement has already kept a business refusal, so what it
 * answered is only turned into a reply.
 */
async function runOnce(
  once: NonNullable<AnyRoute['once']>,
  ctx: RouteContext<unknown, unknown, unknown, unknown>,
  keyed: KeyedRequest | null,
  state: RequestState,
): Promise<Reply> {
  const written = await ctx.deps.writes.write(once.write, once.args(ctx, keyed));
  const { claim, reply } = once.result(written);
  const begun = begunFrom(claim);
  if (begun.kind === 'new') return reply();
  state.billing = 'replay';
  if (begun.status >= 400) throw replayedRefusal(begun);
  const replayed = reply();
  return { ...replayed, status: begun.status, headers: { ...replayed.headers, 'Idempotent-Replayed': 'true' }, billing: 'replay' };
}

function handlerOf(route: AnyRoute): NonNullable<AnyRoute['handler']> {
  if (!route.handler) throw new Error(`${route.operationId} has no handler`);
  return route.handler;
}

function settle(deps: Deps, state: RequestState, charge: Charge, billing: Billing): void {
  const settlement = settlementFor(charge, billing);
  if (!settlement) return;
  state.cost = charge.units - settlement.month;
  deps.limits.settle(settlement);
}

/** Turns anything thrown into a problem response; unknown errors are logged and become a bare 500. */
export function sendError(deps: Deps, res: Response, state: RequestState, error: unknown): void {
  let apiError = fromDatabaseError(error);
  if (!apiError && isUnavailable(error)) {
    deps.log.warn({ err: error, requisicao_id: state.requestId }, 'database unavailable');
    apiError = new ApiError(503, 'indisponivel', 'O banco de dados está indisponível; tente de novo em instantes.', { retryAfter: 2 });
  }
  if (!apiError) {
    deps.log.error({ err: error, requisicao_id: state.requestId }, 'unhandled error');
    apiError = new ApiError(500, 'erro_interno', `Erro interno. Informe o requisicao_id ${state.requestId} ao suporte.`);
  }
  state.codigo = apiError.codigo;
  // A replayed refusal costs like a repetition, not like the first call.
  if (state.billing && state.charge) settle(deps, state, state.charge, state.billing);
  if (res.headersSent) {
    res.destroy();
    return;
  }
  writeProblem(res, apiError, state.requestId, deps.config.baseUrl, state.headers);
}

function checkReply(route: AnyRoute, reply: Reply): void {
  const spec = route.responses[reply.status];
  if (!spec) throw new Error(`${route.operationId} answered ${reply.status}, which its route does not declare`);
  if (!spec.schema) return;
  const result = spec.schema.safeParse(reply.body);
  if (!result.success) {
    throw new Error(`${route.operationId} ${reply.status} body does not match its schema: ${result.error.message}`);
  }
}
