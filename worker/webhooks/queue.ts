// The pg-boss queue that carries delivery attempts. One job per attempt that is due now, inserted
// in batches in the same transaction as the deliveries it stands for; the schedule itself
// (retries, the hourly cap) lives in deliveries.next_attempt_at, where operators can see and move it.
import type { Job, PgBoss } from 'pg-boss';
import type { Config } from '../../shared/config.ts';
import { bossDb } from '../../shared/db/boss-adapter.ts';
import type { NewDelivery } from '../../shared/db/outbox.ts';
import type { Tx } from '../../shared/db/pool.ts';

export const DELIVERY_QUEUE = 'webhook-delivery';
/** Channels the webhook loops wake on (besides polling). */
export const CHANNEL_OUTBOX = 'outbox';
export { CHANNEL_DUE, CHANNEL_JOBS } from '../../shared/db/outbox.ts';

export type DeliveryJob = { c: string; d: string };

/**
 * Jobs a worker holds at once, from fetch until their outcome is recorded: four times the requests
 * in flight, so the next ones are ready when one ends and outcomes are written in large batches
 * (measured: 2× held drained about 20 % fewer deliveries per second).
 */
export function heldJobs(config: Config): number {
  return 4 * config.WEBHOOK_CONCURRENCY;
}

/**
 * A dead worker's jobs go back to the queue when their heartbeat is this old (pg-boss fails them
 * and they run again at once, with the same webhook-id; pg-boss allows no less than 10). The worker
 * refreshes its held jobs' every HEARTBEAT_TOUCH_MS and at each attempt's start, so a live worker
 * loses a job only after a stall of two refreshes (and then does not send it: starter.ts). pg-boss
 * checks heartbeats every BOSS_MONITOR_SECONDS (shared/boss.ts): after a SIGKILL, a job is back
 * within 10 + 5 s, and fetched at the next poll.
 */
export const HEARTBEAT_SECONDS = 10;
export const HEARTBEAT_TOUCH_MS = 3_000;

/**
 * A held job may wait behind its endpoint's concurrency limit, so expiry allows for a worker full
 * of one slow endpoint's deliveries: a live worker's heartbeat keeps its jobs, and expiry is only
 * the backstop for a job whose heartbeat never stops.
 */
export function deliveryQueueOptions(config: Config) {
  const rounds = Math.ceil(heldJobs(config) / config.WEBHOOK_CONCURRENCY_PER_ENDPOINT);
  return {
    heartbeatSeconds: HEARTBEAT_SECONDS,
    expireInSeconds: Math.min(3_600, rounds * Math.ceil(config.WEBHOOK_TIMEOUT_MS / 1000) + 60),
    // A job fails only when its worker dies; retried at once by whoever fetches next.
    retryLimit: 100,
    retryDelay: 1,
    // Completed jobs are kept ten minutes (deliveries and delivery_attempts are the lasting record),
    // so the job table pg-boss counts at every monitor pass stays small.
    deleteAfterSeconds: 600,
  };
}

const ready = new WeakMap<PgBoss, Promise<void>>();

export function ensureDeliveryQueue(boss: PgBoss, config: Config): Promise<void> {
  let done = ready.get(boss);
  if (!done) {
    done = (async () => {
      const options = deliveryQueueOptions(config);
      await boss.createQueue(DELIVERY_QUEUE, options);
      await boss.updateQueue(DELIVERY_QUEUE, options);
    })();
    done.catch(() => ready.delete(boss));
    ready.set(boss, done);
  }
  return done;
}

/** Inserts the jobs of these deliveries in the caller's transaction (which also notifies CHANNEL_JOBS). */
export async function enqueueJobs(tx: Tx, boss: PgBoss, deliveries: readonly NewDelivery[]): Promise<void> {
  if (deliveries.length === 0) return;
  await boss.insert(
    DELIVERY_QUEUE,
    deliveries.map((d) => ({ id: d.job_id, data: { c: d.conta_id, d: d.id } satisfies DeliveryJob })),
    { db: bossDb(tx) },
  );
}

/**
 * Refreshes the heartbeat of jobs this worker holds, each fenced to the fetch that handed it over
 * (a job another worker holds now is left alone; its start finds it lost: starter.ts).
 */
export async function refreshHeartbeats(boss: PgBoss, jobs: readonly Job<DeliveryJob>[]): Promise<void> {
  if (jobs.length === 0) return;
  await boss.touch(DELIVERY_QUEUE, jobs.map((j) => ({ id: j.id, retryCount: j.retryCount })));
}
