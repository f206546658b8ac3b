// The OpenTelemetry SDK, loaded only when telemetry is on (start.ts): a tracer provider exporting
// spans in batches and a meter provider exporting metrics periodically, both over OTLP/HTTP (JSON),
// with the role's resource, and the async-hooks context manager that lets a span started in a request
// be the parent of the SQL it runs.
import { context, diag, DiagLogLevel, metrics as metricsApi, trace, TraceFlags } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { OTLPMetricExporter } from '@opentelemetry/exporter-metrics-otlp-http';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { detectResources, envDetector, hostDetector, resourceFromAttributes, type Resource } from '@opentelemetry/resources';
import { MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import {
  AlwaysOffSampler, AlwaysOnSampler, BatchSpanProcessor, ParentBasedSampler, SamplingDecision, TraceIdRatioBasedSampler, TracerProvider,
  type Sampler, type SamplingResult,
} from '@opentelemetry/sdk-trace';
import type { Logger } from '../log.ts';
import type { SamplerSetting, TelemetrySettings } from './settings.ts';
import { createMetrics } from './metrics.ts';
import { telemetry } from './state.ts';

export type Identity = { role: string; version: string };

/** Starts the providers the settings ask for and turns telemetry on; the function that stops them. */
export function startSdk(settings: TelemetrySettings, identity: Identity, log: Logger): () => Promise<void> {
  // The SDK's own failures (a collector that refuses or cannot be reached) in the role's log, not lost.
  diag.setLogger({
    error: (message, ...args) => log.warn({ otel: args.map(String) }, `telemetry: ${message}`),
    warn: (message, ...args) => log.warn({ otel: args.map(String) }, `telemetry: ${message}`),
    info: () => undefined, debug: () => undefined, verbose: () => undefined,
  }, DiagLogLevel.WARN);
  const resource = roleResource(identity);
  const stops: (() => Promise<void>)[] = [];
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  if (settings.traces) {
    const provider = new TracerProvider({
      resource,
      sampler: samplerOf(settings.sampler),
      // Nothing that is a value of the request: a long attribute is cut, never exported whole.
      spanLimits: { attributeValueLengthLimit: 512, linkCountLimit: 256 },
      spanProcessors: [new BatchSpanProcessor({
        exporter: new OTLPTraceExporter(settings.tracesUrl ? { url: settings.tracesUrl } : {}), scheduledDelayMillis: settings.spanDelayMs,
        maxQueueSize: settings.spanQueue, maxExportBatchSize: Math.min(settings.spanBatch, settings.spanQueue),
      })],
    });
    trace.setGlobalTracerProvider(provider);
    telemetry.tracer = provider.getTracer('printfarm', identity.version);
    stops.push(() => provider.shutdown());
  }
  if (settings.metrics) {
    const exporter = new OTLPMetricExporter(settings.metricsUrl ? { url: settings.metricsUrl } : {});
    const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: settings.metricIntervalMs });
    const provider = new MeterProvider({ resource, readers: [reader] });
    metricsApi.setGlobalMeterProvider(provider);
    telemetry.metrics = createMetrics(provider.getMeter('printfarm', identity.version));
    stops.push(() => provider.shutdown());
  }
  return async () => {
    delete telemetry.tracer;
    delete telemetry.metrics;
    // Each provider flushes what it holds before it stops.
    await Promise.allSettled(stops.map((stop) => stop()));
    diag.disable();
  };
}

/**
 * service.name per role (printfarm-web, printfarm-worker), the version, the process and the host;
 * OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES override.
 */
function roleResource(identity: Identity): Resource {
  return resourceFromAttributes({
    'service.name': `printfarm-${identity.role}`,
    'service.version': identity.version,
    'service.namespace': 'printfarm',
    'service.instance.id': `${process.pid}@${identity.role}`,
    'process.pid': process.pid,
    'process.runtime.name': 'nodejs',
    'process.runtime.version': process.versions.node,
  }).merge(detectResources({ detectors: [hostDetector, envDetector] }));
}

function samplerOf(setting: SamplerSetting): Sampler {
  const root = setting.kind === 'always_on' ? new AlwaysOnSampler()
    : setting.kind === 'always_off' ? new AlwaysOffSampler()
    : new TraceIdRatioBasedSampler(setting.ratio);
  return new SampledWithItsLinks(setting.parentBased ? new ParentBasedSampler({ root }) : root);
}

/**
 * A root span linked to a sampled span is sampled too: a batch's span (admission, a write batch, a
 * relay pass) serves requests whose traces were sampled, and a ratio of its own would lose the link
 * from their side.
 */
class SampledWithItsLinks implements Sampler {
  readonly #inner: Sampler;
  constructor(inner: Sampler) {
    this.#inner = inner;
  }

  shouldSample(...args: Parameters<Sampler['shouldSample']>): SamplingResult {
    const [parent, , , , , links] = args;
    if (!trace.getSpanContext(parent) && links.some((l) => (l.context.traceFlags & TraceFlags.SAMPLED) !== 0)) {
      return { decision: SamplingDecision.RECORD_AND_SAMPLED };
    }
    return this.#inner.shouldSample(...args);
  }

  toString(): string {
    return `SampledWithItsLinks{${this.#inner.toString()}}`;
  }
}
