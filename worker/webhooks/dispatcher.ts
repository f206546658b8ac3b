// Runs delivery jobs. Jobs are fetched from pg-boss in batches sized to the free capacity and each
// one is released as soon as its own outcome is recorded, so a slow receiver holds only its own
// slots, never a whole batch. p-limit bounds requests in flight per process and per endpoint; the
// hourly cap is reserved per account for each fetched batch. Every held job's heartbeat is
// refreshed while it waits, so a dead worker's jobs go back to the queue within seconds (queue.ts),
// and each attempt is recorded before its request goes out (starter.ts).
import pLimit, { type LimitFunction } from 'p-limit';
import type { Job } from 'pg-boss';
import { loadDeliveries, type DeliveryResult, type LoadedDelivery } from '../../shared/db/deliveries.ts';
import { clock } from '../../shared/clock.ts';
import { nextHour } from '../../shared/domain/webhooks.ts';
import type { WorkerDeps } from '../jobs/types.ts';
import type { Notifier } from '../notifier.ts';
import { attemptDelivery } from './attempt.ts';
import type { WebhookHttp } from './http.ts';
import { CHANNEL_JOBS, DELIVERY_QUEUE, HEARTBEAT_TOUCH_MS, ensureDeliveryQueue, heldJobs, refreshHeartbeats, type DeliveryJob } from './queue.ts';
import type { Recorder } from './recorder.ts';
import { Signal } from './signal.ts';
import { createStarter } from './starter.ts';

const POLL_MS = 1_000;

export type Dispatcher = { wake(): void; stop(): Promise<void> };

