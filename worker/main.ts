// The worker process (Procfile: worker): pg-boss, with its schema in the service's database.
import type { PgBoss } from 'pg-boss';
import { createBoss } from '../shared/boss.ts';
import { loadConfigOrExit, type Config } from '../shared/config.ts';
import { PIPELINE_SESSION_SETTINGS } from '../shared/db/deliveries.ts';
import { garantirParticoes } from '../shared/db/particoes.ts';
import { assertDatabaseUtf8, createDatabasePool } from '../shared/db/pool.ts';
import { requireDatabaseUrl, stopOnSignals } from '../shared/lifecycle.ts';
import { createLogger, type Logger } from '../shared/log.ts';
import { jobs } from './jobs/index.ts';
import { startMailer } from './mailer.ts';
import { Notifier } from './notifier.ts';
import type { WorkerDeps } from './jobs/types.ts';
import { startWebhooks } from './webhooks/index.ts';


export type RunningWorker = { boss: PgBoss; stop(): Promise<void> };

export async function startWorker(config: Config, databaseUrl: string, log: Logger): Promise<RunningWorker> {
  const pool = await createDatabasePool(databaseUrl, {
    size: config.DB_POOL_SIZE,
    statementTimeoutMs: config.DB_STATEMENT_TIMEOUT_MS,
    applicationName: 'worker',
    settings: PIPELINE_SESSION_SETTINGS,
  });
  await assertDatabaseUtf8(pool).catch(async (error: unknown) => {
    await pool.end();
    throw error;
  });
  // The week's partitions now, not at the job's next turn (a worker started days after the last release).
  await garantirParticoes(pool);
  // The deliveries and e-mails first: they need no pg-boss, and a worker restarted under a backlog
  // sends its first deliveries while pg-boss starts (measured: about 50 ms sooner, of 0.45 s from spawn).
  const notifier = new Notifier(databaseUrl, log);
  const loops = [startMailer({ pool, config, log }, notifier), startWebhooks({ pool, config, log }, notifier)];
  const stopLoops = async () => {
    await Promise.all(loops.map((l) => l.stop()));
    await notifier.stop();
  };
  const boss = createBoss(databaseUrl);
  // pg-boss reports its own failures (lost connections, maintenance errors) here; without a
  // listener they would crash the process.
  boss.on('error', (error: unknown) => log.error({ err: error }, 'pg-boss error'));
  try {
    await notifier.start();
    await boss.start();
    // Webhook deliveries were pg-boss jobs of this queue until migration 0015; what it still holds
    // runs under the deliveries' own leases now.
    await boss.deleteQueue('webhook-delivery');
    const deps: WorkerDeps = { pool, config, log, boss };
    for (const job of jobs) {
      await boss.createQueue(job.name, job.queue ?? {});
      if (job.cron) await boss.schedule(job.name, job.cron);
      await boss.work(job.name, { batchSize: job.work?.batchSize ?? 1, pollingIntervalSeconds: job.work?.pollingIntervalSeconds ?? 2 }, (batch) =>
        job.handler(batch, deps),
      );
    }
  } catch (error) {
    await stopLoops();
    await boss.stop({ graceful: false }).catch(() => undefined);
    await pool.end();
    throw error;
  }
  log.info({ jobs: jobs.map((j) => j.name) }, 'worker started');
  return {
    boss,
    async stop() {
      await stopLoops();
      await boss.stop({ graceful: true, timeout: Math.max(1_000, config.SHUTDOWN_GRACE_MS - 2_000) });
      await pool.end();
    },
  };
}

if (import.meta.main) {
  const config = loadConfigOrExit(process.env, { role: 'worker' });
  const log = createLogger(config.LOG_LEVEL, 'worker');
  const worker = await startWorker(config, requireDatabaseUrl(config.DATABASE_URL, 'worker'), log);
  stopOnSignals(log, config.SHUTDOWN_GRACE_MS, () => worker.stop());
}
