// What a worker holds: the deliveries it took and has not yet released, counted in all and per
// endpoint, and which endpoints may have more due than it could take. The dispatcher
// (dispatcher.ts) asks it what to take next (bounds) and tells it what each take brought (noteTaken).
import type { Config } from '#shared/config.ts';
import type { TakeLimits, TakenDelivery } from '#shared/db/deliveries.ts';
import type { Outcomes } from '#shared/db/outcomes.ts';
import { LEASE_MS } from './lease.ts';

/** A delivery this worker took: held until its outcome is recorded or it is given back. */
export type Held = {
  row: TakenDelivery;
  /** performance.now() when the last statement that confirmed the lease was sent. */
  confirmedAt: number;
  /** Another worker took it after the lease ran out: it must not be sent. */
  lost: boolean;
  /** Its request has ended: only its outcome is left to write, which the next take or relay pass may do. */
  finished: boolean;
};

export type HoldLimits = ReturnType<typeof holdLimits>;

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
    /** The fewest free places worth a take of their own. */
    minTake: Math.max(1, Math.floor((4 * config.WEBHOOK_CONCURRENCY) / 8)),
  };
}

export class Holdings {
  readonly #limits: HoldLimits;
  /** Called when there is room to take more of what may be waiting. */
  readonly #onRoom: () => void;
  readonly #held = new Map<string, Held>();
  readonly #heldPerEndpoint = new Map<string, number>();
  /** Of those held, the ones finished: places the next take frees as it writes their outcomes. */
  readonly #finished = { total: 0, perEndpoint: new Map<string, number>() };
  /**
   * Endpoints whose last take stopped at their bound (or that the take left out, full): they may
   * have more due, to take once they have room. The worker too (cappedTotal), when its last take
   * stopped at its total. Room elsewhere wakes nobody: a take that found less than it could have has taken all.
   */
  readonly #capped = new Set<string>();
  #cappedTotal = false;

  constructor(limits: HoldLimits, onRoom: () => void) {
    this.#limits = limits;
    this.#onRoom = onRoom;
  }

  hold(row: TakenDelivery, confirmedAt: number): Held {
    const h = { row, confirmedAt, lost: false, finished: false };
    this.#held.set(row.id, h);
    countUp(this.#heldPerEndpoint, row.endpoint_id);
    return h;
  }

  release(h: Held): void {
    this.#held.delete(h.row.id);
    countDown(this.#heldPerEndpoint, h.row.endpoint_id);
    if (h.finished) {
      this.#finished.total--;
      countDown(this.#finished.perEndpoint, h.row.endpoint_id);
    }
    this.#wakeIfRoom(h.row.endpoint_id);
  }

  /** Its request ended: the next take may write its outcome and use its place. */
  finish(h: Held): void {
    h.finished = true;
    this.#finished.total++;
    countUp(this.#finished.perEndpoint, h.row.endpoint_id);
    this.#wakeIfRoom(h.row.endpoint_id);
  }

  /** Enough places are free for a take of their own. */
  hasRoom(): boolean {
    return this.#limits.total - this.#busy() >= this.#limits.minTake;
  }

  /** The deliveries held whose leases are still this worker's. */
  current(): Held[] {
    return [...this.#held.values()].filter((h) => !h.lost);
  }

  /** After a renewal sent at `sentAt`: those it renewed are confirmed, the others (still held) lost. */
  confirm(renewed: readonly Held[], still: ReadonlySet<string>, sentAt: number): void {
    for (const h of renewed) {
      if (still.has(h.row.id)) h.confirmedAt = Math.max(h.confirmedAt, sentAt);
      else if (this.#held.has(h.row.id)) h.lost = true;
    }
  }

  /**
   * What the worker may take now: its free places in all and per endpoint (0: full, left out), the
   * places of the deliveries whose outcomes the same statement writes counted free.
   */
  bounds(writing: Outcomes | undefined, stopped: boolean): TakeLimits {
    const limits = this.#limits;
    const freed = new Map<string, number>();
    for (const r of writing?.results ?? []) countUp(freed, r.endpointId);
    const free = stopped ? 0 : limits.total - this.#held.size + (writing?.results.length ?? 0);
    const endpoints = new Map<string, number>();
    for (const [endpointId, n] of this.#heldPerEndpoint) {
      const left = limits.perEndpoint - n + (freed.get(endpointId) ?? 0);
      endpoints.set(endpointId, left >= limits.refill ? left : 0);
    }
    // Enough candidates for a few endpoints' worth at a time: ranking hundreds of one endpoint's
    // backlog to take its few free places cost more than the take itself.
    const scan = Math.min(free, 4 * limits.perEndpoint);
    return { limit: free, scan, perEndpoint: limits.perEndpoint, endpoints, leaseMs: LEASE_MS };
  }

  /**
   * Notes who may have more after a take (seen 'all': it saw every due delivery, and replaces the
   * notes) or a relay pass (seen 'new': it saw only the deliveries it made, and adds to them).
   */
  noteTaken(rows: readonly TakenDelivery[], asked: TakeLimits, seen: 'all' | 'new'): void {
    const got = new Map<string, number>();
    for (const row of rows) countUp(got, row.endpoint_id);
    if (seen === 'all') this.#capped.clear();
    for (const [endpointId, bound] of asked.endpoints) if (bound === 0) this.#capped.add(endpointId);
    for (const [endpointId, n] of got) if (n >= (asked.endpoints.get(endpointId) ?? asked.perEndpoint)) this.#capped.add(endpointId);
    this.#cappedTotal = (seen === 'new' && this.#cappedTotal) || rows.length >= asked.limit;
  }

  /** Places taken: those held, less those finished (a take writes their outcomes and frees them). */
  #busy(): number {
    return this.#held.size - this.#finished.total;
  }

  #busyAt(endpointId: string): number {
    return (this.#heldPerEndpoint.get(endpointId) ?? 0) - (this.#finished.perEndpoint.get(endpointId) ?? 0);
  }

  // Room to take more of an endpoint that has more, or of any: the loop takes once for any number of these.
  #wakeIfRoom(endpointId: string): void {
    const { perEndpoint, refill, total, minTake } = this.#limits;
    const endpointRoom = this.#capped.has(endpointId) && perEndpoint - this.#busyAt(endpointId) >= refill;
    if (endpointRoom || (this.#cappedTotal && total - this.#busy() >= minTake)) this.#onRoom();
  }
}

function countUp(counts: Map<string, number>, key: string): void {
  counts.set(key, (counts.get(key) ?? 0) + 1);
}

/** One less of `key` in a map of counts (the key leaves the map at zero). */
function countDown(counts: Map<string, number>, key: string): void {
  const left = (counts.get(key) ?? 1) - 1;
  if (left === 0) counts.delete(key);
  else counts.set(key, left);
}
