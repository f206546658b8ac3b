// One background job: its pg-boss queue, optional cron schedule, and the handler.
import type { Job as BossJob, PgBoss } from 'pg-boss';
import type { Config } from '#shared/config.ts';
import type { Pool } from '#shared/db/pool.ts';
import type { Logger } from '#shared/log.ts';

export type WorkerDeps = { pool: Pool; config: Config; log: Logger; boss: PgBoss };
/** What the worker's own loops (webhooks, mail) use: they run before, and without, pg-boss. */
export type LoopDeps = Omit<WorkerDeps, 'boss'>;

export type JobDef<T = object> = {
  name: string;
  /** Cron expression (UTC) when the job runs on a schedule. */
  cron?: string;
  queue?: { retryLimit?: number; retryDelay?: number; retryBackoff?: boolean; expireInSeconds?: number };
  work?: { batchSize?: number; pollingIntervalSeconds?: number };
  handler: (jobs: BossJob<T>[], deps: WorkerDeps) => Promise<void>;
};

// The job list holds jobs of different payload types; pg-boss hands each its own.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyJob = JobDef<any>;
