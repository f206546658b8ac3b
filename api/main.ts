// The web process (Procfile: web).
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { hostname } from 'node:os';
import type { PgBoss } from 'pg-boss';
import { setTimeout as sleep } from 'node:timers/promises';
import { loadConfigOrExit, type Config } from '#shared/config.ts';
import { assertDatabaseUtf8, createDatabasePool, type Pool } from '#shared/db/pool.ts';
import { observe, observePool, observeProcess, type Metrics } from '#shared/telemetry/metrics.ts';
import { withTraceContext } from '#shared/telemetry/jobs.ts';
import { startTelemetryOrExit } from '#shared/telemetry/start.ts';
import { telemetry } from '#shared/telemetry/state.ts';
import { requireDatabaseUrl, stopOnSignals } from '#shared/lifecycle.ts';
import { createLogger, type Logger } from '#shared/log.ts';
import { QUEUES } from '#shared/jobs.ts';
import { createBoss } from '#shared/boss.ts';
import { CircuitBreaker } from './admission/breaker.ts';
import { AdmissionQueue } from './admission/admission-queue.ts';
import { DocumentCache } from './routes/document-cache.ts';
import { LimitsBookkeeper } from './admission/limits-bookkeeper.ts';
import { WriteQueue } from './writes/write-queue.ts';
import { RequestLog } from './http/request-log.ts';
import { routes } from './routes/index.ts';
import type { AnyRoute, Deps, JobScheduler } from './routes/types.ts';
import { createApiServer } from './http/server.ts';

export type RunningWeb = {
  port: number;
  /** Writes what is batched now (request log rows, slot releases, settlements). */
  flush(): Promise<void>;
  stop(): Promise<void>;
};

export async function startWeb(
  config: Config,
  databaseUrl: string,
  log: Logger,
  table: readonly AnyRoute[] = routes,
): Promise<RunningWeb> {
  // Behind a transaction pooler when the deployment gives one: every session need of the web is
  // per transaction (docs/decisions/0017-web-role-behind-pgbouncer.md).
  const pooledUrl = config.DATABASE_CONNECTION_POOL_URL;
  const url = pooledUrl ?? databaseUrl;
  const pool = await createDatabasePool(url, {
    size: config.DB_POOL_SIZE,
    statementTimeoutMs: config.DB_STATEMENT_TIMEOUT_MS,
    applicationName: 'web',
    pooled: pooledUrl !== undefined,
  });
  await assertDatabaseUtf8(pool).catch(async (error: unknown) => {
    await pool.end();
    throw error;
  });
  const boss = await startJobSender(url, pooledUrl !== undefined, log);
  const limits = new LimitsBookkeeper(pool, log, `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`);
  const breaker = new CircuitBreaker({ failureThreshold: 3, openMs: config.DB_BREAKER_OPEN_MS, waitBudgetMs: config.DB_POOL_WAIT_MS });
  const admissions = new AdmissionQueue({ pool, breaker, limits, log }, config.DB_POOL_WAIT_MS, config.REFUSAL_DELAY_MS);
  const writes = new WriteQueue({ pool, breaker, log }, config.DB_POOL_WAIT_MS);
  const documentos = new DocumentCache(config.CATALOGO_CACHE_MB * 1024 * 1024);
  const deps: Deps = { pool, config, log, breaker, limits, admissions, writes, jobs: scheduler(boss), documentos };
  const requestLog = new RequestLog(pool, log, config.REQUEST_LOG_FLUSH_MS);
  if (telemetry.metrics) observeWeb(telemetry.metrics, pool, breaker);
  const api = createApiServer(deps, requestLog, table);
  // Idle keep-alive connections outlive a load balancer's (typically 60 s), so it never sends a
  // request on a socket this server is closing.
  api.server.server.keepAliveTimeout = 65_000;
  api.server.server.headersTimeout = 66_000;
  await new Promise<void>((resolve) => api.server.listen(config.PORT, config.HOST, resolve));
  const port = (api.server.address() as AddressInfo).port;
  log.info({ port, baseUrl: config.baseUrl }, 'web listening');

  return {
    port,
    async flush() {
      await limits.drain();
      await requestLog.flush();
    },
    async stop() {
      // Stop accepting, let in-flight requests finish within the grace period, then cut the rest.
      const closed = new Promise<void>((resolve) => api.server.server.close(() => resolve()));
      api.server.server.closeIdleConnections();
      const deadline = performance.now() + config.SHUTDOWN_GRACE_MS;
      while (api.inFlight() > 0 && performance.now() < deadline) await sleep(20);
      api.server.server.closeAllConnections();
      await closed;
      await requestLog.close();
      await limits.close();
      await boss.stop({ graceful: false });
      await pool.end();
    },
  };
}

// The web process only sends jobs: no polling, no maintenance (the worker does those).
async function startJobSender(databaseUrl: string, pooled: boolean, log: Logger): Promise<PgBoss> {
  const boss = createBoss(databaseUrl, { max: 2, supervise: false, schedule: false, applicationName: 'web', pooled });
  boss.on('error', (error: unknown) => log.error({ err: error }, 'pg-boss error'));
  await boss.start();
  await boss.createQueue(QUEUES.liftSuspension);
  return boss;
}

/** The web's gauges: its pool, its breaker, its process (shared/telemetry/metrics.ts). */
function observeWeb(metrics: Metrics, pool: Pool, breaker: CircuitBreaker): void {
  observePool(metrics, pool, 'web');
  observeProcess(metrics);
  observe(metrics, 'printfarm.db.breaker.open', 'Disjuntor do banco aberto (1): as requisições recebem 503 sem esperar.', (record) => record(breaker.open ? 1 : 0));
}

function scheduler(boss: PgBoss): JobScheduler {
  return {
    async liftSuspension(contaId, chaveId, at) {
      await boss.send(QUEUES.liftSuspension, withTraceContext({ contaId, chaveId }), { startAfter: at, singletonKey: chaveId });
    },
  };
}

if (import.meta.main) {
  const config = loadConfigOrExit(process.env, { role: 'web' });
  const log = createLogger(config.LOG_LEVEL, 'web');
  // Before the pool: its statements are traced only if tracing is on when it is made.
  const exporting = await startTelemetryOrExit('web', log);
  const web = await startWeb(config, requireDatabaseUrl(config.DATABASE_URL, 'web'), log);
  stopOnSignals(log, config.SHUTDOWN_GRACE_MS, async () => {
    await web.stop();
    await exporting.stop();
  });
}
