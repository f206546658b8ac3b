// A reference model of admission (contract §8;
// docs/decisions/0009-cost-units-classes-and-windows.md), small enough to be read against the
// contract line by line: what test/limits-model.test.ts compares api_admit (alone and in batches)
// with, step by step. It knows nothing of blocks, batches, locks or tables: per key a token bucket,
// a count of consecutive refusals and a suspension; per account a window of each class and the
// month; slots per serving process.
//
// Time is model seconds. The calendar minute and month move only with their own steps (the test
// moves the database's timestamps, not its clock, so the position inside the minute stays put);
// buckets, slots and suspensions move with every step.

export type Plan = {
  rajada: number; recarga: number; leituras: number; escritas: number; mes: number; porChave: number; porConta: number;
};
export type Classe = 'leitura' | 'escrita';
/**
 * live: a process that renews its slots and gives them back; dead: one that crashed holding them;
 * none: the rest of the price of a request already in flight (a top-up), which takes no slot.
 */
export type Holder = 'live' | 'dead' | 'none';
export type Request = {
  key: string | null; custo: number; classe: Classe; escopoAusente: boolean;
  /** Units of the month when not `custo` (never capped at the burst); null: the same. */
  custoMes?: number | null;
  /** Known before charging for a repetition (a completed Idempotency-Key, a current ETag): §8.2's price. */
  repeticao?: boolean;
};

/** What the database answers, in the terms both sides can compute. */
export type Answer = {
  outcome: string;
  reason?: string | null;
  retry_after?: number | null;
  slot_held?: boolean;
  /** Seconds until the suspension this answer reports ends (null: none). */
  suspended_for?: number | null;
  repeticao?: boolean;
  rajada_r?: number; rajada_t?: number; minuto_r?: number; mes_r?: number;
};

type KeyState = {
  conta: string; tokens: number; refilledAt: number; recusas: number; suspendedUntil: number | null;
  /** When its creator was last e-mailed about a suspension. */
  emailedAt: number | null;
};
type Window = { used: number };
type AccountState = { windows: Record<Classe, Window>; month: number; emails: number };
type DeadSlots = { inFlight: number; expiresAt: number };

export const SUSPEND_AFTER = 20;
const DAY_SECONDS = 86_400;
export const SUSPENSION_SECONDS = 900;
const SLOT_LEASE_SECONDS = 30;

export class AdmissionModel {
  t = 0;
  readonly keys = new Map<string, KeyState>();
  readonly accounts = new Map<string, AccountState>();
  /** Slots of the live process per key: in flight, and finished but not yet given back. */
  readonly live = new Map<string, { inFlight: number; finished: number }>();
  readonly dead = new Map<string, DeadSlots>();
  /** What admission finds when it looks for a repetition: completed Idempotency-Keys (key|idempotency key|path) and record versions. */
  readonly records = new Set<string>();
  suspensions = 0;
  readonly versions = new Map<string, number>();

  readonly plan: Plan;
  /** Seconds to the end of the calendar minute and month, as the database's clock stands. */
  readonly minuteLeft: number;
  readonly monthLeft: number;

  constructor(plan: Plan, minuteLeft: number, monthLeft: number) {
    this.plan = plan;
    this.minuteLeft = minuteLeft;
    this.monthLeft = monthLeft;
  }

  addAccount(conta: string, month: number): void {
    this.accounts.set(conta, { windows: { leitura: { used: 0 }, escrita: { used: 0 } }, month, emails: 0 });
  }

  addKey(key: string, conta: string): void {
    this.keys.set(key, { conta, tokens: this.plan.rajada, refilledAt: 0, recusas: 0, suspendedUntil: null, emailedAt: null });
    this.live.set(key, { inFlight: 0, finished: 0 });
  }

