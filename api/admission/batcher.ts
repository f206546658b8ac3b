// Requests that need the database for the same kind of statement go in one round trip: a batch is
// sent at once when nothing of its kind is in flight (a quiet process adds no delay); otherwise
// requests gather for the next batch, sent when one in flight answers or the newest has been in
// flight for a while. A loaded process thereby amortizes round trips, statements and commits over
// many requests.
//
// One request decides only its own answer: a batch whose statement fails as a whole (a bad value
// of one request, a bug one account's state triggers) is sent again in halves, each half split
// again while it fails, one half after the other, down to the request at fault: every other request
// gets exactly the answer it would get alone, in about twice log2(size) round trips, and a failing
// batch never floods the pool. Only unavailability (503: the database is down or slow) fails every
// request of a batch.
import { ApiError, indisponivel } from '#shared/errors.ts';
import { endBatchSpan, memberSpan, runBatch, startBatchSpan } from '#shared/telemetry/batches.ts';
import type { Span } from '#shared/telemetry/spans.ts';

export type BatchPolicy = {
  /** Names the batch's span when traced (`admission batch`, `write movimentos`). */
  name: string;
  /** Batches in flight at once. */
  lanes: number;
  /** Another batch goes while one is in flight only once the newest has been in flight this long. */
  stallMs: number;
  /** A bound on one statement's arrays; beyond it the rest waits for the next batch. */
  maxBatch: number;
  /** A request that waited this long to be sent gets 503 instead (the pool's wait budget). */
  waitBudgetMs: number;
  /** Told when a batch failed as a whole and is split (it should never happen: worth a log line). */
  onSplit?: (error: unknown, size: number) => void;
};

type Waiting<T, R> = {
  item: T; since: number; resolve(result: R): void; reject(error: unknown): void;
  /** The span of the request that submitted it, when traced (linked to its batch's span). */
  span: Span | undefined;
};

export class Batcher<T, R> {
  #waiting: Waiting<T, R>[] = [];
  /** When each batch in flight was sent, by batch number. */
  #inFlight = new Map<number, number>();
  #sent = 0;
  #stallTimer: NodeJS.Timeout | null = null;
  #gather: NodeJS.Immediate | null = null;
  readonly #policy: BatchPolicy;
  readonly #run: (items: T[]) => Promise<R[]>;

  /** run: one round trip for the items, answering one result per item in their order. */
  constructor(policy: BatchPolicy, run: (items: T[]) => Promise<R[]>) {
    this.#policy = policy;
    this.#run = run;
  }

  submit(item: T): Promise<R> {
    return new Promise((resolve, reject) => {
      this.#waiting.push({ item, since: performance.now(), resolve, reject, span: memberSpan() });
      // Alone, a request goes at once. While a batch is in flight, the requests that arrive in one
      // turn of the event loop go together: less CPU per request, in both processes, than a batch for
      // each as lanes free up (BENCHMARKS.md, "Stock movements and the catalog").
      if (this.#inFlight.size === 0) this.#schedule();
      else this.#gather ??= setImmediate(() => {
        this.#gather = null;
        this.#schedule();
      });
    });
  }

  #schedule(): void {
    if (this.#waiting.length === 0 || this.#inFlight.size >= this.#policy.lanes) return;
    if (this.#inFlight.size > 0) {
      const stalledIn = Math.max(...this.#inFlight.values()) + this.#policy.stallMs - performance.now();
      if (stalledIn > 0) {
        this.#stallTimer ??= setTimeout(() => {
          this.#stallTimer = null;
          this.#schedule();
        }, Math.max(1, stalledIn));
        return;
      }
    }
    const batch = this.#take();
    if (batch.length > 0) this.#send(batch);
    this.#schedule();
  }

  /** Sends a batch, or part of a failed one (in the same lane); one that fails as a whole is split. */
  async #attempt(part: Waiting<T, R>[]): Promise<void> {
    const items = part.map((w) => w.item);
    const span = startBatchSpan(this.#policy.name, part);
    try {
      const results = await runBatch(span, this.#run, items);
      if (span) endBatchSpan(span, part);
      part.forEach((w, i) => w.resolve(results[i] as R));
    } catch (error) {
      if (span) endBatchSpan(span, part, error);
      if (part.length > 1 && !isUnavailability(error)) await this.#split(part, error);
      else part.forEach((w) => w.reject(error));
    }
  }

  async #split(batch: Waiting<T, R>[], error: unknown): Promise<void> {
    this.#policy.onSplit?.(error, batch.length);
    const half = Math.ceil(batch.length / 2);
    await this.#attempt(batch.slice(0, half));
    await this.#attempt(batch.slice(half));
  }

  /** The next batch; requests that waited past the wait budget get 503 instead. */
  #take(): Waiting<T, R>[] {
    const batch = this.#waiting.splice(0, this.#policy.maxBatch);
    const deadline = performance.now() - this.#policy.waitBudgetMs;
    if (batch.every((w) => w.since >= deadline)) return batch;
    for (const w of batch) {
      if (w.since < deadline) w.reject(indisponivel('O banco de dados está sobrecarregado; tente de novo em instantes.', 1));
    }
    return batch.filter((w) => w.since >= deadline);
  }

  #send(batch: Waiting<T, R>[]): void {
    const id = ++this.#sent;
    this.#inFlight.set(id, performance.now());
    void this.#attempt(batch).finally(() => {
      this.#inFlight.delete(id);
      if (this.#stallTimer) clearTimeout(this.#stallTimer);
      this.#stallTimer = null;
      this.#schedule();
    });
  }
}

/** A 503 (the database unreachable, or past its wait budget): no request of the batch is to blame. */
export function isUnavailability(error: unknown): boolean {
  return error instanceof ApiError && error.status === 503;
}
