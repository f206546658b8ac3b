// A client span for each SQL statement run inside a traced unit of work (a request, a batch, a relay
// pass, a delivery): named by the statement's summary (its prepared name, or its operation and first
// table or function), after the semantic conventions' db.* attributes. The statement's text and its
// parameter values are never recorded: a value may be a token's hash, a customer's text.
// Statements outside any sampled span (polling loops, lease renewals, an unsampled request) make none.
import type { Interceptor, Query } from 'slonik';
import { failed, SpanKind, startSpan, trace, context, type Span } from './spans.ts';

const SUMMARIES_KEPT = 2_000;
const summaries = new Map<string, string>();

export const sqlSpans: Interceptor = {
  name: 'telemetry-sql',
  beforeQueryExecution: (queryContext) => {
    // Only in a sampled unit of work: an unsampled one's children would be made to be dropped.
    if (!trace.getSpan(context.active())?.isRecording()) return null;
    // Its name as written: behind PgBouncer the statement itself goes unnamed (pool.ts).
    const summary = summaryOf(queryContext.originalQuery);
    const span = startSpan(summary, {
      kind: SpanKind.CLIENT,
      attributes: { 'db.system.name': 'postgresql', 'db.query.summary': summary, 'db.operation.name': summary.split(' ', 1)[0] ?? '' },
    });
    if (span) queryContext.sandbox.span = span;
    return null;
  },
  afterQueryExecution: (queryContext, _query, result) => {
    const span = queryContext.sandbox.span as Span | undefined;
    span?.setAttribute('db.response.returned_rows', result.rowCount);
    span?.end();
    return null;
  },
  queryExecutionError: (queryContext, _query, error) => {
    const span = queryContext.sandbox.span as Span | undefined;
    if (!span) return null;
    failed(span, error);
    const code = (error as { cause?: { code?: unknown } }).cause?.code;
    if (typeof code === 'string') span.setAttribute('db.response.status_code', code);
    span.end();
    return null;
  },
};

/** `write_estoque_movimentar` for a prepared statement; `SELECT api_admit`, `INSERT request_log` otherwise. */
export function summaryOf(query: Pick<Query, 'name' | 'sql'>): string {
  if (query.name) return query.name;
  let summary = summaries.get(query.sql);
  if (summary === undefined) {
    summary = summarize(query.sql);
    if (summaries.size >= SUMMARIES_KEPT) summaries.clear();
    summaries.set(query.sql, summary);
  }
  return summary;
}

function summarize(text: string): string {
  const operation = /^\s*(\w+)/.exec(text)?.[1]?.toUpperCase() ?? 'SQL';
  const target = /\b(?:FROM|INTO|UPDATE|JOIN)\s+([a-z_][\w.]*)/i.exec(text)?.[1]
    ?? /\bSELECT\s+(?:\*\s+FROM\s+)?([a-z_][\w.]*)\s*\(/i.exec(text)?.[1];
  return target ? `${operation} ${target}` : operation;
}
