// Sends due deliveries. It takes them from the deliveries table under a lease, in batches sized to
// its free capacity, bounded per endpoint so that one endpoint's backlog never fills the worker; the
// statement that takes them records each attempt's start, so no database round trip stands between
// a free slot and its next request. p-limit bounds requests in flight per process and per endpoint.
// Every held lease is renewed every few seconds in one statement; each delivery is held until its
// outcome is recorded. A worker that dies leaves its leases to run out (lease.ts).
import pLimit, { type LimitFunction } from 'p-limit';
import { CHANNEL_DUE, releaseLeases, renewLeases, takeDeliveries, type TakeLimits, type TakenDelivery } from '../../shared/db/deliveries.ts';
import type { DeliveryResult, Lease, Outcomes } from '../../shared/db/outcomes.ts';
import type { Config } from '../../shared/config.ts';
import type { LoopDeps } from '../jobs/types.ts';
import type { Notifier } from '../notifier.ts';
import { attemptDelivery } from './attempt.ts';
import type { WebhookHttp } from './http.ts';
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
  relay(relayWith: (take: TakeLimits, outcomes?: Outcomes) => Promise<{ relayed: number; taken: readonly TakenDelivery[] }>): Promise<number>;
  stop(): Promise<void>;
};

/** A delivery this worker took: held until its outcome is recorded or it is given back. */
type Held = {
  row: TakenDelivery;
  /** performance.now() when the last statement that confirmed the lease was sent. */
  confirmedAt: number;
  /** Another worker took it after the lease ran out: it must not be sent. */
  lost: boolean;
  /** Its request has ended: only its outcome is left to write, which the next take or relay pass may do. */
  finished: boolean;
};

/**
 * How many deliveries a worker holds: four times its requests in flight in all, and three times an
 * endpoint's concurrency of one endpoint. An endpoint is taken from once a concurrency's worth of
 * its places is free, and that take's round trip lasts about as long as a request: with twice, its
 * requests waited for it and its slots sat idle; four times was no faster than three (BENCHMARKS.md,
 * "Webhooks"). A crash interrupts at most that many attempts to an endpoint; only those in flight
 * may have reached it.
 */
export function holdLimits(config: Config) {
  return {
    total: 4 * config.WEBHOOK_CONCURRENCY,
    perEndpoint: 3 * config.WEBHOOK_CONCURRENCY_PER_ENDPOINT,
    /** An endpoint is taken from again once this many of its places are free. */
    refill: config.WEBHOOK_CONCURRENCY_PER_ENDPOINT,
  };
}

/** One less of `key` in a map of counts (the key leaves the map at zero). */
function countDown(counts: Map<string, number>, key: string): void {
  const left = (counts.get(key) ?? 1) - 1;
  if (left === 0) counts.delete(key);
  else counts.set(key, left);
}

const leaseOf = (row: TakenDelivery): Lease => ({ contaId: row.conta_id, deliveryId: row.id, leaseId: row.lease_id });

