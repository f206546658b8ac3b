// Records delivery outcomes. An outcome waits a moment for the next statement the worker runs anyway
// (a take of due deliveries, or a relay pass), which writes it too (claim): at a steady rate each
// event then costs one statement and one commit, not two. What no statement claims within WAIT_MS is
// written alone, in batches: whatever finished while the previous batch was being written goes into
// the next one, in ONE statement with the attempts and the endpoints' runs of failures (in a
// transaction with the endpoints it disables, and their creators' e-mails, when an outcome disables
// one; such outcomes are never claimed). A crash before that commit leaves the deliveries under a
// lease that runs out; they are then taken and sent again (at least once), the first try left in the
// log as interrupted.
import { clock } from '#shared/clock.ts';
import { recordResults, type DeliveryResult, type EndpointRuns, type Outcomes } from '#shared/db/outcomes.ts';
import type { Db, Pool } from '#shared/db/pool.ts';
import { desativarEndpoints } from '#shared/db/webhooks.ts';
import { FAILING_DAYS_BEFORE_DISABLE, type MotivoDesativacao } from '#shared/domain/webhooks.ts';
import type { Logger } from '#shared/log.ts';
import { turnBatch } from './turn-batch.ts';

/** An attempt's outcome, with its endpoint's run of failures as it was when the delivery was taken. */
export type Finished = { result: DeliveryResult; failingSince: string | null };

/** Outcomes a statement about to run writes; it says how that went with settle (an error: they are written alone). */
export type Claim = { outcomes: Outcomes; settle(error?: unknown): void };

export type Recorder = {
  /** Settles once the outcome is written (or, after every retry failed, left to its lease). */
  record(entry: Finished): Promise<void>;
  /** The outcomes waiting (none that disable an endpoint), for the statement about to run; null when none. */
  claim(): Claim | null;
};

const MAX_BATCH = 500;
/**
 * How long an outcome waits for a statement to join: relay passes come at most 10 ms apart while
 * events arrive (relay.ts, RELAY_SPACING_MS), so at a steady rate the next one comes within that;
 * much longer only keeps the delivery, and its place in the worker's bounds, held.
 */
const WAIT_MS = 20;
// Two batches may be written at once: they touch different deliveries, and the database has more
// than one core. A deadlock on a shared endpoint row is retried like any failure.
const PARALLEL = 2;
const RETRIES = [100, 500, 2_000];

type Disable = { contaId: string; endpointId: string; motivo: MotivoDesativacao };
type Waiting = { entry: Finished; resolve: () => void; reject: (error: unknown) => void };

export function startRecorder(deps: { pool: Pool; log: Logger }): Recorder {
  // Outcomes written alone: those finishing in the same turn of the event loop share a statement.
  const writeAlone = turnBatch<Finished, void>(async (batch) => {
    await writeWithRetries(deps, batch);
    return batch.map(() => undefined);
  }, { max: MAX_BATCH, parallel: PARALLEL });

  let waiting: Waiting[] = [];
  let timer: NodeJS.Timeout | null = null;

  function alone(batch: readonly Waiting[]): void {
    for (const w of batch) writeAlone(w.entry).then(w.resolve, w.reject);
  }

  /** The outcomes waiting, which stop waiting. */
  function drain(): Waiting[] {
    if (timer) clearTimeout(timer);
    timer = null;
    const batch = waiting;
    waiting = [];
    return batch;
  }

  const flush = () => alone(drain());

  return {
    record: (entry) => new Promise<void>((resolve, reject) => {
      waiting.push({ entry, resolve, reject });
      if (waiting.length >= MAX_BATCH) flush();
      else timer ??= setTimeout(flush, WAIT_MS);
    }),
    claim() {
      if (waiting.length === 0) return null;
      const { runs, disable } = endpointsAfter(waiting.map((w) => w.entry));
      if (disable.length > 0) return null;
      const batch = drain();
      return {
        outcomes: { results: batch.map((w) => w.entry.result), runs },
        settle(error?: unknown) {
          if (error === undefined) for (const w of batch) w.resolve();
          else alone(batch);
        },
      };
    },
  };
}

/** Writes a batch of outcomes (and disables the endpoints they disable), retried a few times before leaving it to the leases. */
async function writeWithRetries(deps: { pool: Pool; log: Logger }, batch: Finished[]): Promise<void> {
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
