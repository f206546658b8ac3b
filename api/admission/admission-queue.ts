// Admission in batches: every request waiting to be admitted goes to PostgreSQL in one round trip
// (api_admit, sql/code/admission.sql), with the slot releases of the requests this process finished
// meanwhile. Each request still gets exactly the decision it would get alone.
import { z } from 'zod';
import { sql, type Pool } from '#shared/db/pool.ts';
import type { Logger } from '#shared/log.ts';
import { Batcher, isUnavailability } from './batcher.ts';
import { admissionsOf, type AdmissionRow } from './admission-row.ts';
import { RefusalCache } from './refusal-cache.ts';
import type { Prova, RegistroPedido } from './admission-row.ts';
import type { CircuitBreaker } from './breaker.ts';
import type { LimitsBookkeeper, Releases } from './limits-bookkeeper.ts';
import { settlementFor, type Charge } from './limits.ts';

const Answer = z.object({ admissions: z.string() });

export type AdmissionRequest = {
  /** What shows the request may be a repetition, checked by admission before it charges (repetition.ts). */
  prova?: Prova | null;
  tokenHash: Buffer;
  escopo: string | null;
  permissao: string | null;
  custo: number;
  /** Units of the month when not `custo` (capped at the burst for the other counters, never here). */
  custoMes?: number | null;
  classe: 'leitura' | 'escrita';
  /** The record a GET of one record reads, read by admission with it when it is admitted. */
  registro?: RegistroPedido | null;
};

export type AdmissionQueueDeps = { pool: Pool; breaker: CircuitBreaker; limits: LimitsBookkeeper; log: Logger };

export class AdmissionQueue {
  readonly #deps: AdmissionQueueDeps;
  readonly #batcher: Batcher<AdmissionRequest, AdmissionRow>;
  readonly #refusals: RefusalCache;

  constructor(deps: AdmissionQueueDeps, waitBudgetMs: number, refusalDelayMs = 0) {
    this.#deps = deps;
    this.#refusals = new RefusalCache({ delayMs: refusalDelayMs });
    // One batch in flight: what arrives meanwhile goes in the next one. A second batch in flight
    // makes both smaller and costs more per request than it saves in waiting
    // (docs/decisions/0041-admission-decided-by-one-function.md). It goes only when the first has
    // stalled (waiting on a lock or a slow disk), so one slow batch never holds every request of the process.
    const onSplit = (error: unknown, size: number) =>
      deps.log.warn({ err: error, size }, 'an admission batch failed as a whole; split to find the request at fault');
    this.#batcher = new Batcher({ name: 'admission batch', lanes: 2, stallMs: 20, maxBatch: 500, waitBudgetMs, onSplit }, (batch) => this.#send(batch));
  }

  /** The admission of one request: a refusal the process remembers (refusal-cache.ts), or the database's answer. */
  async admit(request: AdmissionRequest): Promise<AdmissionRow> {
    const known = this.#refusals.lookup(request.tokenHash);
    if (known) {
      await this.#refusals.hold();
      return known;
    }
    const row = await this.#batcher.submit(request);
    this.#refusals.remember(request.tokenHash, row);
    return row;
  }

  /**
   * The rest of the price of a request already admitted and in flight (admission.ts, topUp): alone,
   * outside the batches (it is rare), taking no slot.
   */
  async topUp(request: AdmissionRequest): Promise<AdmissionRow> {
    const { breaker, pool, limits } = this.#deps;
    const answer = await breaker.run(() => pool.oneFirst(sql.type(Answer)`
      SELECT api_admit(ARRAY[${sql.binary(request.tokenHash)}::bytea], ARRAY[${request.escopo}::text], ARRAY[${request.permissao}::text],
                       ARRAY[${request.custo}::int], ARRAY[${request.custoMes ?? null}::int], ARRAY[${request.classe}::text], NULL::jsonb,
                       ${limits.holder}::text, '{}'::uuid[], '{}'::uuid[], p_sem_vaga => true) AS admissions`));
    return admissionsOf(answer, 1)[0] as AdmissionRow;
  }

  async #send(batch: AdmissionRequest[]): Promise<AdmissionRow[]> {
    const { breaker, limits } = this.#deps;
    const releases = limits.takeReleases();
    let work: Promise<string> | null = null;
    try {
      return admissionsOf(await breaker.run(() => (work = this.#query(batch, releases))), batch.length);
    } catch (error) {
      // A 503 may leave the statement running, to commit later; any other error is the statement's
      // own, and nothing of it committed.
      if (work && isUnavailability(error)) this.#afterFailure(work, batch, releases);
      else limits.returnReleases(releases);
      throw error;
    }
  }

  #query(batch: AdmissionRequest[], releases: Releases): Promise<string> {
    const column = <T>(pick: (r: AdmissionRequest) => T) => batch.map(pick);
    // A named prepared statement: parsed and planned once per connection. The answer is one text,
    // a line per request, rather than rows of 22 columns each.
    return this.#deps.pool.oneFirst(sql.prepared('api_admit', Answer)`
      SELECT api_admit(
        ${sql.array(column((r) => `\\x${r.tokenHash.toString('hex')}`), 'text')}::bytea[],
        ${sql.array(column((r) => r.escopo), 'text')}, ${sql.array(column((r) => r.permissao), 'text')},
        ${sql.array(column((r) => r.custo), 'int4')}, ${sql.array(column((r) => r.custoMes ?? null), 'int4')},
        ${sql.array(column((r) => r.classe), 'text')},
        ${sql.jsonb(batch.some((r) => r.prova) ? column((r) => r.prova ?? null) : null)}, ${this.#deps.limits.holder}, ${sql.array(releases.contas, 'uuid')}, ${sql.array(releases.chaves, 'uuid')},
        false, ${sql.array(column((r) => r.registro?.tabela ?? null), 'text')}, ${sql.array(column((r) => r.registro?.id ?? null), 'uuid')}
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
        const rows = admissionsOf(json, batch.length);
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

/**
 * What an admitted request was charged: its cost (capped at the bucket) in the burst and the minute
 * of its class, and in the month; a repetition 1 in the burst and the reads' minute, 0 in the month.
 */
export function chargeOf(request: AdmissionRequest, row: AdmissionRow): Charge {
  const repeticao = row.repeticao === true;
  const units = repeticao ? 1 : Math.min(request.custo, row.rajada_q ?? request.custo);
  return {
    chaveId: row.chave_id ?? '',
    contaId: row.conta_id ?? '',
    classe: repeticao ? 'leitura' : request.classe,
    windowStart: row.window_start ?? '',
    mes: row.mes ?? '',
    units,
    month: repeticao ? 0 : (request.custoMes ?? units),
    repeticao,
  };
}