  #account(key: KeyState): AccountState {
    const account = this.accounts.get(key.conta);
    if (!account) throw new Error(`no account ${key.conta}`);
    return account;
  }

  #tokens(key: KeyState): number {
    return Math.min(this.plan.rajada, key.tokens + (this.t - key.refilledAt) * this.plan.recarga);
  }

  #slots(key: string): number {
    const dead = this.dead.get(key);
    return (this.live.get(key)?.inFlight ?? 0) + (dead && dead.expiresAt > this.t ? dead.inFlight : 0);
  }

  #accountSlots(conta: string): number {
    return [...this.keys].filter(([, k]) => k.conta === conta).reduce((n, [id]) => n + this.#slots(id), 0);
  }

  /** The live process gives back the slots of its finished requests (it does so with its next call). */
  giveBack(): void {
    for (const slots of this.live.values()) {
      slots.inFlight -= slots.finished;
      slots.finished = 0;
    }
  }

  finish(key: string): void {
    const slots = this.live.get(key);
    if (!slots || slots.inFlight - slots.finished <= 0) throw new Error(`no request of ${key} in flight`);
    slots.finished++;
  }

  canFinish(key: string): boolean {
    const slots = this.live.get(key);
    return !!slots && slots.inFlight - slots.finished > 0;
  }

  admit(request: Request, holder: Holder): Answer {
    const key = request.key === null ? undefined : this.keys.get(request.key);
    if (!key || request.key === null) return { outcome: 'nao_autenticado' };
    if (key.suspendedUntil !== null && key.suspendedUntil <= this.t) {
      key.suspendedUntil = null;
      key.recusas = 0;
    }
    if (key.suspendedUntil !== null) {
      return { outcome: 'escopo_insuficiente', reason: 'chave_suspensa', retry_after: null, suspended_for: key.suspendedUntil - this.t };
    }
    if (request.escopoAusente) return { outcome: 'escopo_insuficiente', reason: 'escopo', retry_after: null, suspended_for: null };

    const account = this.#account(key);
    const plan = this.plan;
    // Contract §8.2: a repetition costs 1 in the burst, 0 in the month, and counts as a read.
    const classe = request.repeticao ? 'leitura' : request.classe;
    const custo = request.repeticao ? 1 : Math.min(request.custo, plan.rajada);
    const custoMes = request.repeticao ? 0 : (request.custoMes ?? custo);
    const window = account.windows[classe];
    const ceiling = classe === 'escrita' ? plan.escritas : plan.leituras;
    let tokens = this.#tokens(key);
    const noSlot = holder === 'none';
    const limite = !noSlot && (this.#slots(request.key) >= plan.porChave || this.#accountSlots(key.conta) >= plan.porConta) ? 'simultaneas'
      : tokens < custo ? 'rajada'
        : window.used + custo > ceiling ? 'minuto'
          : custoMes > 0 && account.month + custoMes > plan.mes ? 'mes' : null;

    let suspendedFor: number | null = null;
    let retry: number | null = null;
    if (limite === null) {
      tokens -= custo;
      key.tokens = tokens;
      key.refilledAt = this.t;
      window.used += custo;
      account.month += custoMes;
      key.recusas = 0;
      this.#take(request.key, holder);
    } else {
      retry = limite === 'simultaneas' ? 1
        : limite === 'rajada' ? Math.ceil((custo - tokens) / plan.recarga)
          : limite === 'minuto' ? this.minuteLeft : this.monthLeft;
      key.recusas++;
      if (key.recusas >= SUSPEND_AFTER) {
        key.suspendedUntil = this.t + SUSPENSION_SECONDS;
        suspendedFor = SUSPENSION_SECONDS;
        this.suspensions++;
        // Its creator is told at most once a day, however often the key is suspended.
        if (key.emailedAt === null || this.t - key.emailedAt >= DAY_SECONDS) {
          key.emailedAt = this.t;
          account.emails++;
        }
      }
    }
    return {
      outcome: limite === null ? 'ok' : 'limite_excedido', reason: limite, retry_after: retry, slot_held: limite === null,
      suspended_for: suspendedFor, repeticao: request.repeticao === true,
      rajada_r: Math.floor(tokens), rajada_t: Math.ceil((plan.rajada - tokens) / plan.recarga),
      minuto_r: Math.max(0, ceiling - window.used), mes_r: Math.max(0, plan.mes - account.month),
    };
  }

  #take(key: string, holder: Holder): void {
    if (holder === 'none') return;
    if (holder === 'live') {
      const slots = this.live.get(key);
      if (slots) slots.inFlight++;
      return;
    }
    const dead = this.dead.get(key);
    const live = dead && dead.expiresAt > this.t;
    this.dead.set(key, { inFlight: (live ? dead.inFlight : 0) + 1, expiresAt: Math.max(dead?.expiresAt ?? 0, this.t + SLOT_LEASE_SECONDS) });
  }

  /**
   * A request admitted at this instant turned out to be a 304 or an idempotent repetition (§8.2):
   * 1 in the burst, 0 in the month, counted as a read.
   */
  settleAsRepetition(key: string, custo: number, classe: Classe, custoMes: number | null = null): void {
    const state = this.keys.get(key);
    if (!state) throw new Error(`no key ${key}`);
    const account = this.#account(state);
    const charged = Math.min(custo, this.plan.rajada);
    state.tokens = Math.min(this.plan.rajada, state.tokens + charged - 1);
    account.month -= custoMes ?? charged;
    account.windows[classe].used -= charged;
    account.windows.leitura.used = Math.min(this.plan.leituras, account.windows.leitura.used + 1);
  }

  /** Time passes within the calendar minute. */
  tick(seconds: number): void {
    this.t += seconds;
  }

  /** The next calendar minute (and `minutes` later): the windows start over. */
  nextMinutes(minutes: number): void {
    this.t += 60 * minutes;
    for (const account of this.accounts.values()) account.windows = { leitura: { used: 0 }, escrita: { used: 0 } };
  }

  /** The month's calls as an operator sets them in monthly_usage. */
  setMonth(conta: string, calls: number): void {
    const account = this.accounts.get(conta);
    if (account) account.month = calls;
  }

  nextMonth(): void {
    for (const account of this.accounts.values()) account.month = 0;
  }

  monthOf(conta: string): number {
    return this.accounts.get(conta)?.month ?? 0;
  }

  emailsOf(conta: string): number {
    return this.accounts.get(conta)?.emails ?? 0;
  }
}
