// One statement that serves many traced units of work (an admission batch, a write batch): a span of
// its own, with the statement's SQL as its child, linked to the span of each unit it served, and each
// of those linked back to it, so a request's trace leads to the batch and the batch to its requests.
import { context, trace, type Link, type Span } from '@opentelemetry/api';
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
  return startSpan(name, { links, parent: trace.deleteSpan(context.active()), attributes: { 'printfarm.batch.size': members.length } });
}

/** Runs the batch's statement in its span's context (its SQL becomes the span's child). */
export function inBatchSpan<A, R>(span: Span, run: (arg: A) => Promise<R>, arg: A): Promise<R> {
  return context.with(trace.setSpan(context.active(), span), run, undefined, arg);
}

/** Ends the batch's span, links its members back to it. */
export function endBatchSpan(span: Span, members: readonly Member[], error?: unknown): void {
  if (error !== undefined) failed(span, error);
  const link = { context: span.spanContext() };
  for (const member of members) if (member.span?.isRecording()) member.span.addLink(link);
  span.end();
}
