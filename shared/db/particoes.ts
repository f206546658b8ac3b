// The history tables partitioned by day (sql/code/particoes.sql): their partitions made ahead of
// time, and the days past their retention dropped whole.
import { z } from 'zod';
import { sql, type Db } from './pool.ts';

/** The webhook pipeline's archive (sql/migrations/0017_arquivo_do_pipeline.sql). */
export const ARCHIVE_TABLES = ['delivery_attempts_archive', 'deliveries_archive', 'outbox_archive'] as const;

/** The tables partitioned by day (tabelas_por_dia, sql/code/particoes.sql). */
export type TabelaPorDia = 'request_log' | (typeof ARCHIVE_TABLES)[number];

/** Days ahead the worker keeps partitions made (the release makes today's and tomorrow's). */
export const DIAS_ADIANTE = 7;

/** Makes every missing partition from today to `dias` days ahead; how many it made. */
export async function garantirParticoes(db: Db, dias = DIAS_ADIANTE): Promise<number> {
  return db.oneFirst(sql.type(z.object({ feitas: z.number() }))`SELECT particoes_garantir(${dias}) AS feitas`);
}

/**
 * Drops the partitions of `tabela` whose whole day is older than `dias` days; the names dropped.
 * Each drop waits at most `lockTimeoutMs` for the table's lock: one that would queue behind a long
 * transaction (and the requests behind it) is left to the next run.
 */
export async function removerParticoesExpiradas(db: Db, tabela: TabelaPorDia, dias: number, lockTimeoutMs = 2_000): Promise<string[]> {
  return db.transaction(async (tx) => {
    await tx.query(sql.typeAlias('void')`SELECT set_config('lock_timeout', ${`${lockTimeoutMs}ms`}, true)`);
    return tx.oneFirst(sql.type(z.object({ removidas: z.array(z.string()) }))`
      SELECT particoes_expiradas_remover(${tabela}, now() - make_interval(days => ${dias})) AS removidas`);
  });
}
