// One-statement writes in batches (RouteDef.once): the admitted requests of a route whose whole
// change is one SQL function go to PostgreSQL together (see api_estoque_movimentar: a write
// that fails leaves the others), so a loaded process amortizes round trips, statements and commits
// over many writes. Batches of writes run side by side on several connections: the writes are the
// work itself, not bookkeeping.
import type { FragmentSqlToken } from 'slonik';
import { z } from 'zod';
import { sql, type Pool } from '#shared/db/pool.ts';
import type { Logger } from '#shared/log.ts';
import { activeTraceparent } from '#shared/telemetry/spans.ts';
import { Batcher } from '../admission/batcher.ts';
import type { CircuitBreaker } from '../admission/breaker.ts';

/** A kind of one-statement write that can be batched. */
export type BatchedWrite = {
  /** Names the prepared statement of its batches. */
  name: string;
  /** The batch's writes as one SQL expression answering a json array, one answer per request. */
  call(args: readonly unknown[]): FragmentSqlToken;
};

/**
 * One batch of movements at a time made the lane the bottleneck; two to four side by side did equally
 * well, more split batches smaller (BENCHMARKS.md, "Stock movements and the catalog").
 */
const LANES = 3;

/**
 * A batch in which a write failed runs again with each write in a subtransaction of its own, each
 * taking a transaction id. A backend publishes at most 64 of them (PGPROC_MAX_CACHED_SUBXIDS); past
 * that every snapshot in the cluster is marked overflowed and visibility checks fall back to
 * pg_subtrans, slowing every session. A batch stays under that line.
 */
const MAX_BATCH = 64;

const Answers = z.object({ answers: z.string() });

export class WriteQueue {
  readonly #pool: Pool;
  readonly #breaker: CircuitBreaker;
  readonly #waitBudgetMs: number;
  readonly #batchers = new Map<BatchedWrite, Batcher<unknown, unknown>>();
  readonly #log: Logger | undefined;

  constructor(deps: { pool: Pool; breaker: CircuitBreaker; log?: Logger }, waitBudgetMs: number) {
    this.#pool = deps.pool;
    this.#breaker = deps.breaker;
    this.#log = deps.log;
    this.#waitBudgetMs = waitBudgetMs;
  }

  /** What the write answered for this request (its element of the batch's json array). */
  write(kind: BatchedWrite, args: unknown): Promise<unknown> {
    let batcher = this.#batchers.get(kind);
    if (!batcher) {
      const onSplit = (error: unknown, size: number) =>
        this.#log?.warn({ err: error, batch: kind.name, size }, 'a write batch failed as a whole; split to find the request at fault');
      batcher = new Batcher({ name: `write ${kind.name}`, lanes: LANES, stallMs: 0, maxBatch: MAX_BATCH, waitBudgetMs: this.#waitBudgetMs, onSplit }, (batch) => this.#send(kind, batch));
      this.#batchers.set(kind, batcher);
    }
    return batcher.submit(args);
  }

  // A batch that commits after its requests were answered 503 (the wait budget ran out, not the
  // statement) leaves its writes made: a client that retries with its Idempotency-Key gets them
  // replayed.
  async #send(kind: BatchedWrite, batch: unknown[]): Promise<unknown[]> {
    const answers = await this.#breaker.run(() => this.#pool.oneFirst(statementOf(kind, batch)));
    const parsed = JSON.parse(answers) as unknown;
    if (!Array.isArray(parsed) || parsed.length !== batch.length) {
      throw new Error(`${kind.name}: ${Array.isArray(parsed) ? parsed.length : 'no'} answers for ${batch.length} writes`);
    }
    return parsed;
  }
}

/**
 * The batch's statement. Traced, it first declares the batch's trace context for the events its
 * writes emit (their requests' spans are linked to the batch's: shared/telemetry/batches.ts); the
 * subquery runs before the writes, in the statement's own transaction.
 */
function statementOf(kind: BatchedWrite, batch: readonly unknown[]) {
  const traceparent = activeTraceparent();
  if (traceparent === null) return sql.prepared(`write_${kind.name}`, Answers)`SELECT (${kind.call(batch)})::text AS answers`;
  return sql.prepared(`write_${kind.name}_traced`, Answers)`
    SELECT (${kind.call(batch)})::text AS answers FROM (SELECT set_config('app.traceparent', ${traceparent}, true)) traced`;
}
