// Admission in batches: every request waiting to be admitted goes to PostgreSQL in one round trip
// (api_admit_batch), with the slot releases of the requests this process finished meanwhile. Each
// request still gets exactly the decision it would get alone.
import { z } from 'zod';
import { sql, type Pool } from '../shared/db/pool.ts';
import type { Logger } from '../shared/log.ts';
import { Batcher } from './batcher.ts';
import type { CircuitBreaker } from './breaker.ts';
import type { LimitsBookkeeper, Releases } from './limits-bookkeeper.ts';
import { settlementFor, type Charge } from './limits.ts';

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

export type AdmissionQueueDeps = { pool: Pool; breaker: CircuitBreaker; limits: LimitsBookkeeper; log: Logger };

export class AdmissionQueue {
  readonly #deps: AdmissionQueueDeps;
  readonly #batcher: Batcher<AdmissionRequest, AdmissionRow>;

  constructor(deps: AdmissionQueueDeps, waitBudgetMs: number) {
    this.#deps = deps;
    // One batch in flight: what arrives meanwhile goes in the next one. Measured (BENCHMARKS.md), a
    // second batch in flight makes both smaller and costs more per request than it saves in
    // waiting. A second one goes only when the first has stalled (waiting on a lock or a slow
    // disk), so one slow batch never holds every request of the process.
    this.#batcher = new Batcher({ lanes: 2, stallMs: 20, maxBatch: 500, waitBudgetMs }, (batch) => this.#send(batch));
  }

  admit(request: AdmissionRequest): Promise<AdmissionRow> {
    return this.#batcher.submit(request);
  }

  async #send(batch: AdmissionRequest[]): Promise<AdmissionRow[]> {
    const { breaker, limits } = this.#deps;
    const releases = limits.takeReleases();
    let work: Promise<string> | null = null;
    try {
      return parseRows(await breaker.run(() => (work = this.#query(batch, releases))), batch.length);
    } catch (error) {
      if (work) this.#afterFailure(work, batch, releases);
      else limits.returnReleases(releases);
      throw error;
    }
  }

  #query(batch: AdmissionRequest[], releases: Releases): Promise<string> {
    const column = <T>(pick: (r: AdmissionRequest) => T) => batch.map(pick);
    // A named prepared statement: parsed and planned once per connection. The answer is one json
    // text (parsed natively) rather than rows of 22 columns each.
    return this.#deps.pool.oneFirst(sql.prepared('api_admit_batch', BatchResult)`
      SELECT api_admit_batch(
        ${sql.array(column((r) => `\\x${r.tokenHash.toString('hex')}`), 'text')}::bytea[],
        ${sql.array(column((r) => r.escopo), 'text')}, ${sql.array(column((r) => r.permissao), 'text')},
        ${sql.array(column((r) => r.custo), 'int4')}, ${sql.array(column((r) => r.classe), 'text')},
        ${this.#deps.limits.holder}, ${sql.array(releases.contas, 'uuid')}, ${sql.array(releases.chaves, 'uuid')}
      ) AS admissions`);
  }

  /**
   * The requests of a batch were answered 503 but the statement may still commit (the wait budget
   * ran out, not the statement). If it does, its releases went through and its admissions are
   * undone: slots given back and charges refunded, since nobody was served. If it does not, its
   * releases wait for the next batch.
   */
  #afterFailure(work: Promise<string>, batch: AdmissionRequest[], releases: Releases): void {
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
