// Admission in batches: every request waiting to be admitted goes to PostgreSQL in one round trip
// (api_admit_batch), with the slot releases of the requests this process finished meanwhile. At
// most LANES batches run at once; what arrives while they run waits for the next one, so a quiet
// process sends batches of one and a loaded one amortizes a round trip, its statements and its
// commit over many requests. Each request still gets exactly the decision it would get alone.
import { z } from 'zod';
import { sql, type Pool } from '../shared/db/pool.ts';
import { indisponivel } from '../shared/errors.ts';
import type { Logger } from '../shared/log.ts';
import type { CircuitBreaker } from './breaker.ts';
import type { LimitsBookkeeper, Releases } from './limits-bookkeeper.ts';
import { settlementFor, type Charge } from './limits.ts';

/**
 * One batch in flight at a time: what arrives meanwhile goes in the next one. Measured
 * (BENCHMARKS.md), a second batch in flight makes both smaller and costs more per request than it
 * saves in waiting. A second one goes only when the first has stalled (waiting on a lock or a
 * slow disk), so one slow batch never holds every request of the process.
 */
const STALL_MS = 20;
/** A bound on one statement's arrays; beyond it the rest waits for the next batch. */
const MAX_BATCH = 500;

// A refusal carries only what it needs (a 401 nothing but its outcome): absent means null.
const maybe = <T extends z.ZodType>(type: T) => type.nullable().default(null);
const int = maybe(z.number().int());
export const AdmissionRow = z.object({
  outcome: z.enum(['ok', 'nao_autenticado', 'escopo_insuficiente', 'limite_excedido', 'indisponivel']),
  reason: maybe(z.string()),
  conta_id: maybe(z.string()),
  chave_id: maybe(z.string()),
  usuario_id: maybe(z.string()),
  plano_id: maybe(z.string()),
  permissoes: maybe(z.array(z.string())),
  slot_held: maybe(z.boolean()),
  retry_after: int,
  suspended_until: maybe(z.string()),
  window_start: maybe(z.string()),
  mes: maybe(z.string()),
  rajada_q: int, rajada_w: int, rajada_r: int, rajada_t: int,
  minuto_q: int, minuto_r: int, minuto_t: int,
  mes_q: int, mes_r: int, mes_t: int,
});
export type AdmissionRow = z.infer<typeof AdmissionRow>;
const BatchResult = z.object({ admissions: z.string() });

export type AdmissionRequest = {
  tokenHash: Buffer;
  escopo: string | null;
  permissao: string | null;
  custo: number;
  classe: 'leitura' | 'escrita';
};

type Waiting = AdmissionRequest & { since: number; resolve(row: AdmissionRow): void; reject(error: unknown): void };

export type AdmissionQueueDeps = { pool: Pool; breaker: CircuitBreaker; limits: LimitsBookkeeper; log: Logger };

export class AdmissionQueue {
  #waiting: Waiting[] = [];
  /** When each batch in flight was sent, by batch number. */
  #inFlight = new Map<number, number>();
  #sent = 0;
  #stallTimer: NodeJS.Timeout | null = null;
  readonly #deps: AdmissionQueueDeps;
  readonly #waitBudgetMs: number;

  constructor(deps: AdmissionQueueDeps, waitBudgetMs: number) {
    this.#deps = deps;
    this.#waitBudgetMs = waitBudgetMs;
  }

  admit(request: AdmissionRequest): Promise<AdmissionRow> {
    return new Promise((resolve, reject) => {
      this.#waiting.push({ ...request, since: performance.now(), resolve, reject });
      this.#schedule();
    });
  }

