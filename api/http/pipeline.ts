// The request pipeline (docs/design.md, "The paths of a request"), the same for every route of the
// table: authentication → authorization → limits (one admission round trip) → validation → handler.
// A route priced by its body reads it before admission; a conditional list whose page changed pays
// the rest of its price after the handler (conditional-list.ts).
import type { Request, Response } from 'restify';
import { ApiError, fromDatabaseError } from '#shared/errors.ts';
import { admit } from '../admission/admission.ts';
import { isUnavailable } from '../admission/breaker.ts';
import { BODY_DEADLINE_MS, MAX_BODY_BYTES, readJsonBody } from './body.ts';
import { beginWrite, begunFrom, bodyHash, recordOutcome, recordRefusal, replayedRefusal, type Begun, type KeyedRequest } from '../writes/idempotency.ts';
import type { Db, Tx } from '#shared/db/pool.ts';
import type { Caller } from '../admission/caller.ts';
import { settlementFor, type Billing, type Charge } from '../admission/limits.ts';
import { jsonBytes } from './compression.ts';
import { conditionalPage, isConditionalList } from './conditional-list.ts';
import { provaOf, registroOf, resourceOf } from './repetition.ts';
import { requestState, type RequestState } from './request-state.ts';
import { endAdmission, inRequestContext, markPhase, nameRequestSpan, startAdmission } from './tracing.ts';
import { writeProblem, writeReply } from './respond.ts';
import type { AnyRoute, Deps, Reply, RouteContext } from '../routes/types.ts';
import { validateInput, type Parsed } from './validate.ts';

export function routeHandler(route: AnyRoute, deps: Deps) {
  return function handle(req: Request, res: Response, next: (err?: unknown) => void): void {
    const state = requestState(req);
    state.route = route.operationId;
    state.routePath = route.path;
    nameRequestSpan(state, req.method);
    // Traced, the pipeline runs in the request span's context: its SQL and batches hang from it.
    const running = state.span ? inRequestContext(state.span, () => run(route, deps, req, res, state)) : run(route, deps, req, res, state);
    running
      .catch((error: unknown) => sendError(deps, res, state, error))
      .finally(() => next());
  };
}

async function run(route: AnyRoute, deps: Deps, req: Request, res: Response, state: RequestState): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://localhost');
  // A route priced by what its body carries reads the body first; what went wrong reading it is
  // answered after admission, like on any route.
  const early = route.costOfBody ? await settledBody(req, state) : undefined;
  const cost = route.costOfBody && early && 'body' in early ? route.costOfBody(early.body) : route.cost(url.searchParams);
  const rawParams = (req.params ?? {}) as Record<string, string>;
  const admitting = startAdmission(state);
  const admission = await admit(deps.admissions, req.headers.authorization, route, cost, provaOf(route, rawParams, req.headers),
    registroOf(route, rawParams));
  endAdmission(admitting);
  state.caller = admission.caller;
  Object.assign(state.headers, admission.headers);
  if (!admission.ok) {
    state.refusedBy = admission.reason;
    if (admission.suspendedUntil && admission.caller) {
      const { contaId, chaveId } = admission.caller;
      deps.jobs.liftSuspension(contaId, chaveId, admission.suspendedUntil).catch((error: unknown) =>
        deps.log.error({ err: error, chave_id: chaveId }, 'could not schedule the end of a suspension'),
      );
    }
    throw admission.error;
  }
  state.slotKey = admission.caller.chaveId;
  state.cost = admission.charge.month;
  state.charge = admission.charge;
  markPhase(state, 'validation');
  const { parsed, keyed } = await inputOf(route, req, url, state, early);
  markPhase(state, 'handler');
  const ctx: RouteContext<unknown, unknown, unknown, unknown> = {
    requestId: state.requestId,
    params: parsed.params,
    query: parsed.query,
    headers: parsed.headers,
    body: parsed.body,
    caller: admission.caller,
    deps,
    repeticao: admission.charge.repeticao,
    ...(admission.registro !== undefined ? { registro: admission.registro } : {}),
    db: deps.pool,
  };
  const answered = route.once ? await runOnce(route.once, ctx, keyed, state)
    : route.method === 'GET' ? await handlerOf(route)(ctx)
    : await runWrite(route, ctx, keyed, state);
  const reply = isConditionalList(route) ? await conditionalPage(deps, req, route, cost, state, answered) : answered;
  if (deps.config.VALIDATE_RESPONSES) checkReply(route, reply);
  if (reply.billing) settle(deps, state, state.charge, reply.billing);
  markPhase(state, 'response');
  await writeReply(res, reply, state.headers, req.headers['accept-encoding']);
}

type Input = { parsed: Parsed; keyed: KeyedRequest | null };
/** A body read ahead of admission: what arrived, or why it could not be read. */
type EarlyBody = { body: unknown } | { error: unknown };

const bodyOf = (req: Request, state: RequestState) =>
  readJsonBody(req, { maxBytes: MAX_BODY_BYTES, deadlineAt: state.startedAt + BODY_DEADLINE_MS });

