// What the service keeps, for how long, and the purges that enforce it (README, "Retention and
// purges"; the worker's jobs run them). A purge deletes in batches, each statement a transaction of
// its own, so a backlog of any size never holds more than one batch of row locks, for one short
// statement; and it skips rows another transaction holds (a request replacing an expired
// idempotency record), which the next run takes, so a purge never queues behind a writer.
import { sql, type Db } from './pool.ts';

export const RETENTION = {
  /** Idempotency records: 24 hours from the request (contract §8.4; the column's default sets expires_at). */
  idempotencyHours: 24,
  /** The request log, from the request. */
  requestLogDays: 30,
  /**
   * Events, from their relay and from the end of their last delivery; deliveries and their attempts,
   * from the delivery's end (the pipeline's archive, shared/db/archive.ts).
   */
  outboxDays: 30,
  /** Suspensions of keys, from their start (GET /conta and the e-mail read the last 24 hours). */
  suspensionsDays: 30,
  /** Hourly delivery counters (only the current hour is ever read). */
  hourlyCountersDays: 2,
} as const;

type Purge = { table: string; key: readonly string[]; due: ReturnType<typeof sql.fragment>; batch: number };

const PURGES = {
  idempotency_keys: {
    table: 'idempotency_keys', key: ['conta_id', 'chave_id', 'key'], batch: 5_000,
    due: sql.fragment`expires_at <= now()`,
  },
  // What POST /eventos/recuperar answered, read again only by a repetition of its key.
  recuperacoes: {
    table: 'recuperacoes', key: ['conta_id', 'id'], batch: 5_000,
    due: sql.fragment`criado_em < now() - make_interval(hours => ${RETENTION.idempotencyHours})`,
  },
  request_log: {
    table: 'request_log', key: ['requisicao_id'], batch: 5_000,
    due: sql.fragment`created_at < now() - make_interval(days => ${RETENTION.requestLogDays})`,
  },
  // The webhook pipeline's archive: its days are dropped whole (shared/db/partitions.ts); these
  // delete what its default partitions kept of days past the retention (rows archived after their
  // day's partition was gone, or before it was made).
  outbox_archive: {
    table: 'outbox_archive_default', key: ['conta_id', 'id'], batch: 1_000,
    due: sql.fragment`encerrado_em < now() - make_interval(days => ${RETENTION.outboxDays})`,
  },
  deliveries_archive: {
    table: 'deliveries_archive_default', key: ['conta_id', 'id'], batch: 5_000,
    due: sql.fragment`encerrado_em < now() - make_interval(days => ${RETENTION.outboxDays})`,
  },
  delivery_attempts_archive: {
    table: 'delivery_attempts_archive_default', key: ['conta_id', 'delivery_id', 'attempt'], batch: 5_000,
    due: sql.fragment`encerrado_em < now() - make_interval(days => ${RETENTION.outboxDays})`,
  },
  // Suspensions of keys (what operators read to answer why a key was suspended), from their start.
  suspensions: {
    table: 'suspensions', key: ['conta_id', 'chave_id', 'id'], batch: 5_000,
    due: sql.fragment`started_at < now() - make_interval(days => ${RETENTION.suspensionsDays})`,
  },
  webhook_hourly_usage: {
    table: 'webhook_hourly_usage', key: ['conta_id', 'hour'], batch: 5_000,
    due: sql.fragment`hour < now() - make_interval(days => ${RETENTION.hourlyCountersDays})`,
  },
} as const satisfies Record<string, Purge>;

export type Purgeable = keyof typeof PURGES;

/** Runs `step` (which handles at most `batch` rows in a transaction of its own) until it handles fewer; the total. */
export async function inBatches(batch: number, step: (limit: number) => Promise<number>): Promise<number> {
  let total = 0;
  for (let n = batch; n === batch; total += n) n = await step(batch);
  return total;
}

/** Deletes every row of the table that is past its retention; the rows deleted. Not inside a transaction: each batch commits. */
export async function purge(db: Db, name: Purgeable): Promise<number> {
  const p: Purge = PURGES[name];
  const table = sql.identifier([p.table]);
  const key = sql.join(p.key.map((k) => sql.identifier([k])), sql.fragment`, `);
  return inBatches(p.batch, async (limit) => {
    const deleted = await db.query(sql.typeAlias('void')`
      DELETE FROM ${table} WHERE (${key}) IN (
        SELECT ${key} FROM ${table} WHERE ${p.due} LIMIT ${limit} FOR UPDATE SKIP LOCKED)`);
    return deleted.rowCount;
  });
}
