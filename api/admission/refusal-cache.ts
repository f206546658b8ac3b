// Refusals a web process may answer without the database. A token that is no valid key (401) stays
// so: tokens are made by the service, so one presented before it existed cannot become a key, and a
// revoked or expired key does not come back. A suspended key (403) stays so until its suspension
// ends. So the process remembers these answers for a short while and repeats them without a round
// trip: a client hammering with a bad or suspended key, whatever it ignores, costs PostgreSQL
// nothing (measured in BENCHMARKS.md, "A bad neighbour").
//
// Bounded: at most MAX_ENTRIES, the least recently used dropped first. A suspension is remembered
// for at most SUSPENSION_MS, so one an operator lifts by hand is honoured within that time.
//
// A remembered refusal is held for a while before it is sent (REFUSAL_DELAY_MS): a client that
// ignores Retry-After and asks again the moment it is answered would otherwise take as much of the
// process's CPU as it is quick to answer, at the expense of every other account (BENCHMARKS.md, "A
// bad neighbour"). Holding costs a timer, not CPU; at most MAX_HELD are held at once, the rest are
// answered at once.
import { setTimeout as sleep } from 'node:timers/promises';
import { clock } from '#shared/clock.ts';
import type { AdmissionRow } from './admission-row.ts';

export const MAX_ENTRIES = 10_000;
export const UNKNOWN_MS = 60_000;
export const SUSPENSION_MS = 5_000;
export const MAX_HELD = 256;

export class RefusalCache {
  readonly #entries = new Map<string, { row: AdmissionRow; until: number }>();
  readonly #max: number;
  readonly #delayMs: number;
  #held = 0;

  constructor(options: { max?: number; delayMs?: number } = {}) {
    this.#max = options.max ?? MAX_ENTRIES;
    this.#delayMs = options.delayMs ?? 0;
  }

  /** Waits before a remembered refusal is sent, unless MAX_HELD are waiting already. */
  async hold(): Promise<void> {
    if (this.#delayMs === 0 || this.#held >= MAX_HELD) return;
    this.#held++;
    try {
      await sleep(this.#delayMs);
    } finally {
      this.#held--;
    }
  }

  /** The remembered answer for this token hash, or null. */
  lookup(tokenHash: Buffer): AdmissionRow | null {
    const id = tokenHash.toString('base64');
    const entry = this.#entries.get(id);
    if (!entry) return null;
    this.#entries.delete(id);
    if (entry.until <= clock.nowMs()) return null;
    this.#entries.set(id, entry); // most recently used last
    return entry.row;
  }

  /** Keeps the answer when it is one the database would give again. */
  remember(tokenHash: Buffer, row: AdmissionRow): void {
    const until = this.#expiry(row);
    if (until === null) return;
    const id = tokenHash.toString('base64');
    this.#entries.delete(id);
    this.#entries.set(id, { row, until });
    if (this.#entries.size > this.#max) {
      const oldest = this.#entries.keys().next().value;
      if (oldest !== undefined) this.#entries.delete(oldest);
    }
  }

  get size(): number {
    return this.#entries.size;
  }

  #expiry(row: AdmissionRow): number | null {
    const now = clock.nowMs();
    if (row.outcome === 'nao_autenticado') return now + UNKNOWN_MS;
    if (row.reason === 'chave_suspensa' && row.suspended_until) {
      return Math.min(Date.parse(row.suspended_until), now + SUSPENSION_MS);
    }
    return null;
  }
}
