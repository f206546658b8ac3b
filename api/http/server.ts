// The restify server: every route of the table through the one pipeline, restify's own errors as
// problem+json, and a log line plus a request log row for every request.
import restify, { type Request, type Response } from 'restify';
import { clock } from '#shared/clock.ts';
import { ApiError, indisponivel, metodoNaoPermitido, naoEncontrado } from '#shared/errors.ts';
import { answerClientErrors } from './client-error.ts';
import { registerDocs } from '../reference/docs.ts';
import { buildOpenApi } from '../reference/openapi.ts';
import { routeHandler, sendError } from './pipeline.ts';
import type { RequestLog } from './request-log.ts';
import { requestState, startRequest } from './request-state.ts';
import { finishRequestTelemetry, startRequestSpan } from './tracing.ts';
import { routes } from '../routes/index.ts';
import type { AnyRoute, Deps } from '../routes/types.ts';

export type ApiServer = {
  server: restify.Server;
  /** Requests being served right now (graceful shutdown waits for zero). */
  inFlight(): number;
};

/** /pedidos-producao/{id} → /v1/pedidos-producao/:id */
export const restifyPath = (path: string) => `/v1${path.replace(/\{(\w+)\}/g, ':$1')}`;

export function createApiServer(deps: Deps, requestLog: RequestLog, table: readonly AnyRoute[] = routes): ApiServer {
  const server = restify.createServer({ name: 'printfarm-api', handleUncaughtExceptions: false });
  let inFlight = 0;

  server.pre((req: Request, res: Response, next: restify.Next) => {
    const state = startRequest(req, clock.now());
    state.span = startRequestSpan(req);
    inFlight++;
    res.once('close', () => {
      inFlight--;
      if (state.slotKey && state.caller) deps.limits.release(state.caller.contaId, state.slotKey);
      finishRequest(deps, requestLog, req, res);
    });
    // The process's global ceiling: beyond it, answer at once rather than queue
    // (docs/decisions/0001-problem-details-for-every-error.md).
    if (inFlight > deps.config.MAX_IN_FLIGHT) {
      state.route = 'sobrecarga';
      sendError(deps, res, state, indisponivel('O serviço está sobrecarregado; tente de novo em instantes.', 1));
      return next(false);
    }
    next();
  });

  for (const route of table) {
    if (!route.handler === !route.once || (route.once && route.method !== 'POST')) {
      throw new Error(`${route.operationId}: a route has a handler, or (a POST) a one-statement write`);
    }
    const options = { path: restifyPath(route.path), name: route.operationId };
    if (route.method === 'GET') {
      server.get(options, routeHandler(route, deps));
      // HEAD wherever GET is served (RFC 9110 §9.3.2): the same pipeline, price and headers;
      // Node sends no body for a HEAD.
      server.head({ ...options, name: `${route.operationId}Head` }, routeHandler(route, deps));
    } else {
      server.post(options, routeHandler(route, deps));
    }
  }

  const openapi = JSON.stringify(buildOpenApi(table, deps.config.baseUrl));
  server.get({ path: '/v1/openapi.json', name: 'openapi' }, (req: Request, res: Response, next: restify.Next) => {
    requestState(req).route = 'openapi';
    res.sendRaw(200, openapi, { 'Content-Type': 'application/json; charset=utf-8' });
    next();
  });

  registerDocs(server);
  answerClientErrors(server.server, deps.log, deps.config.baseUrl);

  // Unknown routes, wrong methods and anything restify itself refuses.
  server.on('restifyError', (req: Request, res: Response, err: Error & { statusCode?: number }, callback: () => void) => {
    const state = requestState(req);
    if (res.headersSent) return callback();
    sendError(deps, res, state, fromRestifyError(err, res));
    callback();
  });

  return { server, inFlight: () => inFlight };
}

function fromRestifyError(err: Error & { statusCode?: number }, res: Response): ApiError | Error {
  if (err.name === 'ResourceNotFoundError') return naoEncontrado('Este caminho não existe na API.');
  if (err.name === 'MethodNotAllowedError') {
    const allow = String(res.getHeader('Allow') ?? '');
    return metodoNaoPermitido(allow.split(',').map((m) => m.trim()).filter(Boolean));
  }
  return err;
}

function finishRequest(deps: Deps, requestLog: RequestLog, req: Request, res: Response): void {
  const state = requestState(req);
  const durationMs = Math.round((performance.now() - state.startedAt) * 100) / 100;
  const status = res.writableFinished ? res.statusCode : 499;
  const path = (req.url ?? '/').split('?')[0] ?? '/';
  finishRequestTelemetry(state, req, res, status, durationMs);
  deps.log.info(
    {
      requisicao_id: state.requestId,
      method: req.method,
      route: state.route,
      path,
      status,
      codigo: state.codigo,
      refused_by: state.refusedBy,
      cost: state.cost,
      duration_ms: durationMs,
      conta_id: state.caller?.contaId ?? null,
    },
    'request',
  );
  requestLog.record({
    requisicaoId: state.requestId,
    contaId: state.caller?.contaId ?? null,
    chaveId: state.caller?.chaveId ?? null,
    method: req.method ?? 'GET',
    route: state.route,
    path: path.slice(0, 500),
    status,
    codigo: state.codigo,
    refusedBy: state.refusedBy,
    cost: state.cost,
    durationMs,
    ip: req.socket.remoteAddress ?? null,
    createdAt: state.createdAt,
  });
}

