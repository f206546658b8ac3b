// The request pipeline (DESIGN §3), the same for every route of the table:
// authentication → authorization → limits (one admission round trip) → validation → handler.
import type { Request, Response } from 'restify';
import { ApiError, fromDatabaseError } from '../shared/errors.ts';
import { admit } from './admission.ts';
import { isUnavailable } from './breaker.ts';
import { BODY_DEADLINE_MS, MAX_BODY_BYTES, readJsonBody } from './body.ts';
import { settlementFor, type Charge } from './limits.ts';
import { requestState, type RequestState } from './request-state.ts';
import { writeProblem, writeReply } from './respond.ts';
import type { AnyRoute, Deps, Reply } from './routes/types.ts';
import { validateInput } from './validate.ts';

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
  const admission = await admit(deps, req.headers.authorization, route, cost);
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
  state.slotId = admission.slotId;
  state.cost = admission.charge.units;

  const body = route.body
    ? await readJsonBody(req, { maxBytes: MAX_BODY_BYTES, deadlineAt: state.startedAt + BODY_DEADLINE_MS })
    : undefined;
  const input = validateInput(route, {
    params: (req.params ?? {}) as Record<string, string>,
    query: url.searchParams,
    headers: req.headers,
    body,
  });
  const reply = await route.handler({
    requestId: state.requestId,
    params: input.params,
    query: input.query,
    headers: input.headers,
    body: input.body,
    caller: admission.caller,
    deps,
  });
  if (deps.config.VALIDATE_RESPONSES) checkReply(route, reply);
  if (reply.billing) settle(deps, state, admission.charge, reply);
  writeReply(res, reply, state.headers);
}

function settle(deps: Deps, state: RequestState, charge: Charge, reply: Reply): void {
  const settlement = reply.billing ? settlementFor(charge, reply.billing) : null;
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
