// What a web process owes the limit counters after its requests: releasing the concurrency slots of
// finished requests, keeping the slots of running ones alive, and settling what a request was
// charged beyond its final cost. All of it batched, off the request path.
import { Nothing, sql, type Pool } from '#shared/db/pool.ts';
import type { Logger } from '#shared/log.ts';
import { untraced } from '#shared/telemetry/spans.ts';
import type { Settlement } from './limits.ts';

/** Finished requests whose slots are still counted: one entry per request. */
export type Releases = { contas: string[]; chaves: string[] };

/**
 * Releases ride on the next admission batch (takeReleases), which applies them under the accounts'
 * locks before it counts slots; a short timer writes them on their own when no batch comes.
 * Settlements only give back, so their small delay can never let a ceiling be passed.
 */
export class LimitsBookkeeper {
  readonly holder: string;
  #releases: Releases = { contas: [], chaves: [] };
  #settlements: Settlement[] = [];
  #timer: NodeJS.Timeout | null = null;
  #heartbeat: NodeJS.Timeout;
  #flushing: Promise<void> | null = null;
  readonly #pool: Pool;
  readonly #log: Logger;

  constructor(pool: Pool, log: Logger, holder: string) {
    this.#pool = pool;
    this.#log = log;
    this.holder = holder;
    // Slots expire 30 s after they are taken unless renewed: renewing every 10 s keeps long
    // requests counted while a dead process's slots still free themselves within 30 s.
    this.#heartbeat = setInterval(() => void this.#renew(), 10_000);
    this.#heartbeat.unref();
  }

  /** A request of this key finished on this process: its slot is given back. */
  release(contaId: string, chaveId: string): void {
    this.#releases.contas.push(contaId);
    this.#releases.chaves.push(chaveId);
    // Within 2 ms when no admission batch takes it first: another process may be about to admit
    // this account's next request.
    this.#schedule(2);
  }

  /** Every release waiting, for the admission batch about to be sent. */
  takeReleases(): Releases {
    const taken = this.#releases;
    this.#releases = { contas: [], chaves: [] };
    return taken;
  }

  /** A batch that carried these releases did not commit: they wait for the next one. */
  returnReleases(releases: Releases): void {
    for (let i = 0; i < releases.chaves.length; i++) this.release(releases.contas[i] ?? '', releases.chaves[i] ?? '');
  }

  settle(settlement: Settlement | null): void {
    if (!settlement) return;
    this.#settlements.push(settlement);
    this.#schedule(5);
  }

  #schedule(delayMs: number): void {
    if (this.#timer) return;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      void this.flush();
    }, delayMs);
  }

  async flush(): Promise<void> {
    if (this.#flushing) return this.#flushing;
    this.#flushing = untraced(() => this.#write()).finally(() => {
      this.#flushing = null;
    });
    return this.#flushing;
  }

  /** Writes everything pending, including what arrives while a write is under way. */
  async drain(): Promise<void> {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    do await this.flush();
    while (this.#releases.chaves.length || this.#settlements.length);
  }

  async close(): Promise<void> {
    clearInterval(this.#heartbeat);
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    await this.flush();
    if (this.#releases.chaves.length || this.#settlements.length) await this.flush();
  }

  async #write(): Promise<void> {
    const releases = this.takeReleases();
    const settlements = this.#settlements.splice(0);
    try {
      if (releases.chaves.length) {
        // Named statements (this one and api_settle's): they run every few milliseconds under load.
        await this.#pool.query(sql.prepared('api_release', Nothing)`
          SELECT FROM api_release(${this.holder}, ${sql.array(releases.contas, 'uuid')}, ${sql.array(releases.chaves, 'uuid')})`);
      }
      if (settlements.length) await this.#writeSettlements(settlements);
    } catch (error) {
      this.#log.warn({ err: error }, 'limits bookkeeping failed; will retry');
      this.returnReleases(releases);
      this.#settlements.unshift(...settlements);
      if (this.#timer) clearTimeout(this.#timer);
      this.#timer = null;
      setTimeout(() => this.#schedule(0), 1_000).unref();
    }
  }

  async #writeSettlements(items: Settlement[]): Promise<void> {
    const col = <T>(pick: (s: Settlement) => T) => items.map(pick);
    await this.#pool.query(sql.prepared('api_settle', Nothing)`
      SELECT FROM api_settle(
        ${sql.array(col((s) => s.charge.chaveId), 'uuid')}, ${sql.array(col((s) => s.charge.contaId), 'uuid')},
        ${sql.array(col((s) => s.charge.classe), 'text')}, ${sql.array(col((s) => s.charge.windowStart), 'timestamptz')},
        ${sql.array(col((s) => s.charge.mes), 'date')}, ${sql.array(col((s) => s.burst), 'int4')},
        ${sql.array(col((s) => s.minute), 'int4')}, ${sql.array(col((s) => s.month), 'int4')},
        ${sql.array(col((s) => s.readCharge), 'int4')})`);
  }

  async #renew(): Promise<void> {
    try {
      // Rows an admission holds right now are being renewed by it: skip them rather than wait
      // (waiting here while holding other rows could close a circle of waits).
      await this.#pool.query(sql.typeAlias('void')`
        UPDATE request_slots SET expires_at = now() + interval '30 seconds'
         WHERE (holder, chave_id) IN (SELECT holder, chave_id FROM request_slots WHERE holder = ${this.holder} FOR UPDATE SKIP LOCKED)`);
      // Rows of processes long gone (their counts stopped mattering 30 s after they died).
      await this.#pool.query(sql.typeAlias('void')`DELETE FROM request_slots WHERE expires_at < now() - interval '1 hour'`);
    } catch (error) {
      this.#log.warn({ err: error }, 'renewing request slots failed');
    }
  }
}
