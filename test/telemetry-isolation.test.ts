// Shared work is in no request's trace, and a job keeps the trace that scheduled it
// (docs/decisions/0049-opentelemetry.md). The request log's
// rows and the slots given back are written in batches for many requests, each flush started from
// whichever request came first (a timer set, a batch filled). Traced in that request's context, its
// trace would claim SQL done for all. Telemetry on in this process, a real OTLP receiver, a real
// database: inside a sampled request's span, a statement of its own is its child, and the shared
// flushes make no span.
import { randomUUID } from 'node:crypto';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { context, trace } from '@opentelemetry/api';
import { createDatabasePool, sql, type Pool } from '#shared/db/pool.ts';
import { createLogger } from '#shared/log.ts';
import { inJobSpan, withTraceContext } from '#shared/telemetry/jobs.ts';
import { startTelemetry, type RunningTelemetry } from '#shared/telemetry/start.ts';
import { telemetry } from '#shared/telemetry/state.ts';
import { LimitsBookkeeper } from '../api/admission/limits-bookkeeper.ts';
import { RequestLog } from '../api/http/request-log.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import { startOtlpReceiver, type OtlpReceiver } from './helpers/otlp.ts';

const test = suite('telemetry: shared flushes in no request\'s trace');
const log = createLogger('silent', 'test');
let db: TestDatabase;
let otlp: OtlpReceiver;
let exporting: RunningTelemetry;
let pool: Pool;

test.before(async () => {
  db = await createTestDatabase();
  otlp = await startOtlpReceiver();
  exporting = await startTelemetry('web', log, { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.endpoint, OTEL_METRICS_EXPORTER: 'none' });
  // Made after telemetry is on, as the roles make theirs: its statements are traced.
  pool = await createDatabasePool(db.url, { size: 2, statementTimeoutMs: 10_000, applicationName: 'test' });
});
test.after(async () => {
  await pool.end();
  await otlp.close();
  await db.close();
});

/** Checks of what was exported, run once the last test has stopped telemetry (its export flushed). */
const jobChecks: (() => void)[] = [];

test('a job runs in a span continuing the trace that scheduled it, its SQL as its children', async () => {
  const scheduler = telemetry.tracer!.startSpan('POST /v1/estoque/movimentos');
  const data = context.with(trace.setSpan(context.active(), scheduler), () => withTraceContext({ contaId: 'c' }));
  scheduler.end();
  assert.is(data.traceparent, `00-${scheduler.spanContext().traceId}-${scheduler.spanContext().spanId}-01`);
  assert.equal(withTraceContext({ contaId: 'c' }), { contaId: 'c' }, 'scheduled outside any trace: the data as it was');
  await inJobSpan('lift-suspension', [{ data }], () => pool.query(sql.typeAlias('void')`SELECT 2`));
  jobChecks.push(() => {
    const spans = otlp.spans();
    const job = spans.find((s) => s.name === 'job lift-suspension');
    assert.ok(job, 'the job\'s span went out');
    assert.equal([job!.traceId, job!.parentSpanId], [scheduler.spanContext().traceId, scheduler.spanContext().spanId]);
    assert.equal(spans.filter((s) => s.parentSpanId === job!.spanId).map((s) => s.name), ['SELECT']);
  });
});

test('a request\'s own statement is its child; the request log\'s and the slots\' flushes are nobody\'s', async () => {
  const requestLog = new RequestLog(pool, log, 60_000);
  const limits = new LimitsBookkeeper(pool, log, `test:${randomUUID()}`);
  const span = telemetry.tracer!.startSpan('GET /v1/saude');
  await context.with(trace.setSpan(context.active(), span), async () => {
    await pool.query(sql.typeAlias('void')`SELECT 1`);
    requestLog.record({
      requisicaoId: randomUUID(), contaId: null, chaveId: null, method: 'GET', route: 'getSaude', path: '/v1/saude', status: 401,
      codigo: 'nao_autenticado', refusedBy: 'nao_autenticado', cost: 0, durationMs: 1, ip: null, createdAt: new Date(),
    });
    await requestLog.flush();
    limits.release(randomUUID(), randomUUID());
    await limits.flush();
  });
  span.end();
  await requestLog.close();
  await limits.close();
  await exporting.stop();
  const spans = otlp.spans();
  const request = spans.find((s) => s.name === 'GET /v1/saude');
  assert.ok(request, 'the request\'s span went out');
  const children = spans.filter((s) => s.parentSpanId === request!.spanId).map((s) => s.name);
  assert.equal(children, ['SELECT'], 'only its own statement');
  assert.equal(spans.filter((s) => /request_log|api_release/.test(s.name)).map((s) => s.name), []);
  for (const check of jobChecks) check();
});

test.run();
