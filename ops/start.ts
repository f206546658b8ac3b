// npm start: the whole service on one machine. With no DATABASE_URL it runs an embedded
// PostgreSQL in .data/; then migrations, demo data on the first run, the web and worker roles,
// and a banner with the base URL, a fresh demo key and a curl line. Ctrl-C stops everything.
import { loadConfigOrExit } from '#shared/config.ts';
import { freePort, startEmbeddedPostgres, type EmbeddedPostgres } from '#shared/db/embedded.ts';
import { installBossSchema } from '#shared/boss.ts';
import { release } from '#shared/db/release.ts';
import { createDatabasePool } from '#shared/db/pool.ts';
import { stopOnSignals } from '#shared/lifecycle.ts';
import { createLogger } from '#shared/log.ts';
import { startTelemetryOrExit } from '#shared/telemetry/start.ts';
import { startWeb } from '../api/main.ts';
import { startWorker } from '../worker/main.ts';
import { issueDemoKey, loadDemo } from './demo.ts';

let config = loadConfigOrExit();
if (config.PORT === 0) {
  const port = await freePort();
  config = { ...config, PORT: port, baseUrl: config.PUBLIC_BASE_URL ?? `http://localhost:${port}/v1` };
}
const log = createLogger(config.LOG_LEVEL, 'start');

let embedded: EmbeddedPostgres | null = null;
let databaseUrl = config.DATABASE_URL;
if (!databaseUrl) {
  log.info({ dataDir: config.EMBEDDED_PG_DIR }, 'starting the embedded PostgreSQL');
  embedded = await startEmbeddedPostgres({ dataDir: config.EMBEDDED_PG_DIR, onLog: (line) => log.debug({ postgres: line }) });
  databaseUrl = embedded.url;
}

const released = await release(databaseUrl, { statementTimeoutMs: config.DB_STATEMENT_TIMEOUT_MS });
await installBossSchema(databaseUrl);
if (released.applied.length || released.code === 'rebuilt') log.info(released, 'database released');
const pool = await createDatabasePool(databaseUrl, { size: 2, statementTimeoutMs: 60_000, applicationName: 'start' });
const loaded = await loadDemo(pool);
const token = await issueDemoKey(pool);
await pool.end();

// Both roles in this one process, one service for telemetry (printfarm-local) when OTEL_ asks for it;
// started before their pools, whose statements are traced only if tracing is on when they are made.
const exporting = await startTelemetryOrExit('local', log);
const worker = await startWorker(config, databaseUrl, log.child({ role: 'worker' }));
const web = await startWeb(config, databaseUrl, log.child({ role: 'web' }));

process.stdout.write(
  [
    '',
    `  API v1 ready at ${config.baseUrl}${loaded ? ' (demo data loaded)' : ''}`,
    `  Database: ${embedded ? `embedded PostgreSQL in ${config.EMBEDDED_PG_DIR}` : 'DATABASE_URL'}`,
    `  Demo API key (shown once; a new one each start): ${token}`,
    `  Try: curl -H "Authorization: Bearer ${token}" ${config.baseUrl}/saude`,
    `  API reference: ${new URL(config.baseUrl).origin}/docs`,
    '',
    '',
  ].join('\n'),
);

stopOnSignals(log, config.SHUTDOWN_GRACE_MS, async () => {
  await web.stop();
  await worker.stop();
  await exporting.stop();
  await embedded?.stop();
}, { whenOrphaned: true });
