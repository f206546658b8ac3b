// The worker process (Procfile: worker): pg-boss, with its schema in the service's database.
import { setTimeout as sleep } from 'node:timers/promises';
import type { PgBoss } from 'pg-boss';
import { loadConfigOrExit, type Config } from '#shared/config.ts';
import { PIPELINE_SESSION_SETTINGS, somethingWaiting } from '#shared/db/deliveries.ts';
import { ensurePartitions } from '#shared/db/partitions.ts';
import { assertDatabaseUtf8, createDatabasePool, type Pool } from '#shared/db/pool.ts';
import { requireDatabaseUrl, stopOnSignals } from '#shared/lifecycle.ts';
import { createLogger, type Logger } from '#shared/log.ts';
import { inJobSpan } from '#shared/telemetry/jobs.ts';
import { startTelemetryOrExit } from '#shared/telemetry/start.ts';
import { telemetry } from '#shared/telemetry/state.ts';
import { observeWorker } from './metrics.ts';
import { startMailer } from './mailer.ts';
import { Notifier } from './notifier.ts';
import type { LoopDeps, WorkerDeps } from './jobs/types.ts';
import { startWebhooks } from './webhooks/index.ts';


export type RunningWorker = { boss: PgBoss; stop(): Promise<void> };

/** The longest pg-boss waits at start for the deliveries waiting then (catchUp). */
export const CATCH_UP_MAX_MS = 5_000;
const CATCH_UP_POLL_MS = 100;

/**
 * Resolves once nothing is waiting to go out (somethingWaiting), or after `maxMs`. A worker restarted
 * under a backlog sends it before it loads and starts pg-boss, whose start (its modules, its schema's
 * checks, a queue and a schedule for each job) competed with the first deliveries for the same cores
 * (docs/decisions/0036-worker-delivers-before-jobs.md; BENCHMARKS.md, "Webhooks").
 * Housekeeping jobs start at most maxMs later.
 */
export async function catchUp(pool: Pool, maxMs: number): Promise<void> {
  const until = performance.now() + maxMs;
  // A failed look is no reason to wait: pg-boss's own start says whether the database is there.
  const waiting = () => somethingWaiting(pool).catch(() => false);
  while ((await waiting()) && performance.now() + CATCH_UP_POLL_MS < until) {
    await sleep(CATCH_UP_POLL_MS);
  }
}

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
  // The gauges read the pool: they stop before it ends.
  const unobserve = telemetry.metrics ? observeWorker(telemetry.metrics, pool, log) : undefined;
  const endPool = async () => {
    unobserve?.();
    await pool.end();
  };
  // The week's partitions now, not at the job's next turn (a worker started days after the last release).
  await ensurePartitions(pool);
  // The deliveries and e-mails first: they need no pg-boss, which is loaded and started once what was
  // waiting has gone out (catchUp).
  const notifier = new Notifier(databaseUrl, log);
  const loops = [startMailer({ pool, config, log }, notifier), startWebhooks({ pool, config, log }, notifier)];
  const stopLoops = async () => {
    await Promise.all(loops.map((l) => l.stop()));
    await notifier.stop();
  };
  let running: { boss: PgBoss; jobs: string[] };
  try {
    await notifier.start();
    await catchUp(pool, CATCH_UP_MAX_MS);
    running = await startJobs(databaseUrl, { pool, config, log });
  } catch (error) {
    await stopLoops();
    await endPool();
    throw error;
  }
  const { boss } = running;
  log.info({ jobs: running.jobs }, 'worker started');
  return {
    boss,
    async stop() {
      await stopLoops();
      await boss.stop({ graceful: true, timeout: Math.max(1_000, config.SHUTDOWN_GRACE_MS - 2_000) });
      await endPool();
    },
  };
}

/** pg-boss and the jobs it runs, loaded only now (catchUp): started, with the jobs' names. */
async function startJobs(databaseUrl: string, loopDeps: LoopDeps): Promise<{ boss: PgBoss; jobs: string[] }> {
  const [{ createBoss }, { jobs }] = await Promise.all([import('#shared/boss.ts'), import('./jobs/index.ts')]);
  const boss = createBoss(databaseUrl);
  // pg-boss reports its own failures (lost connections, maintenance errors) here; without a
  // listener they would crash the process.
  boss.on('error', (error: unknown) => loopDeps.log.error({ err: error }, 'pg-boss error'));
  try {
    await boss.start();
    await retireQueues(boss);
    const deps: WorkerDeps = { ...loopDeps, boss };
    for (const job of jobs) {
      await boss.createQueue(job.name, job.queue ?? {});
      if (job.cron) await boss.schedule(job.name, job.cron);
      await boss.work(job.name, { batchSize: job.work?.batchSize ?? 1, pollingIntervalSeconds: job.work?.pollingIntervalSeconds ?? 2 }, (batch) =>
        inJobSpan(job.name, batch, () => job.handler(batch, deps)),
      );
    }
  } catch (error) {
    await boss.stop({ graceful: false }).catch(() => undefined);
    throw error;
  }
  return { boss, jobs: jobs.map((j) => j.name) };
}

/**
 * Queues of earlier versions, gone with their schedules: webhook deliveries were pg-boss jobs of
 * `webhook-delivery` until migration 0015 (what it still holds runs under the deliveries' own leases
 * now), and the partitions job was `particoes-adiante` until migration 0025, whose schedule would go on
 * making jobs no worker takes.
 */
const RETIRED_QUEUES = ['webhook-delivery', 'particoes-adiante'] as const;

async function retireQueues(boss: PgBoss): Promise<void> {
  for (const name of RETIRED_QUEUES) {
    await boss.unschedule(name);
    await boss.deleteQueue(name);
  }
}

if (import.meta.main) {
  const config = loadConfigOrExit(process.env, { role: 'worker' });
  const log = createLogger(config.LOG_LEVEL, 'worker');
  // Before the pool: its statements are traced only if tracing is on when it is made.
  const exporting = await startTelemetryOrExit('worker', log);
  // The signals are handled from the first moment: a SIGTERM while pg-boss still loads (it waits
  // for catchUp) stops the worker gracefully once started, instead of killing it halfway.
  const started = startWorker(config, requireDatabaseUrl(config.DATABASE_URL, 'worker'), log);
  stopOnSignals(log, config.SHUTDOWN_GRACE_MS, async () => {
    await (await started).stop();
    await exporting.stop();
  });
  await started;
}
