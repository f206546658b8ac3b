// A circuit breaker in front of the database
// (docs/decisions/0001-problem-details-for-every-error.md): when PostgreSQL is unreachable or the
// pool cannot hand out a connection within its wait budget, requests are answered 503 at once
// instead of piling up; after a pause one request probes, and success closes the circuit again.
import { indisponivel } from '#shared/errors.ts';

export type BreakerOptions = { failureThreshold: number; openMs: number; waitBudgetMs: number };

export class DatabaseUnavailable extends Error {}

export class CircuitBreaker {
  #failures = 0;
  #openUntil = 0;
  #probing = false;
  readonly #options: BreakerOptions;

  constructor(options: BreakerOptions) {
    this.#options = options;
  }

  get open(): boolean {
    return this.#openUntil > performance.now();
  }

  /** Runs work against the database under the wait budget; throws 503 when it cannot. */
  async run<T>(work: () => Promise<T>): Promise<T> {
    const now = performance.now();
    const retryAfter = Math.max(1, Math.ceil(this.#options.openMs / 1000));
    if (this.#openUntil > now || (this.#openUntil > 0 && this.#probing)) {
      throw indisponivel('O banco de dados está indisponível ou sobrecarregado; tente de novo em instantes.', retryAfter);
    }
    const probe = this.#openUntil > 0;
    if (probe) this.#probing = true;
    let timer: NodeJS.Timeout | undefined;
    try {
      const result = await Promise.race([
        work(),
        new Promise<never>((_resolve, reject) => {
          timer = setTimeout(() => reject(new DatabaseUnavailable('wait budget exceeded')), this.#options.waitBudgetMs);
        }),
      ]);
      this.#failures = 0;
      this.#openUntil = 0;
      return result;
    } catch (error) {
      if (!isUnavailable(error)) {
        this.#failures = 0;
        throw error;
      }
      this.#failures++;
      if (probe || this.#failures >= this.#options.failureThreshold) this.#openUntil = performance.now() + this.#options.openMs;
      throw indisponivel('O banco de dados está indisponível ou sobrecarregado; tente de novo em instantes.', retryAfter);
    } finally {
      clearTimeout(timer);
      if (probe) this.#probing = false;
    }
  }
}

const UNAVAILABLE = new Set(['ConnectionError', 'BackendTerminatedError', 'BackendTerminatedUnexpectedlyError', 'StatementTimeoutError', 'DatabaseUnavailable']);
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', '57P01', '57P03', '53300']);

/** Errors that mean "the database is not there right now", not "this query was wrong". */
export function isUnavailable(error: unknown): boolean {
  for (let e: unknown = error; e instanceof Error; e = e.cause) {
    if (e instanceof DatabaseUnavailable || UNAVAILABLE.has(e.constructor.name)) return true;
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && NETWORK_CODES.has(code)) return true;
    if (/Connection terminated|connection.*(refused|closed)/i.test(e.message)) return true;
  }
  return false;
}
