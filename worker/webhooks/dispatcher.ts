// Sends due deliveries. It takes them from the deliveries table under a lease, in batches sized to
// its free capacity, bounded per endpoint so that one endpoint's backlog never fills the worker; the
// statement that takes them records each attempt's start, so no database round trip stands between
// a free slot and its next request. p-limit bounds requests in flight per process and per endpoint.
// Every held lease is renewed every few seconds in one statement; each delivery is held until its
// outcome is recorded. A worker that dies leaves its leases to run out (lease.ts).
import pLimit, { type LimitFunction } from 'p-limit';
import { CHANNEL_DUE, releaseLeases, renewLeases, takeDeliveries, type TakeLimits, type TakenDelivery } from '#shared/db/deliveries.ts';
import type { DeliveryResult, Lease, Outcomes } from '#shared/db/outcomes.ts';
import type { LoopDeps } from '../jobs/types.ts';
import type { Notifier } from '../notifier.ts';
import { attemptDelivery } from './attempt.ts';
import type { WebhookHttp } from './http.ts';
import { Holdings, holdLimits, type Held } from './holdings.ts';
import { LEASE_MS, RENEW_EVERY_MS, SEND_MARGIN_MS } from './lease.ts';
import { lateForItsTime, untilItsTime } from './pace.ts';
import type { Recorder } from './recorder.ts';
import { Signal } from './signal.ts';
import type { Statistics } from './statistics.ts';
import { turnBatch } from './turn-batch.ts';

const POLL_MS = 1_000;

export type Dispatcher = {
  wake(): void;
  /**
   * Runs a relay pass that may take, for this worker, the deliveries it creates within `take`, and
   * writes the outcomes waiting (shared/db/outbox.ts, relayOutbox); the events relayed.
   */
  relay(relayWith: RelayWith): Promise<number>;
  stop(): Promise<void>;
};

type RelayWith = (take: TakeLimits, outcomes?: Outcomes) => Promise<{ relayed: number; taken: readonly TakenDelivery[] }>;
type Parts = { deps: LoopDeps; http: WebhookHttp; recorder: Recorder; statistics: Statistics };

const leaseOf = (row: TakenDelivery): Lease => ({ contaId: row.conta_id, deliveryId: row.id, leaseId: row.lease_id });

export function startDispatcher(deps: LoopDeps, notifier: Notifier, http: WebhookHttp, recorder: Recorder, statistics: Statistics): Dispatcher {
  const dispatcher = new DeliveryDispatcher({ deps, http, recorder, statistics });
  notifier.on(CHANNEL_DUE, () => dispatcher.wake());
  return dispatcher;
}

class DeliveryDispatcher implements Dispatcher {
  readonly #parts: Parts;
  readonly #holdings: Holdings;
  /** The fewest free places worth a take with no outcome to write. */
  readonly #minTake: number;
  readonly #inFlight: LimitFunction;
  readonly #perEndpoint = new Map<string, LimitFunction>();
  /** Deliveries may be due (a notification), or there is room to take more (an endpoint, or the worker, is below its refill mark). */
  readonly #news = new Signal();
  /** The sends of each take, until every one has ended. */
  readonly #batches = new Set<Promise<void>>();
  #stopped = false;
  /** Takes and the relay's takes run one at a time, each from the bounds the other left. */
  #taking: Promise<unknown> = Promise.resolve();
  readonly #giveBack: (lease: Lease) => Promise<void>;
  readonly #loop: Promise<void>;
  readonly #renewal: NodeJS.Timeout;

