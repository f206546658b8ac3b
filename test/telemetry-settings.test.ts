// Telemetry's switch (shared/telemetry/settings.ts, start.ts): off unless an OTLP exporter is named,
// each signal on its own, the standard samplers, and a clear refusal of what the service does not
// support; off, nothing is started and the instrumented code sees no tracer or meter.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { createLogger } from '#shared/log.ts';
import { telemetrySettings } from '#shared/telemetry/settings.ts';
import { startTelemetry } from '#shared/telemetry/start.ts';
import { telemetry } from '#shared/telemetry/state.ts';

const test = suite('telemetry settings');
const on = (env: NodeJS.ProcessEnv) => {
  const s = telemetrySettings(env);
  return [s.traces, s.metrics];
};

test('off by default; an endpoint turns both signals on; each signal can be turned off or named alone', () => {
  assert.equal(on({}), [false, false]);
  assert.equal(on({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }), [true, true]);
  assert.equal(on({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_METRICS_EXPORTER: 'none' }), [true, false]);
  assert.equal(on({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c:4318/v1/traces' }), [true, false]);
  assert.equal(on({ OTEL_METRICS_EXPORTER: 'otlp' }), [false, true]);
  assert.equal(on({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' }), [false, false]);
});

test('each signal\'s URL: its own endpoint as given, or the base endpoint with its path', () => {
  const base = telemetrySettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' });
  assert.equal([base.tracesUrl, base.metricsUrl], ['http://collector:4318/v1/traces', 'http://collector:4318/v1/metrics']);
  const own = telemetrySettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://t.example/ingest' });
  assert.equal([own.tracesUrl, own.metricsUrl], ['https://t.example/ingest', 'http://c:4318/v1/metrics']);
  assert.equal([telemetrySettings({}).tracesUrl, telemetrySettings({}).metricsUrl], [undefined, undefined]);
});

test('samplers: the standard names and a ratio from 0 to 1; parent-based always on by default', () => {
  assert.equal(telemetrySettings({}).sampler, { kind: 'always_on', parentBased: true, ratio: 1 });
  assert.equal(telemetrySettings({ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.1' }).sampler,
    { kind: 'traceidratio', parentBased: false, ratio: 0.1 });
  assert.equal(telemetrySettings({ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.25' }).sampler,
    { kind: 'traceidratio', parentBased: true, ratio: 0.25 });
});

test('what the service does not support is refused by name, not ignored', () => {
  assert.throws(() => telemetrySettings({ OTEL_TRACES_EXPORTER: 'zipkin' }), /OTEL_TRACES_EXPORTER=zipkin/);
  assert.throws(() => telemetrySettings({ OTEL_METRICS_EXPORTER: 'prometheus' }), /OTEL_METRICS_EXPORTER=prometheus/);
  assert.throws(() => telemetrySettings({ OTEL_TRACES_SAMPLER: 'sometimes' }), /OTEL_TRACES_SAMPLER=sometimes/);
  assert.throws(() => telemetrySettings({ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '1.5' }), /OTEL_TRACES_SAMPLER_ARG/);
  assert.throws(() => telemetrySettings({ OTEL_METRIC_EXPORT_INTERVAL: '0' }), /OTEL_METRIC_EXPORT_INTERVAL/);
});

test('off, starting telemetry starts nothing: no tracer, no meter', async () => {
  const started = await startTelemetry('web', createLogger('silent', 'web'), {});
  assert.is(started.on, false);
  assert.is(telemetry.tracer, undefined);
  assert.is(telemetry.metrics, undefined);
  await started.stop();
});

test.run();