  // Sends at once when nothing is in flight (a quiet process adds no delay); otherwise requests
  // gather for the next batch, sent when the one in flight answers or stalls.
  #schedule(): void {
    if (this.#waiting.length === 0) return;
    if (this.#inFlight.size === 0) return this.#dispatch();
    const oldest = Math.min(...this.#inFlight.values());
    const stalledIn = oldest + STALL_MS - performance.now();
    if (this.#inFlight.size < 2 && stalledIn <= 0) return this.#dispatch();
    if (!this.#stallTimer && this.#inFlight.size < 2) {
      this.#stallTimer = setTimeout(() => {
        this.#stallTimer = null;
        this.#schedule();
      }, Math.max(1, stalledIn));
    }
  }

  #dispatch(): void {
    const batch = this.#takeBatch();
    if (batch.length === 0) return this.#schedule();
    const id = ++this.#sent;
    this.#inFlight.set(id, performance.now());
    void this.#send(batch).finally(() => {
      this.#inFlight.delete(id);
      if (this.#stallTimer) clearTimeout(this.#stallTimer);
      this.#stallTimer = null;
      this.#schedule();
    });
  }

  /** The next batch; requests that waited past the pool's wait budget get 503 instead. */
  #takeBatch(): Waiting[] {
    const batch = this.#waiting.splice(0, MAX_BATCH);
    const deadline = performance.now() - this.#waitBudgetMs;
    const late = batch.filter((w) => w.since < deadline);
    if (late.length === 0) return batch;
    for (const w of late) w.reject(indisponivel('O banco de dados está sobrecarregado; tente de novo em instantes.', 1));
    return batch.filter((w) => w.since >= deadline);
  }

  async #send(batch: Waiting[]): Promise<void> {
    const { breaker, limits } = this.#deps;
    const releases = limits.takeReleases();
    let work: Promise<string> | null = null;
    try {
      const json = await breaker.run(() => (work = this.#query(batch, releases)));
      const rows = parseRows(json, batch.length);
      for (let i = 0; i < batch.length; i++) batch[i]?.resolve(rows[i] as AdmissionRow);
    } catch (error) {
      for (const w of batch) w.reject(error);
      if (work) this.#afterFailure(work, batch, releases);
      else limits.returnReleases(releases);
    }
  }

  #query(batch: Waiting[], releases: Releases): Promise<string> {
    const column = <T>(pick: (w: Waiting) => T) => batch.map(pick);
    // A named prepared statement: parsed and planned once per connection. The answer is one json
    // text (parsed natively) rather than rows of 22 columns each.
    return this.#deps.pool.oneFirst(sql.prepared('api_admit_batch', BatchResult)`
      SELECT api_admit_batch(
        ${sql.array(column((w) => `\\x${w.tokenHash.toString('hex')}`), 'text')}::bytea[],
        ${sql.array(column((w) => w.escopo), 'text')}, ${sql.array(column((w) => w.permissao), 'text')},
        ${sql.array(column((w) => w.custo), 'int4')}, ${sql.array(column((w) => w.classe), 'text')},
        ${this.#deps.limits.holder}, ${sql.array(releases.contas, 'uuid')}, ${sql.array(releases.chaves, 'uuid')}
      )::text AS admissions`);
  }

  /**
   * The requests of a batch were answered 503 but the statement may still commit (the wait budget
   * ran out, not the statement). If it does, its releases went through and its admissions are
   * undone: slots given back and charges refunded, since nobody was served. If it does not, its
   * releases wait for the next batch.
   */
  #afterFailure(work: Promise<string>, batch: Waiting[], releases: Releases): void {
    const { limits, log } = this.#deps;
    work.then(
      (json) => {
        const rows = parseRows(json, batch.length);
        rows.forEach((row, i) => {
          const request = batch[i];
          if (row.outcome !== 'ok' || !row.conta_id || !row.chave_id || !request) return;
          limits.release(row.conta_id, row.chave_id);
          limits.settle(settlementFor(chargeOf(request, row), { units: 0 }));
        });
        log.warn({ requests: batch.length }, 'an admission batch committed after its requests were answered 503; undone');
      },
      () => limits.returnReleases(releases),
    );
  }
}

/** What an admitted request was charged: its cost (capped at the bucket), minute window and month. */
export function chargeOf(request: AdmissionRequest, row: AdmissionRow): Charge {
  return {
    chaveId: row.chave_id ?? '',
    contaId: row.conta_id ?? '',
    classe: request.classe,
    windowStart: row.window_start ?? '',
    mes: row.mes ?? '',
    units: Math.min(request.custo, row.rajada_q ?? request.custo),
  };
}

function parseRows(json: string, expected: number): AdmissionRow[] {
  const rows = z.array(AdmissionRow).parse(JSON.parse(json));
  if (rows.length !== expected) throw new Error(`api_admit_batch answered ${rows.length} admissions for ${expected} requests`);
  return rows;
}
