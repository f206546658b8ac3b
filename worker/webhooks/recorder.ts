// Records delivery outcomes in batches: whatever finished while the previous batch was being
// written goes into the next one, in ONE statement with the attempts and the endpoints' runs of
// failures (in a transaction with the endpoints it disables, and their creators' e-mails, when an
// outcome disables one). A crash before that commit leaves the deliveries under a lease that runs
// out; they are then taken and sent again (at least once), the first try left in the log as
// interrupted.
import { clock } from '../../shared/clock.ts';
import { recordResults, type DeliveryResult, type EndpointRuns } from '../../shared/db/deliveries.ts';
import type { Db, Pool } from '../../shared/db/pool.ts';
import { desativarEndpoints } from '../../shared/db/webhooks.ts';
import { FAILING_DAYS_BEFORE_DISABLE, type MotivoDesativacao } from '../../shared/domain/webhooks.ts';
import type { Logger } from '../../shared/log.ts';
import { turnBatch } from './turn-batch.ts';

/** An attempt's outcome, with its endpoint's run of failures as it was when the delivery was taken. */
export type Finished = { result: DeliveryResult; failingSince: string | null };

export type Recorder = { record(entry: Finished): Promise<void> };

const MAX_BATCH = 500;
// Two batches may be written at once: they touch different deliveries, and the database has more
// than one core. A deadlock on a shared endpoint row is retried like any failure.
const PARALLEL = 2;
const RETRIES = [100, 500, 2_000];

type Disable = { contaId: string; endpointId: string; motivo: MotivoDesativacao };

export function startRecorder(deps: { pool: Pool; log: Logger }): Recorder {
  // Outcomes finishing in the same turn of the event loop share a statement.
  const record = turnBatch<Finished, void>(async (batch) => {
    await writeWithRetries(batch);
    return batch.map(() => undefined);
  }, { max: MAX_BATCH, parallel: PARALLEL });

  async function writeWithRetries(batch: Finished[]): Promise<void> {
    const { runs, disable } = endpointsAfter(batch);
    const results = batch.map((e) => e.result);
    const write = (db: Db) => recordResults(db, results, runs);
    for (let attempt = 0; ; attempt++) {
      try {
        if (disable.length === 0) await write(deps.pool);
        else {
          await deps.pool.transaction(async (tx) => {
            await write(tx);
            const disabled = await desativarEndpoints(tx, disable);
            for (const e of disabled) deps.log.warn({ endpoint: e.id, conta: e.conta_id, motivo: e.desativado_motivo }, 'webhook endpoint disabled');
          });
        }
        return;
      } catch (error) {
        const wait = RETRIES[attempt];
        if (wait === undefined) {
          // The leases stay: once they run out, the deliveries are sent again.
          deps.log.error({ err: error, deliveries: batch.length }, 'webhook outcomes not recorded; their deliveries will run again');
          return;
        }
        deps.log.warn({ err: error, deliveries: batch.length }, 'recording webhook outcomes failed; retrying');
        await new Promise((resolve) => setTimeout(resolve, wait));
      }
    }
  }

  return { record };
}

/**
 * What a batch of outcomes says of their endpoints: a success ends a run of failures, a failure
 * starts one (at its earliest attempt) unless one is running, and an endpoint is disabled by a 410
 * or by a failure when its run is 5 days old.
 */
function endpointsAfter(batch: readonly Finished[]): { runs: EndpointRuns; disable: Disable[] } {
  const ok = new Map<string, { contaId: string; endpointId: string }>();
  for (const { result: r } of batch) {
    if (r.status === 'succeeded') ok.set(r.endpointId, { contaId: r.contaId, endpointId: r.endpointId });
  }
  const failing = new Map<string, { contaId: string; endpointId: string; since: Date; failingSince: string | null }>();
  const disable: Disable[] = [];
  const limit = clock.nowMs() - FAILING_DAYS_BEFORE_DISABLE * 86_400_000;
  for (const { result: r, failingSince } of batch) {
    if (r.status === 'succeeded') continue;
    // A 410 disables the endpoint whatever else happened in this batch.
    if (r.disable) disable.push({ contaId: r.contaId, endpointId: r.endpointId, motivo: r.disable });
    if (ok.has(r.endpointId)) continue;
    const seen = failing.get(r.endpointId);
    const since = r.attempt.startedAt;
    if (!seen || since < seen.since) failing.set(r.endpointId, { contaId: r.contaId, endpointId: r.endpointId, since, failingSince });
  }
  for (const f of failing.values()) {
    if (f.failingSince && Date.parse(f.failingSince) <= limit) disable.push({ contaId: f.contaId, endpointId: f.endpointId, motivo: 'falhas_5_dias' });
  }
  // Every success is passed on (the statement only touches endpoints with a run of failures): a run
  // started by a concurrent batch after this delivery was taken must end too.
  return {
    runs: { healthy: [...ok.values()], failing: [...failing.values()].filter((f) => f.failingSince === null) },
    disable,
  };
}
