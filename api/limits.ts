// The process side of the limits of contract §8: rate-limit headers, releasing concurrency slots,
// keeping this process's slots alive, and settling what a request was charged beyond its final cost.
import { serializeList } from 'structured-headers';
import { sql, type Pool } from '../shared/db/pool.ts';
import type { Logger } from '../shared/log.ts';
import type { Cost } from './routes/types.ts';

/** The per-minute counter a cost class is charged to (contract §8.2: expensive counts as reads). */
export const minuteClass = (cost: Cost): 'leitura' | 'escrita' => (cost.classe === 'write' ? 'escrita' : 'leitura');

export type LimitState = {
  rajada: { q: number; w: number; r: number; t: number };
  minuto: { q: number; r: number; t: number };
  mes: { q: number; r: number; t: number };
};

export const MONTH_WINDOW_SECONDS = 2_592_000;

/** RateLimit-Policy and RateLimit (contract §8.3) as RFC 9651 lists. */
export function rateLimitHeaders(state: LimitState): Record<string, string> {
  // Names are sf-strings ("rajada"), as the contract's shape shows.
  const policy = serializeList([
    ['rajada', new Map([['q', state.rajada.q], ['w', state.rajada.w]])],
    ['minuto', new Map([['q', state.minuto.q], ['w', 60]])],
    ['mes', new Map([['q', state.mes.q], ['w', MONTH_WINDOW_SECONDS]])],
  ]);
  const closest = (['rajada', 'minuto', 'mes'] as const)
    .map((name) => ({ name, ...state[name] }))
    .sort((a, b) => a.r / a.q - b.r / b.q || a.r - b.r)[0] ?? { name: 'mes', r: 0, t: 0 };
  const current = serializeList([
    [closest.name, new Map([['r', Math.max(0, Math.trunc(closest.r))], ['t', Math.max(0, Math.trunc(closest.t))]])],
  ]);
  return { 'RateLimit-Policy': policy, RateLimit: current };
}

/** What admission charged a request, kept to settle it later. */
export type Charge = {
  chaveId: string;
  contaId: string;
  classe: 'leitura' | 'escrita';
  windowStart: string;
  mes: string;
  units: number;
};

/** How a request ended up costing less than it was charged. */
export type Billing = 'not_modified' | 'replay' | { units: number };

type Settlement = { charge: Charge; burst: number; minute: number; month: number; readCharge: number };

export function settlementFor(charge: Charge, billing: Billing): Settlement | null {
  if (billing === 'not_modified' || billing === 'replay') {
    // Contract §8.2: 1 in the burst, 0 in the month, counted as a read.
    const readCharge = charge.classe === 'leitura' ? 0 : 1;
    const minute = charge.classe === 'leitura' ? charge.units - 1 : charge.units;
    return { charge, burst: charge.units - 1, minute, month: charge.units, readCharge };
  }
  const refund = charge.units - Math.min(charge.units, billing.units);
  return refund > 0 ? { charge, burst: refund, minute: refund, month: refund, readCharge: 0 } : null;
}

/**
 * Batches settlements and slot releases. Releases ride on the next admission query (see
 * takeReleases); a short timer writes them when no admission comes. Settlements only give back,
 * so their small delay can never let a ceiling be passed.
 */
export class LimitsBookkeeper {
  readonly holder: string;
  /** Finished requests whose slot is still counted: one key id per request, by account. */
  #releases = new Map<string, string[]>();
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

  // Which account a token belongs to, learnt from admissions, so the next admission of a key can
  // carry its account's releases (the account is only known to the database otherwise).
  #accountByToken = new Map<string, string>();

  accountOfToken(tokenHash: string): string | undefined {
    return this.#accountByToken.get(tokenHash);
  }

  rememberAccount(tokenHash: string, contaId: string): void {
    if (this.#accountByToken.size >= 50_000) this.#accountByToken.clear();
    this.#accountByToken.set(tokenHash, contaId);
  }

  /** A request of this key finished on this process: its slot is given back. */
  release(contaId: string, chaveId: string): void {
    const pending = this.#releases.get(contaId);
    if (pending) pending.push(chaveId);
    else this.#releases.set(contaId, [chaveId]);
    // Within 2 ms, batched with the others under load: another process may admit this account's
    // next request before any admission here would carry the release.
    this.#schedule(2);
  }

  /** The account's slots to release in its next admission round trip (taken under its lock). */
  takeReleases(contaId: string): string[] {
    const pending = this.#releases.get(contaId) ?? [];
    this.#releases.delete(contaId);
    return pending;
  }

  /** Admission failed before running: its releases go back in the queue. */
  returnReleases(contaId: string, ids: string[]): void {
    for (const id of ids) this.release(contaId, id);
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
    this.#flushing = this.#write().finally(() => {
      this.#flushing = null;
    });
    return this.#flushing;
  }

  /** Writes everything pending, including what arrives while a write is under way. */
  async drain(): Promise<void> {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    do await this.flush();
    while (this.#releases.size || this.#settlements.length);
  }

  async close(): Promise<void> {
    clearInterval(this.#heartbeat);
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    await this.flush();
    if (this.#releases.size || this.#settlements.length) await this.flush();
  }

  async #write(): Promise<void> {
    const releases = [...this.#releases].flatMap(([contaId, keys]) => keys.map((chaveId) => ({ contaId, chaveId })));
    this.#releases.clear();
    const settlements = this.#settlements.splice(0);
    try {
      if (releases.length) {
        await this.#pool.query(sql.typeAlias('void')`
          SELECT FROM api_release(${this.holder}, ${sql.array(releases.map((r) => r.contaId), 'uuid')},
                                  ${sql.array(releases.map((r) => r.chaveId), 'uuid')})`);
      }
      if (settlements.length) await this.#writeSettlements(settlements);
    } catch (error) {
      this.#log.warn({ err: error }, 'limits bookkeeping failed; will retry');
      for (const r of releases) this.release(r.contaId, r.chaveId);
      this.#settlements.unshift(...settlements);
      if (this.#timer) clearTimeout(this.#timer);
      this.#timer = null;
      setTimeout(() => this.#schedule(0), 1_000).unref();
    }
  }

  async #writeSettlements(items: Settlement[]): Promise<void> {
    const col = <T>(pick: (s: Settlement) => T) => items.map(pick);
    await this.#pool.query(sql.typeAlias('void')`
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
