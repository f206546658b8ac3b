// One statement that serves many traced units of work (an admission batch, a write batch): a span of
// its own, with the statement's SQL as its child, linked to the span of each unit it served, and each
// of those linked back to it, so a request's trace leads to the batch and the batch to its requests.
import { context, ROOT_CONTEXT, trace, type Link, type Span } from '@opentelemetry/api';
import { failed, startSpan } from './spans.ts';
import { telemetry } from './state.ts';

/** The span to link a unit of work to its batch: the active one, when tracing is on. */
export function memberSpan(): Span | undefined {
  return telemetry.tracer ? trace.getActiveSpan() : undefined;
}

/** A unit of work a batch serves: its span, when it was traced. */
export type Member = { span: Span | undefined };

/** A batch's span when tracing is on and a member's trace is sampled; undefined otherwise. */
export function startBatchSpan(name: string, members: readonly Member[]): Span | undefined {
  if (!telemetry.tracer) return undefined;
  const links: Link[] = [];
  for (const { span } of members) if (span?.isRecording()) links.push({ context: span.spanContext() });
  if (links.length === 0) return undefined;
  // A root of its own: the batch belongs to no one request's trace more than to another's.
  return startSpan(name, { links, parent: ROOT_CONTEXT, attributes: { 'printfarm.batch.size': members.length } });
}

/**
 * Runs the batch's statement in its span's context (its SQL becomes the span's child), or, traced but
 * with no span of its own, in no trace: never in the context of the request that happened to start
 * the batch, whose trace would otherwise claim the others' SQL and events.
 */
export function runBatch<A, R>(span: Span | undefined, run: (arg: A) => Promise<R>, arg: A): Promise<R> {
  if (span) return context.with(trace.setSpan(ROOT_CONTEXT, span), run, undefined, arg);
  return telemetry.tracer ? context.with(ROOT_CONTEXT, run, undefined, arg) : run(arg);
}

/** Ends the batch's span, links its members back to it. */
export function endBatchSpan(span: Span, members: readonly Member[], error?: unknown): void {
  if (error !== undefined) failed(span, error);
  const link = { context: span.spanContext() };
  for (const member of members) if (member.span?.isRecording()) member.span.addLink(link);
  span.end();
}
