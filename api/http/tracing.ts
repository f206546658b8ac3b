// A request's telemetry (docs/decisions/0049-opentelemetry.md): its server span, from arrival to the
// response's close, continuing the client's W3C traceparent (a malformed one starts a new trace), and
// its duration in http.server.request.duration. Neither carries the path's values, the query, a
// header's value or the body: the route's template names the request.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { context, contextOf, SpanKind, SpanStatusCode, startSpan, trace, type Span } from '#shared/telemetry/spans.ts';
import { telemetry } from '#shared/telemetry/state.ts';
import type { RequestState } from './request-state.ts';

/** The request's server span; undefined when tracing is off. */
export function startRequestSpan(req: IncomingMessage): Span | undefined {
  if (!telemetry.tracer) return undefined;
  const method = req.method ?? 'GET';
  return startSpan(method, {
    kind: SpanKind.SERVER,
    parent: contextOf(req.headers.traceparent, req.headers.tracestate),
    attributes: { 'http.request.method': method, 'url.scheme': 'http', 'network.protocol.version': req.httpVersion },
  });
}

/** Runs the pipeline in the context of the request's span. */
export function inRequestContext<T>(span: Span, work: () => Promise<T>): Promise<T> {
  return context.with(trace.setSpan(context.active(), span), work);
}

/** Names the span by its route once routed (`GET /v1/pedidos-producao/{id}`). */
export function nameRequestSpan(state: RequestState, method: string | undefined): void {
  const span = state.span;
  if (!span || state.routePath === null) return;
  const route = `/v1${state.routePath}`;
  span.updateName(`${method ?? 'GET'} ${route}`);
  span.setAttribute('http.route', route);
}

/** Ends the request's span and records its duration, with what the response turned out to be. */
export function finishRequestTelemetry(state: RequestState, req: IncomingMessage, res: ServerResponse, status: number, durationMs: number): void {
  const span = state.span;
  if (span?.isRecording()) {
    span.setAttributes({
      'http.response.status_code': status,
      'printfarm.requisicao_id': state.requestId,
      ...(state.caller ? { 'printfarm.conta_id': state.caller.contaId } : {}),
      ...(state.codigo ? { 'printfarm.codigo': state.codigo } : {}),
      ...(state.refusedBy ? { 'printfarm.refused_by': state.refusedBy } : {}),
    });
    if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    if (!res.writableFinished) span.setAttribute('error.type', 'client_closed');
  }
  span?.end();
  const metrics = telemetry.metrics;
  if (!metrics) return;
  const attributes = { 'http.request.method': req.method ?? 'GET', 'http.route': state.routePath === null ? (state.route ?? 'desconhecida') : `/v1${state.routePath}`, 'http.response.status_code': status };
  metrics.requestDuration.record(durationMs / 1000, attributes);
  if (state.refusedBy) metrics.refusals.add(1, { 'printfarm.refused_by': state.refusedBy, 'http.response.status_code': status });
}

/**
 * The start of a phase of the pipeline (admission, validation, handler, response), as an event of the
 * request's span: a phase's time is from its event to the next. Events, not spans: a span cost a
 * sampled request about 15 µs of the web's CPU, most of it exporting (BENCHMARKS.md, "Telemetry"),
 * and the request's span already holds the link to its admission batch.
 */
export function markPhase(state: RequestState, name: string): void {
  if (state.span?.isRecording()) state.span.addEvent(name);
}

/** Admission's start, as an event and for printfarm.admission.duration; undefined when telemetry is off. */
export function startAdmission(state: RequestState): number | undefined {
  if (!state.span && !telemetry.metrics) return undefined;
  markPhase(state, 'admission');
  return performance.now();
}

export function endAdmission(startedAt: number | undefined): void {
  if (startedAt !== undefined) telemetry.metrics?.admissionDuration.record((performance.now() - startedAt) / 1000);
}
