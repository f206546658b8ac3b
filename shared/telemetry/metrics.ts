// The service's metrics (README, "Telemetry"): instruments created once when metrics are on, named
// after the OpenTelemetry semantic conventions where one exists (http.server.request.duration,
// http.client.request.duration, db.client.connection.*, process.memory.usage,
// nodejs.eventloop.delay.*) and under printfarm.* otherwise. Durations in seconds.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { Attributes, Meter, ObservableResult } from '@opentelemetry/api';

// Request and delivery latencies of an HTTP API: 1 ms to 30 s.
const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export type Metrics = ReturnType<typeof createMetrics>;

export function createMetrics(meter: Meter) {
  const seconds = (name: string, description: string) =>
    meter.createHistogram(name, { unit: 's', description, advice: { explicitBucketBoundaries: LATENCY_BUCKETS } });
  return {
    meter,
    requestDuration: seconds('http.server.request.duration', 'Duração das requisições da API, por rota, método e status.'),
    admissionDuration: seconds('printfarm.admission.duration', 'Tempo da admissão de uma requisição (autenticação, limites).'),
    refusals: meter.createCounter('printfarm.admission.refusals', {
      description: 'Requisições recusadas pela admissão, por motivo (o limite excedido, ou o acesso).',
    }),
    attemptDuration: seconds('http.client.request.duration', 'Duração de cada tentativa de entrega de webhook.'),
    deliveries: meter.createCounter('printfarm.webhook.deliveries', {
      description: 'Tentativas de entrega de webhook encerradas, por resultado e endpoint.',
    }),
    commitToReceipt: seconds('printfarm.webhook.commit_to_receipt', 'Do commit do evento à resposta 2xx do receptor.'),
  };
}

/** A gauge read at each export, from a callback that may ask the database (its errors skip the export's value). */
export function observe(metrics: Metrics, name: string, description: string, read: (record: (value: number, attributes?: Attributes) => void) => Promise<void> | void, unit = '1'): void {
  const gauge = metrics.meter.createObservableGauge(name, { description, unit });
  gauge.addCallback(async (result: ObservableResult) => {
    await read((value, attributes) => result.observe(value, attributes));
  });
}

/** Memory and event-loop delay of the process (semantic conventions' process.* and nodejs.*). */
export function observeProcess(metrics: Metrics): void {
  observe(metrics, 'process.memory.usage', 'Memória residente do processo.', (record) => record(process.memoryUsage.rss()), 'By');
  observe(metrics, 'v8js.memory.heap.used', 'Heap do V8 em uso.', (record) => record(process.memoryUsage().heapUsed), 'By');
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  const { meter } = metrics;
  const p99 = meter.createObservableGauge('nodejs.eventloop.delay.p99', { unit: 's', description: 'Atraso do event loop desde a última exportação, percentil 99.' });
  const max = meter.createObservableGauge('nodejs.eventloop.delay.max', { unit: 's', description: 'Maior atraso do event loop desde a última exportação.' });
  meter.addBatchObservableCallback((result) => {
    result.observe(p99, delay.percentile(99) / 1e9);
    result.observe(max, delay.max / 1e9);
    delay.reset();
  }, [p99, max]);
}

/** What a connection pool reports of itself (slonik's pool.state()). */
type PoolLike = { state(): { acquiredConnections: number; idleConnections: number; waitingClients: number } };

/** The pool's connections in use and idle, and the requests waiting for one (db.client.connection.*). */
export function observePool(metrics: Metrics, pool: PoolLike, poolName: string): void {
  const { meter } = metrics;
  const count = meter.createObservableGauge('db.client.connection.count', { description: 'Conexões do pool, por estado.' });
  const pending = meter.createObservableGauge('db.client.connection.pending_requests', { description: 'Pedidos à espera de uma conexão do pool.' });
  meter.addBatchObservableCallback((result) => {
    const state = pool.state();
    result.observe(count, state.acquiredConnections, { 'db.client.connection.pool.name': poolName, 'db.client.connection.state': 'used' });
    result.observe(count, state.idleConnections, { 'db.client.connection.pool.name': poolName, 'db.client.connection.state': 'idle' });
    result.observe(pending, state.waitingClients, { 'db.client.connection.pool.name': poolName });
  }, [count, pending]);
}
