// Telemetry's switch and options, from the standard OpenTelemetry environment variables: traces and
// metrics are exported over OTLP/HTTP when an endpoint (or the exporter) is named, and not otherwise.
// The exporters read the rest themselves (OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT, _COMPRESSION, the
// per-signal endpoints); the resource reads OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES.
export type SamplerSetting = { kind: 'always_on' | 'always_off' | 'traceidratio'; parentBased: boolean; ratio: number };

export type TelemetrySettings = {
  traces: boolean;
  metrics: boolean;
  sampler: SamplerSetting;
  /** How often metrics are exported (OTEL_METRIC_EXPORT_INTERVAL, ms). */
  metricIntervalMs: number;
  /** How long ended spans wait to go in one export (OTEL_BSP_SCHEDULE_DELAY, ms). */
  spanDelayMs: number;
  /** Ended spans held for export at most (beyond, new ones are dropped), and per export (OTEL_BSP_MAX_QUEUE_SIZE, _MAX_EXPORT_BATCH_SIZE). */
  spanQueue: number;
  spanBatch: number;
  /** Where each signal goes: the per-signal endpoint as given, or the base endpoint with /v1/traces, /v1/metrics. */
  tracesUrl: string | undefined;
  metricsUrl: string | undefined;
};

const SAMPLERS: Record<string, Omit<SamplerSetting, 'ratio'>> = {
  always_on: { kind: 'always_on', parentBased: false },
  always_off: { kind: 'always_off', parentBased: false },
  traceidratio: { kind: 'traceidratio', parentBased: false },
  parentbased_always_on: { kind: 'always_on', parentBased: true },
  parentbased_always_off: { kind: 'always_off', parentBased: true },
  parentbased_traceidratio: { kind: 'traceidratio', parentBased: true },
};

/** What to export; throws (naming the variable) on a value the service does not support. */
export function telemetrySettings(env: NodeJS.ProcessEnv): TelemetrySettings {
  const off = env.OTEL_SDK_DISABLED?.toLowerCase() === 'true';
  const anyEndpoint = Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT);
  return {
    traces: !off && exporterOn(env, 'OTEL_TRACES_EXPORTER', anyEndpoint || Boolean(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)),
    metrics: !off && exporterOn(env, 'OTEL_METRICS_EXPORTER', anyEndpoint || Boolean(env.OTEL_EXPORTER_OTLP_METRICS_ENDPOINT)),
    sampler: samplerOf(env),
    metricIntervalMs: positiveInt(env, 'OTEL_METRIC_EXPORT_INTERVAL', 60_000),
    spanDelayMs: positiveInt(env, 'OTEL_BSP_SCHEDULE_DELAY', 5_000),
    spanQueue: positiveInt(env, 'OTEL_BSP_MAX_QUEUE_SIZE', 2_048),
    spanBatch: positiveInt(env, 'OTEL_BSP_MAX_EXPORT_BATCH_SIZE', 512),
    tracesUrl: signalUrl(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', 'v1/traces'),
    metricsUrl: signalUrl(env, 'OTEL_EXPORTER_OTLP_METRICS_ENDPOINT', 'v1/metrics'),
  };
}

function exporterOn(env: NodeJS.ProcessEnv, name: string, endpointGiven: boolean): boolean {
  const value = env[name]?.trim().toLowerCase();
  if (!value) return endpointGiven;
  if (value === 'otlp') return true;
  if (value === 'none') return false;
  throw new Error(`${name}=${value}: the service exports over OTLP only (otlp or none)`);
}

function samplerOf(env: NodeJS.ProcessEnv): SamplerSetting {
  const name = env.OTEL_TRACES_SAMPLER?.trim().toLowerCase() || 'parentbased_always_on';
  const sampler = SAMPLERS[name];
  if (!sampler) throw new Error(`OTEL_TRACES_SAMPLER=${name}: one of ${Object.keys(SAMPLERS).join(', ')}`);
  const arg = env.OTEL_TRACES_SAMPLER_ARG?.trim();
  const ratio = arg ? Number(arg) : 1;
  if (!(ratio >= 0 && ratio <= 1)) throw new Error(`OTEL_TRACES_SAMPLER_ARG=${arg}: a ratio from 0 to 1`);
  return { ...sampler, ratio };
}

function positiveInt(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name]?.trim();
  if (!raw) return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value <= 0) throw new Error(`${name}=${raw}: a positive whole number`);
  return value;
}

/** The OTLP/HTTP URL of a signal (OpenTelemetry's exporter specification); undefined: the exporter's default. */
function signalUrl(env: NodeJS.ProcessEnv, name: string, path: string): string | undefined {
  const own = env[name]?.trim();
  if (own) return own;
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  return base ? `${base.replace(/\/+$/, '')}/${path}` : undefined;
}
