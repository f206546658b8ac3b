// The web process (Procfile: web).
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { loadConfigOrExit, type Config } from '../shared/config.ts';
import { createDatabasePool } from '../shared/db/pool.ts';
import { requireDatabaseUrl, stopOnSignals } from '../shared/lifecycle.ts';
import { createLogger, type Logger } from '../shared/log.ts';
import { RequestLog } from './request-log.ts';
import { routes } from './routes/index.ts';
import type { AnyRoute } from './routes/types.ts';
import { createApiServer } from './server.ts';

export type RunningWeb = { port: number; stop(): Promise<void> };

export async function startWeb(
  config: Config,
  databaseUrl: string,
  log: Logger,
  table: readonly AnyRoute[] = routes,
): Promise<RunningWeb> {
  const pool = await createDatabasePool(databaseUrl, {
    size: config.DB_POOL_SIZE,
    statementTimeoutMs: config.DB_STATEMENT_TIMEOUT_MS,
    applicationName: 'web',
  });
  const deps = { pool, config, log };
  const requestLog = new RequestLog(pool, log, config.REQUEST_LOG_FLUSH_MS);
  const api = createApiServer(deps, requestLog, table);
  await new Promise<void>((resolve) => api.server.listen(config.PORT, config.HOST, resolve));
  const port = (api.server.address() as AddressInfo).port;
  log.info({ port, baseUrl: config.baseUrl }, 'web listening');

  return {
    port,
    async stop() {
      // Stop accepting, let in-flight requests finish within the grace period, then cut the rest.
      const closed = new Promise<void>((resolve) => api.server.server.close(() => resolve()));
      api.server.server.closeIdleConnections();
      const deadline = performance.now() + config.SHUTDOWN_GRACE_MS;
      while (api.inFlight() > 0 && performance.now() < deadline) await sleep(20);
      api.server.server.closeAllConnections();
      await closed;
      await requestLog.close();
      await pool.end();
    },
  };
}

if (import.meta.main) {
  const config = loadConfigOrExit();
  const log = createLogger(config.LOG_LEVEL, 'web');
  const web = await startWeb(config, requireDatabaseUrl(config.DATABASE_URL, 'web'), log);
  stopOnSignals(log, config.SHUTDOWN_GRACE_MS, () => web.stop());
}
