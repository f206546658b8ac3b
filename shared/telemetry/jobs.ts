// pg-boss jobs keep the trace of what scheduled them: the sender puts its traceparent in the job's
// data, and the worker runs a batch of jobs in a span continuing it (one job) or linked to each (many).
import type { Link } from '@opentelemetry/api';
import { activeTraceparent, contextOf, inSpan, spanContextOf, startSpan } from './spans.ts';
import { telemetry } from './state.ts';

/** The job's data with the sender's trace context, when traced. */
export function withTraceContext<T extends object>(data: T): T & { traceparent?: string } {
  const traceparent = activeTraceparent();
  return traceparent === null ? data : { ...data, traceparent };
}

type TracedJob = { data: unknown };

const traceparentOf = (job: TracedJob): unknown =>
  job.data !== null && typeof job.data === 'object' ? (job.data as { traceparent?: unknown }).traceparent : undefined;

/** Runs a batch of one queue's jobs in a span (`job <queue>`) when tracing is on. */
export async function inJobSpan<T>(queue: string, jobs: readonly TracedJob[], run: () => Promise<T>): Promise<T> {
  if (!telemetry.tracer) return run();
  const links: Link[] = [];
  for (const job of jobs) {
    const spanContext = spanContextOf(traceparentOf(job));
    if (spanContext) links.push({ context: spanContext });
  }
  const only = jobs.length === 1 ? jobs[0] : undefined;
  const span = startSpan(`job ${queue}`, {
    parent: only ? contextOf(traceparentOf(only)) : undefined,
    links: only ? [] : links,
    attributes: { 'printfarm.job.queue': queue, 'printfarm.job.count': jobs.length },
  });
  return span ? inSpan(span, run) : run();
}
