// The webhook pipeline's telemetry (docs/decisions/0049-opentelemetry.md). Each delivery attempt is a
// client span in the trace of the change that emitted its event (its outbox row's traceparent; a new
// trace when the change was not traced), and the request carries that span as its traceparent. A
// relay pass that relayed traced events appears in each of their traces, and as one span linked to
// all of them. Neither records the endpoint's path or query (a receiver may put a token there), the
// body or the signature.
import type { TakenDelivery } from '#shared/db/deliveries.ts';
import type { TracedEvent } from '#shared/db/outbox.ts';
import { ROOT_CONTEXT } from '@opentelemetry/api';
import { contextOf, SpanKind, SpanStatusCode, spanContextOf, startSpan, trace, traceparentOf, type Link, type Span } from '#shared/telemetry/spans.ts';
import { telemetry } from '#shared/telemetry/state.ts';
import type { HttpOutcome } from './http.ts';

/** The attempt's client span; undefined when tracing is off. */
export function startAttemptSpan(row: TakenDelivery): Span | undefined {
  if (!telemetry.tracer) return undefined;
  const receiver = receiverOf(row.url);
  return startSpan('POST', {
    kind: SpanKind.CLIENT,
    parent: contextOf(row.traceparent),
    attributes: {
      'http.request.method': 'POST',
      'server.address': receiver.host,
      'server.port': receiver.port,
      'http.request.resend_count': row.attempt - 1,
      'printfarm.conta_id': row.conta_id,
      'printfarm.event_id': row.event_id,
      'printfarm.event.tipo': row.tipo,
      'printfarm.delivery_id': row.id,
      'printfarm.endpoint_id': row.endpoint_id,
    },
  });
}

type Receiver = { host: string; port: number };
const RECEIVERS_KEPT = 1_000;
const receivers = new Map<string, Receiver>();

/** An endpoint's host and port (never its path or query), parsed once per URL. */
function receiverOf(url: string): Receiver {
  let receiver = receivers.get(url);
  if (!receiver) {
    const parsed = URL.parse(url);
    receiver = { host: parsed?.hostname ?? '', port: Number(parsed?.port || (parsed?.protocol === 'https:' ? 443 : 80)) };
    if (receivers.size >= RECEIVERS_KEPT) receivers.clear();
    receivers.set(url, receiver);
  }
  return receiver;
}

/** The headers an attempt adds for tracing: its span as the receiver's traceparent. */
export const traceHeaders = (span: Span | undefined): Record<string, string> | undefined => (span ? { traceparent: traceparentOf(span) } : undefined);

/** Ends the attempt's span and counts it: by outcome and endpoint, its duration, and commit → receipt when received. */
export function finishAttempt(span: Span | undefined, row: TakenDelivery, outcome: HttpOutcome, status: string): void {
  if (span) {
    if (outcome.status !== null) span.setAttribute('http.response.status_code', outcome.status);
    if (status !== 'succeeded') {
      span.setStatus({ code: SpanStatusCode.ERROR });
      span.setAttribute('error.type', outcome.status === null ? 'sem_resposta' : String(outcome.status));
    }
    span.setAttribute('printfarm.delivery.outcome', status);
    span.end();
  }
  const metrics = telemetry.metrics;
  if (!metrics) return;
  const host = receiverOf(row.url).host;
  metrics.deliveries.add(1, { 'printfarm.delivery.outcome': status, 'printfarm.endpoint_id': row.endpoint_id });
  metrics.attemptDuration.record(outcome.durationMs / 1000, {
    'http.request.method': 'POST', 'server.address': host, ...(outcome.status === null ? { 'error.type': 'sem_resposta' } : { 'http.response.status_code': outcome.status }),
  });
  if (status === 'succeeded') metrics.commitToReceipt.record(Math.max(0, Date.now() - Date.parse(row.criado_em)) / 1000);
}

/**
 * A relay pass that relayed traced events, begun at `startTime`: a span in each event's trace, and
 * one for the pass linked to all of them (and they to it).
 */
export function traceRelayPass(events: readonly TracedEvent[], startTime: number): void {
  if (!telemetry.tracer || events.length === 0) return;
  const traced = events.flatMap((event) => {
    const parent = spanContextOf(event.traceparent);
    return parent ? [{ event, parent }] : [];
  });
  const links: Link[] = traced.map(({ event, parent }) => ({ context: parent, attributes: { 'printfarm.event_id': event.id } }));
  const pass = startSpan('webhook relay pass', { links, startTime, attributes: { 'printfarm.relay.events': events.length } });
  if (!pass) return;
  const toPass: Link[] = [{ context: pass.spanContext() }];
  for (const { event, parent } of traced) {
    startSpan(`relay ${event.tipo}`, {
      kind: SpanKind.CONSUMER, parent: trace.setSpanContext(ROOT_CONTEXT, parent), links: toPass, startTime,
      attributes: { 'printfarm.event_id': event.id, 'printfarm.event.tipo': event.tipo },
    })?.end();
  }
  pass.end();
}
