// The worker's gauges (README, "Telemetry"): the work waiting at each stage, read from the operator
// view queue_depth (the outbox, the deliveries, the pg-boss queues: items and the oldest's age), the
// endpoints failing or disabled, its pool and its process. Read at each export (every
// OTEL_METRIC_EXPORT_INTERVAL), one statement each; nothing when metrics are off.
import type { BatchObservableResult } from '@opentelemetry/api';
import { z } from 'zod';
import { sql, type Pool } from '#shared/db/pool.ts';
import type { Logger } from '#shared/log.ts';
import { observePool, observeProcess, type Metrics } from '#shared/telemetry/metrics.ts';

const Depth = z.object({ queue: z.string(), state: z.string(), items: z.number(), oldest_seconds: z.number().nullable() });
const Endpoints = z.object({ failing: z.number(), disabled: z.number() });

/** Starts the worker's gauges; the function that stops reading them (before the pool ends). */
export function observeWorker(metrics: Metrics, pool: Pool, log: Logger): () => void {
  observePool(metrics, pool, 'worker');
  observeProcess(metrics);
  const { meter } = metrics;
  const depth = meter.createObservableGauge('printfarm.queue.depth', { description: 'Itens à espera, por fila e estado (outbox, entregas, filas do pg-boss).' });
  const age = meter.createObservableGauge('printfarm.queue.oldest_age', { unit: 's', description: 'Idade do item mais antigo à espera, por fila e estado.' });
  const endpoints = meter.createObservableGauge('printfarm.webhook.endpoints', { description: 'Endpoints de webhook falhando (ativos) ou desativados.' });
  const read = async (result: BatchObservableResult) => {
    try {
      const [rows, counts] = await Promise.all([
        pool.any(sql.type(Depth)`
          SELECT queue, state, items::int, extract(epoch FROM now() - oldest)::float8 AS oldest_seconds FROM queue_depth`),
        pool.one(sql.type(Endpoints)`
          SELECT count(*) FILTER (WHERE ativo AND falhando_desde IS NOT NULL)::int AS failing,
                 count(*) FILTER (WHERE NOT ativo)::int AS disabled
            FROM webhook_endpoints`),
      ]);
      // The pipeline's own stages are reported empty too: a gauge that stops reporting reads as unknown.
      const empty = [{ queue: 'outbox', state: 'ready' }, { queue: 'deliveries', state: 'due' }]
        .filter((e) => !rows.some((r) => r.queue === e.queue && r.state === e.state))
        .map((e) => ({ ...e, items: 0, oldest_seconds: 0 }));
      for (const row of [...rows, ...empty]) {
        const attributes = { 'printfarm.queue': row.queue, 'printfarm.queue.state': row.state };
        result.observe(depth, row.items, attributes);
        if (row.oldest_seconds !== null) result.observe(age, Math.max(0, row.oldest_seconds), attributes);
      }
      result.observe(endpoints, counts.failing, { 'printfarm.endpoint.state': 'failing' });
      result.observe(endpoints, counts.disabled, { 'printfarm.endpoint.state': 'disabled' });
    } catch (error) {
      log.warn({ err: error }, 'reading the queues for metrics failed');
    }
  };
  const observed = [depth, age, endpoints];
  meter.addBatchObservableCallback(read, observed);
  return () => meter.removeBatchObservableCallback(read, observed);
}