export function startDispatcher(deps: LoopDeps, notifier: Notifier, http: WebhookHttp, recorder: Recorder, statistics: Statistics): Dispatcher {
  const { pool, config, log } = deps;
  const limits = holdLimits(config);
  const minTake = Math.max(1, Math.floor(limits.total / 8));
  const inFlight = pLimit(config.WEBHOOK_CONCURRENCY);
  const perEndpoint = new Map<string, LimitFunction>();
  const held = new Map<string, Held>();
  const heldPerEndpoint = new Map<string, number>();
  /** Of those held, the ones finished (Held.finished): places the next take frees as it writes their outcomes. */
  const finished = { total: 0, perEndpoint: new Map<string, number>() };
  /**
   * Endpoints whose last take stopped at their bound (or that the take left out, full): they may
   * have more due, to take once they have room. The worker too, when its last take stopped at its
   * total. Room elsewhere wakes nobody: a take that found less than it could have has taken all.
   */
  const capped = new Set<string>();
  let cappedTotal = false;
  /** Deliveries may be due (a notification), or there is room to take more (an endpoint, or the worker, is below its refill mark). */
  const news = new Signal();
  const batches = new Set<Promise<void>>();
  let stopped = false;

  const giveBack = turnBatch<Lease, void>(async (leases) => {
    await releaseLeases(pool, leases).catch((error: unknown) => log.warn({ err: error }, 'giving back webhook deliveries failed; their leases will run out'));
    return leases.map(() => undefined);
  }, { max: 500, parallel: 1 });

  function hold(row: TakenDelivery, confirmedAt: number): Held {
    const h = { row, confirmedAt, lost: false, finished: false };
    held.set(row.id, h);
    heldPerEndpoint.set(row.endpoint_id, (heldPerEndpoint.get(row.endpoint_id) ?? 0) + 1);
    return h;
  }

  function release(h: Held): void {
    held.delete(h.row.id);
    countDown(heldPerEndpoint, h.row.endpoint_id);
    if (h.finished) {
      finished.total--;
      countDown(finished.perEndpoint, h.row.endpoint_id);
    }
    wakeIfRoom(h.row.endpoint_id);
  }

  /** Its request ended: the next take may write its outcome and use its place. */
  function finish(h: Held): void {
    h.finished = true;
    finished.total++;
    finished.perEndpoint.set(h.row.endpoint_id, (finished.perEndpoint.get(h.row.endpoint_id) ?? 0) + 1);
    wakeIfRoom(h.row.endpoint_id);
  }

  /** Places taken: those held, less those finished (a take writes their outcomes and frees them). */
  const busy = () => held.size - finished.total;
  const busyAt = (endpointId: string) => (heldPerEndpoint.get(endpointId) ?? 0) - (finished.perEndpoint.get(endpointId) ?? 0);

  // Room to take more of an endpoint that has more, or of any: the loop takes once for any number of these.
  function wakeIfRoom(endpointId: string): void {
    const room = (capped.has(endpointId) && limits.perEndpoint - busyAt(endpointId) >= limits.refill) || (cappedTotal && limits.total - busy() >= minTake);
    if (room) news.notify();
  }

  function endpointLimit(endpointId: string): LimitFunction {
    let limit = perEndpoint.get(endpointId);
    if (!limit) {
      limit = pLimit(config.WEBHOOK_CONCURRENCY_PER_ENDPOINT);
      perEndpoint.set(endpointId, limit);
    }
    return limit;
  }

  /** Sends one held delivery, or gives it back unsent (null). */
  async function send(h: Held): Promise<DeliveryResult | null> {
    const fresh = performance.now() - h.confirmedAt < LEASE_MS - SEND_MARGIN_MS;
    if (h.lost) return null;
    if (stopped || !fresh || lateForItsTime(h.row)) {
      await giveBack(leaseOf(h.row));
      return null;
    }
    return attemptDelivery(h.row, http, config.baseUrl);
  }

  /**
   * Sends a held delivery, at its time when its endpoint is throttled (pace.ts), within the limits of
   * requests in flight, then records its outcome: the limits bound requests, so the next request to
   * the endpoint goes out while this one's outcome is being written (the delivery stays held, under
   * its lease, until it is).
   */
  function dispatch(h: Held): Promise<void> {
    const limit = endpointLimit(h.row.endpoint_id);
    return untilItsTime(h.row).then(() => limit(() => inFlight(() => send(h))))
      .then((result) => {
        if (!result) return undefined;
        finish(h);
        return recorder.record({ result, failingSince: h.row.falhando_desde });
      })
      .catch((error: unknown) => {
        // Not recorded: its lease runs out and it is sent again (a started attempt shows as interrupted).
        log.error({ err: error, delivery: h.row.id }, 'webhook attempt crashed');
      })
      .finally(() => {
        release(h);
        if (limit.activeCount === 0 && limit.pendingCount === 0) perEndpoint.delete(h.row.endpoint_id);
      });
  }

  /**
   * What the worker may take now: its free places in all and per endpoint (0: full, left out), the
   * places of the deliveries whose outcomes the same statement writes counted free.
   */
  function bounds(writing: Outcomes | undefined): TakeLimits {
    const freed = new Map<string, number>();
    for (const r of writing?.results ?? []) freed.set(r.endpointId, (freed.get(r.endpointId) ?? 0) + 1);
    const free = stopped ? 0 : limits.total - held.size + (writing?.results.length ?? 0);
    const endpoints = new Map<string, number>();
    for (const [endpointId, n] of heldPerEndpoint) {
      const left = limits.perEndpoint - n + (freed.get(endpointId) ?? 0);
      endpoints.set(endpointId, left >= limits.refill ? left : 0);
    }
    // Enough candidates for a few endpoints' worth at a time: ranking hundreds of one endpoint's
    // backlog to take its few free places cost more than the take itself.
    const scan = Math.min(free, 4 * limits.perEndpoint);
    return { limit: free, scan, perEndpoint: limits.perEndpoint, endpoints, leaseMs: LEASE_MS };
  }

  /**
   * Holds and sends what a take (or the relay, for this worker) took, and notes who may have more:
   * a take sees every due delivery and replaces the notes; the relay sees only the deliveries it
   * made, and adds to them.
   */
  function adopt(rows: readonly TakenDelivery[], asked: TakeLimits, sentAt: number, seen: 'all' | 'new'): void {
    const got = new Map<string, number>();
    for (const row of rows) got.set(row.endpoint_id, (got.get(row.endpoint_id) ?? 0) + 1);
    if (seen === 'all') capped.clear();
    for (const [endpointId, bound] of asked.endpoints) if (bound === 0) capped.add(endpointId);
    for (const [endpointId, n] of got) if (n >= (asked.endpoints.get(endpointId) ?? asked.perEndpoint)) capped.add(endpointId);
    cappedTotal = (seen === 'new' && cappedTotal) || rows.length >= asked.limit;
    const work = rows.map((row) => dispatch(hold(row, sentAt)));
    if (work.length > 0) {
      const batch = Promise.all(work).then(() => undefined).finally(() => batches.delete(batch));
      batches.add(batch);
    }
  }

  // Takes and the relay's takes run one at a time, each from the bounds the other left.
  let taking: Promise<unknown> = Promise.resolve();
  function oneAtATime<T>(work: () => Promise<T>): Promise<T> {
    const run = taking.then(work);
    taking = run.catch(() => undefined);
    return run;
  }

  /**
   * Runs a take or a relay pass from the bounds left, writing the outcomes waiting in the same
   * statement (recorder.claim): settled with the statement, or written alone when it fails.
   */
  async function takeWriting<T>(run: (asked: TakeLimits, outcomes: Outcomes | undefined) => Promise<T> | T) {
    const claim = recorder.claim();
    const asked = bounds(claim?.outcomes);
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

  /** Takes what it may now; how many it took and whether it asked for more than it got. */
  const take = () => oneAtATime(async (): Promise<{ taken: number; short: boolean }> => {
    const { asked, sentAt, result: rows } = await takeWriting((t, outcomes) =>
      // No outcome to write and no room worth a statement: the places the loop counted free are
      // outcomes being written alone, and free once they are.
      (outcomes === undefined && t.limit < minTake ? null : takeDeliveries(pool, t, outcomes)));
    if (rows === null) return { taken: 0, short: true };
    // Due deliveries beyond what it read: a backlog of retries or replays, with no relay pass to say so.
    if (rows.length >= asked.scan) statistics.backlog();
    adopt(rows, asked, sentAt, 'all');
    return { taken: rows.length, short: rows.length < asked.scan };
  });

  const loop = (async () => {
    while (!stopped) {
      if (limits.total - busy() < minTake) {
        await news.wait(POLL_MS);
        continue;
      }
      news.reset();
      let short = true;
      try {
        ({ short } = await take());
      } catch (error) {
        log.error({ err: error }, 'taking webhook deliveries failed');
      }
      // What was due is taken, or the endpoints it belongs to are full: wait for news or room.
      if (short && !stopped) await news.wait(POLL_MS);
    }
  })();

  notifier.on(CHANNEL_DUE, () => news.notify());

  // Every held lease, renewed in one statement; one that another worker took meanwhile is lost.
  async function renew(): Promise<void> {
    const current = [...held.values()].filter((h) => !h.lost);
    if (current.length === 0) return;
    const sentAt = performance.now();
    const still = await renewLeases(pool, current.map((h) => leaseOf(h.row)), LEASE_MS);
    for (const h of current) {
      if (still.has(h.row.id)) h.confirmedAt = Math.max(h.confirmedAt, sentAt);
      else if (held.has(h.row.id)) h.lost = true;
    }
  }
  const renewal = setInterval(() => {
    renew().catch((error: unknown) => log.warn({ err: error }, 'renewing webhook leases failed'));
  }, RENEW_EVERY_MS);

  return {
    wake: () => news.notify(),
    relay: (relayWith) => oneAtATime(async () => {
      const { asked, sentAt, result: { relayed, taken } } = await takeWriting(relayWith);
      adopt(taken, asked, sentAt, 'new');
      return relayed;
    }),
    async stop() {
      stopped = true;
      news.notify();
      await loop;
      // Deliveries not yet sent are given back; those in flight are recorded.
      await Promise.all([...batches]);
      clearInterval(renewal);
    },
  };
}