  constructor(parts: Parts) {
    this.#parts = parts;
    const { pool, config, log } = parts.deps;
    const limits = holdLimits(config);
    this.#holdings = new Holdings(limits, () => this.#news.notify());
    this.#minTake = limits.minTake;
    this.#inFlight = pLimit(config.WEBHOOK_CONCURRENCY);
    this.#giveBack = turnBatch<Lease, void>(async (leases) => {
      await releaseLeases(pool, leases).catch((error: unknown) => log.warn({ err: error }, 'giving back webhook deliveries failed; their leases will run out'));
      return leases.map(() => undefined);
    }, { max: 500, parallel: 1 });
    this.#loop = this.#run();
    this.#renewal = setInterval(() => {
      this.#renew().catch((error: unknown) => log.warn({ err: error }, 'renewing webhook leases failed'));
    }, RENEW_EVERY_MS);
  }

  wake(): void {
    this.#news.notify();
  }

  relay(relayWith: RelayWith): Promise<number> {
    return this.#oneAtATime(async () => {
      const { asked, sentAt, result: { relayed, taken } } = await this.#takeWriting(relayWith);
      this.#adopt(taken, asked, sentAt, 'new');
      return relayed;
    });
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#news.notify();
    await this.#loop;
    // Deliveries not yet sent are given back; those in flight are recorded.
    await Promise.all([...this.#batches]);
    clearInterval(this.#renewal);
  }

  async #run(): Promise<void> {
    while (!this.#stopped) {
      if (!this.#holdings.hasRoom()) {
        await this.#news.wait(POLL_MS);
        continue;
      }
      this.#news.reset();
      let short = true;
      try {
        ({ short } = await this.#take());
      } catch (error) {
        this.#parts.deps.log.error({ err: error }, 'taking webhook deliveries failed');
      }
      // What was due is taken, or the endpoints it belongs to are full: wait for news or room.
      if (short && !this.#stopped) await this.#news.wait(POLL_MS);
    }
  }

  /** Takes what it may now; how many it took and whether it asked for more than it got. */
  #take(): Promise<{ taken: number; short: boolean }> {
    const { deps: { pool }, statistics } = this.#parts;
    const minTake = this.#minTake;
    return this.#oneAtATime(async () => {
      const { asked, sentAt, result: rows } = await this.#takeWriting((t, outcomes) =>
        // No outcome to write and no room worth a statement: the places the loop counted free are
        // outcomes being written alone, and free once they are.
        (outcomes === undefined && t.limit < minTake ? null : takeDeliveries(pool, t, outcomes)));
      if (rows === null) return { taken: 0, short: true };
      // Due deliveries beyond what it read: a backlog of retries or replays, with no relay pass to say so.
      if (rows.length >= asked.scan) statistics.backlog();
      this.#adopt(rows, asked, sentAt, 'all');
      return { taken: rows.length, short: rows.length < asked.scan };
    });
  }

  #oneAtATime<T>(work: () => Promise<T>): Promise<T> {
    const run = this.#taking.then(work);
    this.#taking = run.catch(() => undefined);
    return run;
  }

  /**
   * Runs a take or a relay pass from the bounds left, writing the outcomes waiting in the same
   * statement (recorder.claim): settled with the statement, or written alone when it fails.
   */
  async #takeWriting<T>(run: (asked: TakeLimits, outcomes: Outcomes | undefined) => Promise<T> | T) {
    const claim = this.#parts.recorder.claim();
    const asked = this.#holdings.bounds(claim?.outcomes, this.#stopped);
    const sentAt = performance.now();
    try {
      const result = await run(asked, claim?.outcomes);
      claim?.settle();
      return { asked, sentAt, result };
    } catch (error) {
      claim?.settle(error);
      throw error;
    }
  }

  /** Holds and sends what a take (or the relay, for this worker) took, and notes who may have more. */
  #adopt(rows: readonly TakenDelivery[], asked: TakeLimits, sentAt: number, seen: 'all' | 'new'): void {
    this.#holdings.noteTaken(rows, asked, seen);
    const work = rows.map((row) => this.#dispatch(this.#holdings.hold(row, sentAt)));
    if (work.length === 0) return;
    const batch = Promise.all(work).then(() => undefined).finally(() => this.#batches.delete(batch));
    this.#batches.add(batch);
  }

  /**
   * Sends a held delivery, at its time when its endpoint is throttled (pace.ts), within the limits of
   * requests in flight, then records its outcome: the limits bound requests, so the next request to
   * the endpoint goes out while this one's outcome is being written (the delivery stays held, under
   * its lease, until it is).
   */
  #dispatch(h: Held): Promise<void> {
    const limit = this.#endpointLimit(h.row.endpoint_id);
    return untilItsTime(h.row).then(() => limit(() => this.#inFlight(() => this.#send(h))))
      .then((result) => {
        if (!result) return undefined;
        this.#holdings.finish(h);
        return this.#parts.recorder.record({ result, failingSince: h.row.falhando_desde });
      })
      .catch((error: unknown) => {
        // Not recorded: its lease runs out and it is sent again (a started attempt shows as interrupted).
        this.#parts.deps.log.error({ err: error, delivery: h.row.id }, 'webhook attempt crashed');
      })
      .finally(() => {
        this.#holdings.release(h);
        if (limit.activeCount === 0 && limit.pendingCount === 0) this.#perEndpoint.delete(h.row.endpoint_id);
      });
  }

  /** Sends one held delivery, or gives it back unsent (null). */
  async #send(h: Held): Promise<DeliveryResult | null> {
    const fresh = performance.now() - h.confirmedAt < LEASE_MS - SEND_MARGIN_MS;
    if (h.lost) return null;
    if (this.#stopped || !fresh || lateForItsTime(h.row)) {
      await this.#giveBack(leaseOf(h.row));
      return null;
    }
    return attemptDelivery(h.row, this.#parts.http, this.#parts.deps.config.baseUrl);
  }

  #endpointLimit(endpointId: string): LimitFunction {
    let limit = this.#perEndpoint.get(endpointId);
    if (!limit) {
      limit = pLimit(this.#parts.deps.config.WEBHOOK_CONCURRENCY_PER_ENDPOINT);
      this.#perEndpoint.set(endpointId, limit);
    }
    return limit;
  }

  /** Every held lease, renewed in one statement; one that another worker took meanwhile is lost. */
  async #renew(): Promise<void> {
    const current = this.#holdings.current();
    if (current.length === 0) return;
    const sentAt = performance.now();
    const still = await renewLeases(this.#parts.deps.pool, current.map((h) => leaseOf(h.row)), LEASE_MS);
    this.#holdings.confirm(current, still, sentAt);
  }
}
