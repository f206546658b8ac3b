// The history tables partitioned by day (sql/code/partitions.sql): their partitions made ahead of
// time, and the days past their retention dropped whole.
import { z } from 'zod';
import { sql, type Db } from './pool.ts';

/** The webhook pipeline's archive (sql/migrations/0017_arquivo_do_pipeline.sql). */
export const ARCHIVE_TABLES = ['delivery_attempts_archive', 'deliveries_archive', 'outbox_archive'] as const;

/** The tables partitioned by day (daily_partitioned_tables, sql/code/partitions.sql). */
export type DailyTable = 'request_log' | (typeof ARCHIVE_TABLES)[number];

/** Days ahead the worker keeps partitions made (the release makes today's and tomorrow's). */
export const DAYS_AHEAD = 7;

/** Makes every missing partition from today to `days` days ahead; how many it made. */
export async function ensurePartitions(db: Db, days = DAYS_AHEAD): Promise<number> {
  return db.oneFirst(sql.type(z.object({ made: z.number() }))`SELECT ensure_partitions(${days}) AS made`);
}

/**
 * Drops the partitions of `table` whose whole day is older than `days` days; the names dropped.
 * Each drop waits at most `lockTimeoutMs` for the table's lock: one that would queue behind a long
 * transaction (and the requests behind it) is left to the next run.
 */
export async function dropExpiredPartitions(db: Db, table: DailyTable, days: number, lockTimeoutMs = 2_000): Promise<string[]> {
  return db.transaction(async (tx) => {
    await tx.query(sql.typeAlias('void')`SELECT set_config('lock_timeout', ${`${lockTimeoutMs}ms`}, true)`);
    return tx.oneFirst(sql.type(z.object({ dropped: z.array(z.string()) }))`
      SELECT drop_expired_partitions(${table}, now() - make_interval(days => ${days})) AS dropped`);
  });
}
