// The process side of the limits of contract §8: the counter a cost is charged to, the rate-limit
// headers, and what a request that cost less than it was charged gets back.
import { serializeList } from 'structured-headers';
import type { Cost } from './cost.ts';

/** The per-minute counter a cost class is charged to (contract §8.2: expensive counts as reads). */
export const minuteClass = (cost: Cost): 'leitura' | 'escrita' => (cost.classe === 'write' ? 'escrita' : 'leitura');

export type LimitState = {
  rajada: { q: number; w: number; r: number; t: number };
  minuto: { q: number; r: number; t: number };
  mes: { q: number; r: number; t: number };
};

export const MONTH_WINDOW_SECONDS = 2_592_000;

// A policy is the same for every request of a plan: serialized once per set of ceilings.
const policies = new Map<string, string>();

function policyHeader(state: LimitState): string {
  const key = `${state.rajada.q}/${state.rajada.w}/${state.minuto.q}/${state.mes.q}`;
  let policy = policies.get(key);
  if (policy === undefined) {
    // Names are sf-strings ("rajada"), as the contract's shape shows.
    policy = serializeList([
      ['rajada', new Map([['q', state.rajada.q], ['w', state.rajada.w]])],
      ['minuto', new Map([['q', state.minuto.q], ['w', 60]])],
      ['mes', new Map([['q', state.mes.q], ['w', MONTH_WINDOW_SECONDS]])],
    ]);
    if (policies.size >= 1000) policies.clear();
    policies.set(key, policy);
  }
  return policy;
}

// Whole non-negative integers below 10^15: a parameter an sf-integer takes as it is written.
const sfInteger = (n: number) => Math.min(999_999_999_999_999, Math.max(0, Math.trunc(n)));

/** RateLimit-Policy and RateLimit (contract §8.3) as RFC 9651 lists. */
export function rateLimitHeaders(state: LimitState): Record<string, string> {
  let name: keyof LimitState = 'rajada';
  for (const other of ['minuto', 'mes'] as const) {
    const a = state[name];
    const b = state[other];
    if (b.r / b.q < a.r / a.q || (b.r / b.q === a.r / a.q && b.r < a.r)) name = other;
  }
  const closest = state[name];
  return {
    'RateLimit-Policy': policyHeader(state),
    RateLimit: `"${name}";r=${sfInteger(closest.r)};t=${sfInteger(closest.t)}`,
  };
}

/** What admission charged a request, kept to settle it later. */
export type Charge = {
  chaveId: string;
  contaId: string;
  classe: 'leitura' | 'escrita';
  windowStart: string;
  mes: string;
  /** Units of the burst and of the minute counter of `classe`. */
  units: number;
  /** Units of the month: 0 for a repetition. */
  month: number;
  /** Admission knew the request for a repetition and charged it as one (contract §8.2). */
  repeticao: boolean;
};

/** How a request ended up costing less than it was charged. */
export type Billing = 'not_modified' | 'replay' | { units: number };

export type Settlement = { charge: Charge; burst: number; minute: number; month: number; readCharge: number };

export function settlementFor(charge: Charge, billing: Billing): Settlement | null {
  if (billing === 'not_modified' || billing === 'replay') {
    // Contract §8.2: 1 in the burst, 0 in the month, counted as a read. Admission charged just that
    // when it knew the request for a repetition; when it did not (the record or the version came
    // about in between), the difference goes back.
    if (charge.repeticao) return null;
    const readCharge = charge.classe === 'leitura' ? 0 : 1;
    const minute = charge.classe === 'leitura' ? charge.units - 1 : charge.units;
    return { charge, burst: charge.units - 1, minute, month: charge.month, readCharge };
  }
  const refund = charge.units - Math.min(charge.units, billing.units);
  return refund > 0 ? { charge, burst: refund, minute: refund, month: Math.min(refund, charge.month), readCharge: 0 } : null;
}
