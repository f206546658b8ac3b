// The service's database access: one slonik pool per process, typed at the SQL boundary by zod.
import {
  createBigintTypeParser,
  createDateTypeParser,
  createNumericTypeParser,
  createPool,
  createSqlTag,
  type DatabasePool,
  type DatabaseTransactionConnection,
  type CommonQueryMethods,
} from 'slonik';
import { z } from 'zod';

export type Db = CommonQueryMethods;
export type Pool = DatabasePool;
export type Tx = DatabaseTransactionConnection;

// Row types named once and reused by every query module.
export const sql = createSqlTag({
  typeAliases: {
    void: z.object({}).strict(),
    id: z.object({ id: z.string() }),
  },
});

export type PoolOptions = {
  size: number;
  statementTimeoutMs: number;
  applicationName: string;
};

// Timestamps leave the database as ISO 8601 strings with their offset (contract §1), dates as
// YYYY-MM-DD, bigint counters and money as numbers (all below 2^53).
const typeParsers = [
  createBigintTypeParser(),
  createDateTypeParser(),
  createNumericTypeParser(),
  { name: 'timestamptz', parse: (value: string) => new Date(value).toISOString() },
];

export async function createDatabasePool(url: string, options: PoolOptions): Promise<Pool> {
  const withName = new URL(url);
  withName.searchParams.set('application_name', options.applicationName);
  return createPool(withName.toString(), {
    maxPoolSize: options.size,
    statementTimeout: options.statementTimeoutMs,
    idleTimeout: 30_000,
    connectionTimeout: 5_000,
    typeParsers,
    // Transactions set their settings with set_config(..., true), so nothing outlives a
    // transaction; the default DISCARD ALL would cost a round trip on every release.
    resetConnection: async () => undefined,
  });
}