function settledBody(req: Request, state: RequestState): Promise<EarlyBody> {
  return bodyOf(req, state).then((body) => ({ body }), (error: unknown) => ({ error }));
}

/** The request's body read and every part of it validated; its Idempotency-Key with the body's hash. */
async function inputOf(route: AnyRoute, req: Request, url: URL, state: RequestState, early?: EarlyBody): Promise<Input> {
  let body: unknown;
  if (early && 'error' in early) throw early.error;
  else if (early) body = early.body;
  else if (route.body) body = await bodyOf(req, state);
  const parsed = validateInput(route, {
    params: (req.params ?? {}) as Record<string, string>,
    query: url.searchParams,
    headers: req.headers,
    body,
  });
  const key = route.idempotency ? (parsed.headers as Record<string, string | undefined>)['idempotency-key'] : undefined;
  return { parsed, keyed: key ? { key, route: resourceOf(route, parsed.params), hash: bodyHash(body) } : null };
}

/**
 * A POST runs in one transaction that starts by telling the database's triggers who makes the
 * change and, with an Idempotency-Key, by claiming the key; the change and the key's record commit
 * together. The change runs under a savepoint, so that a business refusal (a 4xx, raised here or by
 * the database) is rolled back alone and recorded with the key in the same transaction.
 *
 * A refusal is an answer, not a fault: it leaves the transaction's callback as a value, because
 * slonik destroys the connection of a callback that throws, and a new backend for every 422 would
 * cost PostgreSQL far more than the refusal. Only an unexpected error (a 5xx) throws.
 */
async function runWrite(
  route: AnyRoute,
  ctx: RouteContext<unknown, unknown, unknown, unknown>,
  keyed: KeyedRequest | null,
  state: RequestState,
): Promise<Reply> {
  const ended = await ctx.deps.pool.transaction(async (tx): Promise<Ended> => {
    const begun = await claimKey(tx, ctx.caller, keyed);
    if ('refusal' in begun) return begun;
    if (begun.kind === 'replay') {
      // A repetition costs like a read (contract §8.2), whatever the first answer was.
      state.billing = 'replay';
      if (begun.status >= 400) return { refusal: replayedRefusal(begun) };
      const body = route.replay && begun.resourceId ? await route.replay({ ...ctx, db: tx }, begun.resourceId) : undefined;
      return { reply: { status: begun.status, body, headers: { 'Idempotent-Replayed': 'true' }, billing: 'replay' } };
    }
    const outcome = await change(route, { ...ctx, db: tx });
    if (keyed && 'reply' in outcome) {
      await recordOutcome(tx, ctx.caller, keyed, { status: outcome.reply.status, resourceId: outcome.reply.resourceId ?? null });
    } else if (keyed && 'refusal' in outcome) {
      await recordRefusal(tx, ctx.caller, keyed, outcome.refusal);
    }
    return outcome;
  });
  if ('refusal' in ended) throw ended.refusal;
  return ended.reply;
}

type Ended = { reply: Reply } | { refusal: ApiError };

/**
 * The key's claim; its own 409 (running elsewhere) or 422 (another body) are raised by the claim's
 * answer, not by a statement, so the transaction stays whole. Anything else is a fault.
 */
async function claimKey(tx: Db, caller: Caller, keyed: KeyedRequest | null): Promise<Begun | { refusal: ApiError }> {
  try {
    return await beginWrite(tx, caller, keyed);
  } catch (error) {
    if (error instanceof ApiError && error.status < 500) return { refusal: error };
    throw error;
  }
}

/** The route's change under a savepoint: a business refusal rolls back to it and is answered as a value. */
async function change(route: AnyRoute, ctx: RouteContext<unknown, unknown, unknown, unknown> & { db: Tx }): Promise<Ended> {
  try {
    return { reply: await ctx.db.transaction((savepoint) => handlerOf(route)({ ...ctx, db: savepoint })) };
  } catch (error) {
    const refusal = fromDatabaseError(error);
    if (!refusal || refusal.status >= 500) throw error;
    return { refusal };
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
  state.cost = charge.month - settlement.month;
  deps.limits.settle(settlement);
}

/** Turns anything thrown into a problem response; unknown errors are logged and become a bare 500. */
export function sendError(deps: Deps, res: Response, state: RequestState, error: unknown): void {
  let apiError = fromDatabaseError(error);
  if (!apiError && isUnavailable(error)) {
    deps.log.warn({ err: error, requisicao_id: state.requestId, route: state.route }, 'database unavailable');
    apiError = new ApiError(503, 'indisponivel', 'O banco de dados está indisponível; tente de novo em instantes.', { retryAfter: 2 });
  }
  if (!apiError) {
    deps.log.error({ err: error, requisicao_id: state.requestId, route: state.route }, 'unhandled error');
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
  // A body PostgreSQL serialized is read back only here (tests), never on the way out.
  const result = spec.schema.safeParse(reply.json === undefined ? reply.body : JSON.parse(jsonBytes(reply.json).toString()));
  if (!result.success) {
    throw new Error(`${route.operationId} ${reply.status} body does not match its schema: ${result.error.message}`);
  }
}
