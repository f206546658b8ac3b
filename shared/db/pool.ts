// The service's database access: one slonik pool per process, typed at the SQL boundary by zod.
import {
  createDateTypeParser,
  createNumericTypeParser,
  createPool,
  createSqlTag,
  SchemaValidationError,
  type CommonQueryMethods,
  type DatabasePool,
  type DatabaseTransactionConnection,
  type Interceptor,
} from 'slonik';
import { z } from 'zod';
import { sqlSpans } from '../telemetry/sql.ts';
import { telemetry } from '../telemetry/state.ts';

export type Db = CommonQueryMethods;
export type Pool = DatabasePool;
export type Tx = DatabaseTransactionConnection;

/**
 * The row type of a statement run for its effect (whatever it returns is ignored): sql.prepared
 * takes it by name, sql.typeAlias('void') is the same for an unnamed statement.
 */
export const Nothing = z.looseObject({});

// Row types named once and reused by every query module.
export const sql = createSqlTag({
  typeAliases: {
    void: Nothing,
    id: z.object({ id: z.string() }),
  },
});

export type PoolOptions = {
  size: number;
  statementTimeoutMs: number;
  applicationName: string;
  /**
   * Through a pooler in transaction mode (PgBouncer): consecutive transactions may run on different
   * server sessions. Statements go unnamed (a named one exists only in the session that prepared
   * it), and no setting goes in the startup packet (PgBouncer 1.18 refuses statement_timeout there):
   * the session defaults the release keeps on the role apply instead (applyDatabaseSettings).
   */
  pooled?: boolean;
  /** Settings of every session, sent at connect (`-c name=value`); a pooled pool can have none. */
  settings?: Readonly<Record<string, string>>;
};

/** What a session's timeouts are when its client does not say (the role's defaults in the database). */
export const IDLE_IN_TRANSACTION_TIMEOUT_MS = 60_000;

// sql.prepared names a statement for the session; behind a transaction pooler it goes unnamed.
const unnamedStatements: Interceptor = {
  name: 'unnamed-statements',
  transformQuery: (_context, query) => (query.name === undefined ? query : { ...query, name: undefined }),
};

// Timestamps leave the database as ISO 8601 strings with their offset (contract §1), dates as
// YYYY-MM-DD, bigint counters and money as numbers (the schema keeps them below 2^53; a value
// beyond would be refused rather than rounded).
const typeParsers = [
  {
    name: 'int8',
    parse: (value: string) => {
      const n = Number(value);
      if (!Number.isSafeInteger(n)) throw new RangeError(`int8 ${value} does not fit a JavaScript number`);
      return n;
    },
  },
  createDateTypeParser(),
  createNumericTypeParser(),
  { name: 'timestamptz', parse: (value: string) => new Date(value).toISOString() },
];

// Every row of a query typed with sql.type(zodSchema) is checked against it: the schema is the
// contract between the SQL and the code, and a drift fails loudly instead of leaking through.
const resultParser: Interceptor = {
  name: 'result-parser',
  transformRow: (context, query, row) => {
    const parser = context.resultParser;
    if (!parser) return row;
    const result = parser['~standard'].validate(row);
    if (result instanceof Promise) throw new TypeError('row schemas must be synchronous');
    if (result.issues) throw new SchemaValidationError(query, row, result.issues);
    return result.value as typeof row;
  },
};

/**
 * The service stores text as UTF-8 and counts its length in characters: a database in another
 * encoding (SQL_ASCII validates nothing) is refused at start, with what to do about it.
 */
export function assertUtf8(serverEncoding: string | undefined): void {
  if (serverEncoding?.toUpperCase() === 'UTF8') return;
  throw new Error(`the database's encoding is ${serverEncoding ?? 'unknown'}, and the service needs UTF8: create the database ` +
    "with ENCODING 'UTF8' (CREATE DATABASE … ENCODING 'UTF8' TEMPLATE template0), or, for the embedded PostgreSQL, " +
    'remove its data folder (EMBEDDED_PG_DIR, .data/postgres by default) so npm start creates it again in UTF8');
}

/** For the roles, once at start: refuses a database that is not UTF8. */
export async function assertDatabaseUtf8(pool: Pool): Promise<void> {
  assertUtf8(await pool.oneFirst(sql.type(z.object({ server_encoding: z.string() }))`SHOW server_encoding`));
}

export async function createDatabasePool(url: string, options: PoolOptions): Promise<Pool> {
  const withName = new URL(url);
  withName.searchParams.set('application_name', options.applicationName);
  const settings = Object.entries(options.settings ?? {});
  if (settings.length > 0) {
    if (options.pooled) throw new Error('a pooled pool has no session settings: its sessions are the pooler\'s');
    const given = withName.searchParams.get('options');
    withName.searchParams.set('options', [given, ...settings.map(([name, value]) => `-c ${name}=${value}`)].filter(Boolean).join(' '));
  }
  return createPool(withName.toString(), {
    maxPoolSize: options.size,
    statementTimeout: options.pooled ? 'DISABLE_TIMEOUT' : options.statementTimeoutMs,
    idleInTransactionSessionTimeout: options.pooled ? 'DISABLE_TIMEOUT' : IDLE_IN_TRANSACTION_TIMEOUT_MS,
    idleTimeout: 30_000,
    connectionTimeout: 5_000,
    typeParsers,
    // The statements' spans only when tracing was on as the pool was made (the roles start it first).
    interceptors: [...(options.pooled ? [unnamedStatements] : []), resultParser, ...(telemetry.tracer ? [sqlSpans] : [])],
    // Transactions set their settings with set_config(..., true), so nothing outlives a
    // transaction; the default DISCARD ALL would cost a round trip on every release.
    resetConnection: async () => undefined,
  });
}
