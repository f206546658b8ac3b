// Records delivery outcomes in batches: whatever finished while the previous batch was being
// written goes into the next one, in ONE transaction with the attempts, the endpoints' failure
// runs, disabled endpoints (and their creators' e-mails) and the completion of the pg-boss jobs.
// A crash before that commit leaves the jobs active until their heartbeat runs out; pg-boss then
// re-runs them, so an attempt is either recorded with its job completed or made again (at least
// once), its first try left in the log as interrupted.
import type { Job, PgBoss } from 'pg-boss';
import { clock } from '../../shared/clock.ts';
import { bossDb } from '../../shared/db/boss-adapter.ts';
import { markEndpointsFailing, markEndpointsHealthy, recordResults, type DeliveryResult } from '../../shared/db/deliveries.ts';
import type { Pool, Tx } from '../../shared/db/pool.ts';
import { desativarEndpoints } from '../../shared/db/webhooks.ts';
import { FAILING_DAYS_BEFORE_DISABLE, type MotivoDesativacao } from '../../shared/domain/webhooks.ts';
import type { Logger } from '../../shared/log.ts';
import { DELIVERY_QUEUE, type DeliveryJob } from './queue.ts';
import { turnBatch } from './turn-batch.ts';

/** A finished job: its outcome (null when the job no longer carried a delivery) and the endpoint's failure run at load. */
export type Finished = { job: Job<DeliveryJob>; result: DeliveryResult | null; failingSince: string | null };

export type Recorder = { record(entry: Finished): Promise<void> };

const MAX_BATCH = 500;
// Two batches may be written at once: they touch different deliveries and jobs, and the database
// has more than one core. A deadlock on a shared endpoint row is retried like any failure.
const PARALLEL = 2;
const RETRIES = [100, 500, 2_000];

export function startRecorder(deps: { pool: Pool; boss: PgBoss; log: Logger }): Recorder {
  // Outcomes finishing in the same turn of the event loop share a transaction.
  const record = turnBatch<Finished, void>(async (batch) => {
    await writeWithRetries(batch);
    return batch.map(() => undefined);
  }, { max: MAX_BATCH, parallel: PARALLEL });

  async function writeWithRetries(batch: Finished[]): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        await deps.pool.transaction((tx) => write(tx, batch));
        return;
      } catch (error) {
        const wait = RETRIES[attempt];
        if (wait === undefined) {
          // The jobs stay active: once released, their heartbeat stops and they run again.
          deps.log.error({ err: error, jobs: batch.length }, 'webhook outcomes not recorded; their jobs will run again');
          return;
        }
        deps.log.warn({ err: error, jobs: batch.length }, 'recording webhook outcomes failed; retrying');
        await new Promise((resolve) => setTimeout(resolve, wait));
      }
    }
  }

  async function write(tx: Tx, batch: Finished[]): Promise<void> {
    const results = batch.flatMap((e) => (e.result ? [e.result] : []));
    const recorded = await recordResults(tx, results);
    const mine = batch.filter((e) => e.result && recorded.has(e.result.deliveryId));
    await updateEndpoints(tx, mine);
    await deps.boss.complete(DELIVERY_QUEUE, batch.map((e) => ({ id: e.job.id, retryCount: e.job.retryCount })), null, { db: bossDb(tx) });
  }

  async function updateEndpoints(tx: Tx, entries: Finished[]): Promise<void> {
    const attempts = entries.filter((e) => e.result?.kind === 'attempt');
    const ok = new Map<string, { contaId: string; endpointId: string }>();
    for (const e of attempts) {
      if (e.result?.status !== 'succeeded') continue;
      ok.set(e.result.endpointId, { contaId: e.result.contaId, endpointId: e.result.endpointId });
    }
    const failing = new Map<string, { contaId: string; endpointId: string; since: Date; failingSince: string | null }>();
    const disable: { contaId: string; endpointId: string; motivo: MotivoDesativacao }[] = [];
    const limit = clock.nowMs() - FAILING_DAYS_BEFORE_DISABLE * 86_400_000;
    for (const e of attempts) {
      const r = e.result;
      if (!r || r.status === 'succeeded') continue;
      // A 410 disables the endpoint whatever else happened in this batch.
      if (r.disable) disable.push({ contaId: r.contaId, endpointId: r.endpointId, motivo: r.disable });
      if (ok.has(r.endpointId)) continue;
      const seen = failing.get(r.endpointId);
      const since = r.attempt?.startedAt ?? clock.now();
      if (!seen || since < seen.since) failing.set(r.endpointId, { contaId: r.contaId, endpointId: r.endpointId, since, failingSince: e.failingSince });
    }
    for (const f of failing.values()) {
      if (f.failingSince && Date.parse(f.failingSince) <= limit) disable.push({ ...f, motivo: 'falhas_5_dias' });
    }
    // Every success is passed on (the statement only touches endpoints with a run of failures):
    // a run started by a concurrent batch after this delivery was loaded must end too.
    await markEndpointsHealthy(tx, [...ok.values()]);
    await markEndpointsFailing(tx, [...failing.values()].filter((f) => f.failingSince === null));
    const disabled = await desativarEndpoints(tx, disable);
    for (const e of disabled) deps.log.warn({ endpoint: e.id, conta: e.conta_id, motivo: e.desativado_motivo }, 'webhook endpoint disabled');
  }

  return { record };
}
