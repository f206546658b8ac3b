// The request log (docs/decisions/0021-request-log-partitioned-by-day.md): one row per request,
// written in batches off the request path, flushed on a timer, when a batch fills, and on shutdown.
import { Nothing, sql, type Pool } from '#shared/db/pool.ts';
import type { Logger } from '#shared/log.ts';
import { untraced } from '#shared/telemetry/spans.ts';

export type RequestLogEntry = {
  requisicaoId: string;
  contaId: string | null;
  chaveId: string | null;
  method: string;
  route: string | null;
  path: string;
  status: number;
  codigo: string | null;
  /** The admission rule that refused it, when one did. */
  refusedBy: string | null;
  cost: number;
  durationMs: number;
  ip: string | null;
  createdAt: Date;
};

const BATCH = 500;
// While the database is unreachable rows wait in memory up to this many; older ones are dropped
// (and counted in the log) rather than letting memory grow without bound.
const MAX_BUFFERED = 50_000;

export class RequestLog {
  #pending: RequestLogEntry[] = [];
  #timer: NodeJS.Timeout;
  #flushing: Promise<void> | null = null;
  readonly #pool: Pool;
  readonly #log: Logger;

  constructor(pool: Pool, log: Logger, flushEveryMs: number) {
    this.#pool = pool;
    this.#log = log;
    this.#timer = setInterval(() => void this.flush(), flushEveryMs);
    this.#timer.unref();
  }

  record(entry: RequestLogEntry): void {
    this.#pending.push(entry);
    if (this.#pending.length > MAX_BUFFERED) {
      const dropped = this.#pending.splice(0, this.#pending.length - MAX_BUFFERED);
      this.#log.error({ dropped: dropped.length }, 'request log buffer full; oldest rows dropped');
    }
    if (this.#pending.length >= BATCH) void this.flush();
  }

  /** Writes everything pending; one flush at a time. */
  async flush(): Promise<void> {
    if (this.#flushing) return this.#flushing;
    this.#flushing = untraced(() => this.#drain()).finally(() => {
      this.#flushing = null;
    });
    return this.#flushing;
  }

  async close(): Promise<void> {
    clearInterval(this.#timer);
    await this.flush();
    if (this.#pending.length > 0) await this.flush();
  }

  async #drain(): Promise<void> {
    while (this.#pending.length > 0) {
      const batch = this.#pending.slice(0, BATCH);
      try {
        await this.#insert(batch);
        this.#pending.splice(0, batch.length);
      } catch (error) {
        this.#log.warn({ err: error, pending: this.#pending.length }, 'request log flush failed; will retry');
        return;
      }
    }
  }

  async #insert(batch: RequestLogEntry[]): Promise<void> {
    const rows = batch.map((e) => [
      e.requisicaoId, e.contaId, e.chaveId, e.method, e.route, e.path, e.status, e.codigo,
      e.cost, e.durationMs, e.ip, e.createdAt.toISOString(), e.refusedBy,
    ]);
    // Not waiting for the WAL flush: a crash may lose the last fraction of a second of rows (the
    // JSON log lines have them too), and admissions' commits don't queue behind this batch's.
    await this.#pool.transaction(async (tx) => {
      // Named statements: a batch goes every REQUEST_LOG_FLUSH_MS under load.
      await tx.query(sql.prepared('request_log_async_commit', Nothing)`SELECT set_config('synchronous_commit', 'off', true)`);
      await tx.query(sql.prepared('request_log_insert', Nothing)`
        INSERT INTO request_log (requisicao_id, conta_id, chave_id, method, route, path, status, codigo,
                                 cost, duration_ms, ip, created_at, refused_by)
        SELECT * FROM ${sql.unnest(rows, ['uuid', 'uuid', 'uuid', 'text', 'text', 'text', 'int4', 'text',
                                          'int4', 'float4', 'text', 'timestamptz', 'text'])}
        ON CONFLICT (requisicao_id, created_at) DO NOTHING`);
    });
  }
}