export function startDispatcher(deps: WorkerDeps, notifier: Notifier, http: WebhookHttp, recorder: Recorder): Dispatcher {
  const { pool, boss, config, log } = deps;
  const capacity = heldJobs(config);
  const minFetch = Math.max(1, Math.floor(capacity / 8));
  const inFlight = pLimit(config.WEBHOOK_CONCURRENCY);
  const perEndpoint = new Map<string, LimitFunction>();
  const jobsAvailable = new Signal();
  const slotFreed = new Signal();
  const batches = new Set<Promise<void>>();
  const start = createStarter(deps);
  /** Jobs fetched and not yet released, by id: what the heartbeat keeps claimed. */
  const holding = new Map<string, Job<DeliveryJob>>();
  let stopped = false;

  const release = (jobs: readonly Job<DeliveryJob>[]) => {
    for (const job of jobs) holding.delete(job.id);
    slotFreed.notify();
  };

  function endpointLimit(endpointId: string): LimitFunction {
    let limit = perEndpoint.get(endpointId);
    if (!limit) {
      limit = pLimit(config.WEBHOOK_CONCURRENCY_PER_ENDPOINT);
      perEndpoint.set(endpointId, limit);
    }
    return limit;
  }

  const finish = (job: Job<DeliveryJob>, result: DeliveryResult | null, row: LoadedDelivery | null) =>
    recorder.record({ job, result, failingSince: row?.falhando_desde ?? null }).finally(() => release([job]));

  /** The attempt, once recorded as started; what became of the job when it could not start (starter.ts). */
  async function attempt(job: Job<DeliveryJob>, row: LoadedDelivery): Promise<DeliveryResult | 'lost' | 'gone'> {
    const started = await start(job);
    return typeof started === 'number' ? attemptDelivery(row, started, http, config.baseUrl) : started;
  }

  function without(row: LoadedDelivery, kind: 'deferred' | 'closed'): DeliveryResult {
    const base = { contaId: row.conta_id, deliveryId: row.id, jobId: row.job_id, endpointId: row.endpoint_id, attempt: null, disable: null };
    return kind === 'deferred'
      ? { ...base, kind, status: 'pending', nextAttemptAt: nextHour(clock.now()), lastError: null }
      : { ...base, kind, status: 'failed', nextAttemptAt: null, lastError: 'endpoint desativado' };
  }

  async function handle(jobs: Job<DeliveryJob>[]): Promise<void> {
    let rows: readonly LoadedDelivery[];
    try {
      rows = await loadDeliveries(pool, jobs.map((j) => ({ contaId: j.data.c, deliveryId: j.data.d, jobId: j.id })));
    } catch (error) {
      // Failed jobs are retried by pg-boss after its retry delay.
      log.error({ err: error, jobs: jobs.length }, 'loading webhook deliveries failed');
      await boss.fail(DELIVERY_QUEUE, jobs.map((j) => ({ id: j.id, retryCount: j.retryCount }))).catch(() => undefined);
      release(jobs);
      return;
    }
    const granted = new Map(rows.map((r) => [r.conta_id, r.concedidas]));
    const byJob = new Map(rows.map((r) => [r.job_id, r]));
    const pending: Promise<void>[] = [];
    for (const job of jobs) {
      const row = byJob.get(job.id);
      // A job its delivery no longer names (stale or duplicated) is only completed.
      if (!row) pending.push(finish(job, null, null));
      else if (!row.ativo) pending.push(finish(job, without(row, 'closed'), row));
      else if ((granted.get(row.conta_id) ?? 0) <= 0) pending.push(finish(job, without(row, 'deferred'), row));
      else {
        granted.set(row.conta_id, (granted.get(row.conta_id) ?? 0) - 1);
        const limit = endpointLimit(row.endpoint_id);
        const attempted = limit(() => inFlight(() => attempt(job, row))).finally(() => {
          if (limit.activeCount === 0 && limit.pendingCount === 0) perEndpoint.delete(row.endpoint_id);
        });
        pending.push(
          attempted.then(
            // A job whose claim was lost is someone else's now: only let go of it. One whose
            // delivery moved on is done, like a stale job at load.
            (result) => (result === 'lost' ? release([job]) : finish(job, result === 'gone' ? null : result, row)),
            (error: unknown) => {
              // Not completed: its heartbeat stops and it runs again (a started attempt shows as interrupted).
              log.error({ err: error, delivery: row.id }, 'webhook attempt crashed');
              release([job]);
            },
          ),
        );
      }
    }
    await Promise.all(pending);
  }

  const loop = (async () => {
    while (!stopped) {
      const free = capacity - holding.size;
      if (free < minFetch) {
        await slotFreed.wait(POLL_MS);
        continue;
      }
      let jobs: Job<DeliveryJob>[] = [];
      try {
        await ensureDeliveryQueue(boss, config);
        jobsAvailable.reset();
        jobs = await boss.fetch<DeliveryJob>(DELIVERY_QUEUE, { batchSize: free });
      } catch (error) {
        log.error({ err: error }, 'fetching webhook jobs failed');
        await jobsAvailable.wait(POLL_MS);
        continue;
      }
      if (jobs.length > 0) {
        for (const job of jobs) holding.set(job.id, job);
        const batch = handle(jobs).finally(() => batches.delete(batch));
        batches.add(batch);
      }
      // A short batch drained the queue: wait for new jobs (or the next poll).
      if (jobs.length < free && !stopped) await jobsAvailable.wait(POLL_MS);
    }
  })();

  notifier.on(CHANNEL_JOBS, () => jobsAvailable.notify());

  // The held jobs' heartbeat: one statement for all of them. A job this worker no longer holds is
  // found again by its start (starter.ts), which then does not send it.
  const heartbeat = setInterval(() => {
    refreshHeartbeats(boss, [...holding.values()]).catch((error: unknown) => log.warn({ err: error }, 'refreshing webhook jobs\' heartbeat failed'));
  }, HEARTBEAT_TOUCH_MS);

  return {
    wake: () => jobsAvailable.notify(),
    async stop() {
      stopped = true;
      clearInterval(heartbeat);
      jobsAvailable.notify();
      slotFreed.notify();
      await loop;
      // Every outcome is recorded within its batch's promise.
      await Promise.all([...batches]);
    },
  };
}
