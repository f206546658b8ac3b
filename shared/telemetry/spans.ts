// Spans shared by both roles: the W3C trace context a trace continues from (a client's traceparent,
// an outbox row's), the traceparent a span hands on (to the database, to a webhook receiver), and
// spans whose work runs in their context (the SQL they run becomes their children).
import { context, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Context, type Link, type Span, type SpanContext } from '@opentelemetry/api';
import { parseTraceParent, TraceState } from '@opentelemetry/core';
import { telemetry } from './state.ts';

/** A header longer than this is no traceparent (55 characters in version 00): refused before parsing. */
const MAX_TRACEPARENT = 256;
/** A tracestate beyond this is dropped rather than carried (W3C: at most 32 members). */
const MAX_TRACESTATE = 512;

/**
 * The context a traceparent (and tracestate) continue, or the root context (a new trace) for anything
 * malformed: an unknown or invalid version, ids all zeros, a header too long or repeated.
 */
export function contextOf(traceparent: unknown, tracestate?: unknown): Context {
  const spanContext = spanContextOf(traceparent, tracestate);
  return spanContext ? trace.setSpanContext(ROOT_CONTEXT, spanContext) : ROOT_CONTEXT;
}

export function spanContextOf(traceparent: unknown, tracestate?: unknown): SpanContext | undefined {
  if (typeof traceparent !== 'string' || traceparent.length > MAX_TRACEPARENT) return undefined;
  const parsed = parseTraceParent(traceparent);
  if (!parsed) return undefined;
  const state = typeof tracestate === 'string' && tracestate.length <= MAX_TRACESTATE ? new TraceState(tracestate) : undefined;
  return { ...parsed, isRemote: true, ...(state ? { traceState: state } : {}) };
}

/** The traceparent that makes `span` the parent of what receives it. */
export function traceparentOf(span: Span): string {
  const { traceId, spanId, traceFlags } = span.spanContext();
  return `00-${traceId}-${spanId}-0${(traceFlags & 1).toString(16)}`;
}

export type SpanOptions = {
  kind?: SpanKind; links?: Link[]; parent?: Context; attributes?: Record<string, string | number | boolean>;
  /** When it began, if before now (ms since the epoch). */
  startTime?: number;
};

/** A span started now, child of `parent` (the active context by default); undefined when tracing is off. */
export function startSpan(name: string, options: SpanOptions = {}): Span | undefined {
  const tracer = telemetry.tracer;
  if (!tracer) return undefined;
  return tracer.startSpan(name, {
    kind: options.kind ?? SpanKind.INTERNAL, links: options.links ?? [], attributes: options.attributes ?? {},
    ...(options.startTime === undefined ? {} : { startTime: options.startTime }),
  }, options.parent ?? context.active());
}

/** Runs `work` with `span` as the active span (its SQL becomes the span's children), ending it after. */
export async function inSpan<T>(span: Span, work: () => Promise<T>): Promise<T> {
  try {
    return await context.with(trace.setSpan(context.active(), span), work);
  } catch (error) {
    failed(span, error);
    throw error;
  } finally {
    span.end();
  }
}

/** Marks a span failed, with the error's kind (its message may carry values, so it is not kept). */
export function failed(span: Span, error: unknown): void {
  span.setStatus({ code: SpanStatusCode.ERROR });
  span.setAttribute('error.type', error instanceof Error ? error.constructor.name : typeof error);
}

/**
 * Runs shared work (a batch of many requests' bookkeeping) outside any request's trace: a timer or a
 * flush started from one request would otherwise carry that request's context, and its trace would
 * claim SQL done for all.
 */
export function untraced<T>(work: () => T): T {
  return telemetry.tracer ? context.with(ROOT_CONTEXT, work) : work();
}

/** The active span's traceparent, for the database to give the events of a change; null when not traced. */
export function activeTraceparent(): string | null {
  if (!telemetry.tracer) return null;
  const span = trace.getActiveSpan();
  return span ? traceparentOf(span) : null;
}

export { SpanKind, SpanStatusCode, trace, context, type Span, type Link };
