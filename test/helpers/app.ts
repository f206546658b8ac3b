// The service under test: a real restify server on a free port over the suite's own database.
import { loadConfig, type Config } from '#shared/config.ts';
import { createLogger, type Logger } from '#shared/log.ts';
import { startWeb, type RunningWeb } from '../../api/main.ts';
import { startWorker, type RunningWorker } from '../../worker/main.ts';
import { freePort } from '#shared/db/embedded.ts';
import { routes } from '../../api/routes/index.ts';
import type { AnyRoute } from '../../api/routes/types.ts';
import { createTestDatabase, type TestDatabase } from './db.ts';

export type TestApp = {
  db: TestDatabase;
  config: Config;
  baseUrl: string;
  web: RunningWeb;
  worker: RunningWorker | null;
  stop(): Promise<void>;
};

export async function testConfig(overrides: Record<string, string> = {}): Promise<Config> {
  const port = await freePort();
  return loadConfig({
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    VALIDATE_RESPONSES: 'true',
    REQUEST_LOG_FLUSH_MS: '50',
    SHUTDOWN_GRACE_MS: '2000',
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    // Suites send bad keys on purpose; test/auth.test.ts checks the delay itself.
    REFUSAL_DELAY_MS: '0',
    ...overrides,
  });
}

export async function startTestApp(
  options: {
    env?: Record<string, string>;
    worker?: boolean;
    extraRoutes?: AnyRoute[];
    log?: Logger;
    /** The pooled URL of the suite's database (a PgBouncer in front of it): the web uses it. */
    pooledUrl?: (database: string) => string;
  } = {},
): Promise<TestApp> {
  const db = await createTestDatabase();
  const pooled: Record<string, string> = options.pooledUrl ? { DATABASE_CONNECTION_POOL_URL: options.pooledUrl(db.name) } : {};
  const config = await testConfig({ DATABASE_URL: db.url, ...pooled, ...options.env });
  const log = options.log ?? createLogger(config.LOG_LEVEL, 'test');
  const web = await startWeb(config, db.url, log, [...routes, ...(options.extraRoutes ?? [])]);
  const worker = options.worker ? await startWorker(config, db.url, log) : null;
  return {
    db,
    config,
    baseUrl: config.baseUrl,
    web,
    worker,
    async stop() {
      await web.stop();
      await worker?.stop();
      await db.close();
    },
  };
}
