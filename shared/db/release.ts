// The release (Procfile: release): the schema's numbered migrations (sql/migrations: tables, types,
// indexes, constraints; append-only) and the database's code (sql/code: functions, views and
// triggers, one file per module), in ONE transaction under an advisory lock.
//
// The code lives in its own schema, `code`, which holds nothing else. When a migration is pending or
// the code files differ from what the database last ran, the release drops that schema (its
// triggers on the tables go with it), applies the pending migrations, and runs every code file
// again: after a release the database's code is exactly the files, and an object removed from
// them is gone. When nothing changed it writes nothing and takes no lock but its own.
//
// Plain pg (not slonik): a file holds many statements, which only the simple query protocol runs.
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { DEFAULT_STATEMENT_TIMEOUT_MS, projectRoot } from '../config.ts';
import { assertUtf8, IDLE_IN_TRANSACTION_TIMEOUT_MS } from './pool.ts';

export const migrationsDir = path.join(projectRoot, 'sql', 'migrations');
export const codeDir = path.join(projectRoot, 'sql', 'code');
export const CODE_SCHEMA = 'code';

/**
 * sql/code's modules in the order they run: a module comes after every module whose functions its
 * views, SQL-language functions and triggers name (PL/pgSQL bodies are resolved when they run).
 */
export const CODE_MODULES = [
  'common', 'partitions', 'eventos', 'contas', 'catalogo', 'estoque', 'cotacoes', 'pedidos', 'webhooks', 'archive', 'mail',
  'idempotency', 'estoque_api', 'representacoes', 'admission_rules', 'admission', 'operator_views',
] as const;

/** Sessions find the code by name: the release sets this on the database (and tests on their clones). */
export const SEARCH_PATH = `"$user", public, ${CODE_SCHEMA}`;

const LOCK_KEY = 7_410_203_001;

export type Migration = { id: number; name: string; sql: string; checksum: string };
export type CodeModule = { name: string; sql: string };
export type ReleaseOptions = {
  migrationsDir?: string;
  codeDir?: string;
  /** Rebuild the code even when the files did not change. */
  rebuild?: boolean;
  /** The web's statement timeout: the role's default in the database (applyDatabaseSettings). */
  statementTimeoutMs?: number;
  /** How long one statement may wait for a table lock before the attempt is retried. */
  lockTimeoutMs?: number;
  attempts?: number;
};
export type ReleaseResult = { applied: string[]; code: 'rebuilt' | 'unchanged' };

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

export async function readMigrations(dir = migrationsDir): Promise<Migration[]> {
  const files = (await readdir(dir)).filter((f) => f.endsWith('.sql')).sort();
  const migrations: Migration[] = [];
  for (const name of files) {
    if (!/^\d{4}_[a-z0-9_]+\.sql$/.test(name)) throw new Error(`${name}: a migration is named NNNN_name.sql`);
    const sql = await readFile(path.join(dir, name), 'utf8');
    const id = Number(name.slice(0, 4));
    if (migrations.some((m) => m.id === id)) throw new Error(`two migrations numbered ${id}`);
    migrations.push({ id, name, sql, checksum: sha256(sql) });
  }
  return migrations;
}

/** The code modules in load order; a file that is not listed in CODE_MODULES (or the reverse) is an error. */
export async function readCode(dir = codeDir): Promise<CodeModule[]> {
  const files = (await readdir(dir)).filter((f) => f.endsWith('.sql')).map((f) => f.slice(0, -4));
  const unlisted = files.filter((f) => !(CODE_MODULES as readonly string[]).includes(f));
  if (unlisted.length) throw new Error(`sql/code/${unlisted[0]}.sql is not in CODE_MODULES (shared/db/release.ts), which gives the load order`);
  const missing = CODE_MODULES.filter((m) => !files.includes(m));
  if (missing.length) throw new Error(`CODE_MODULES names ${missing[0]}, but sql/code/${missing[0]}.sql does not exist`);
  return Promise.all(CODE_MODULES.map(async (name) => ({ name, sql: await readFile(path.join(dir, `${name}.sql`), 'utf8') })));
}

/** One checksum of all the code, in load order: any edit, addition or removal changes it. */
export const codeChecksum = (modules: CodeModule[]) => sha256(modules.map((m) => `-- ${m.name}\n${m.sql}`).join('\n'));

export async function release(databaseUrl: string, options: ReleaseOptions = {}): Promise<ReleaseResult> {
  const migrations = await readMigrations(options.migrationsDir);
  const code = await readCode(options.codeDir);
  const attempts = options.attempts ?? 5;
  const client = new pg.Client({ connectionString: databaseUrl, application_name: 'release' });
  await client.connect();
  try {
    await client.query('SET client_min_messages = warning');
    // Not the role's defaults (the web's timeouts): a migration may run for minutes.
    await client.query('SET statement_timeout = 0; SET idle_in_transaction_session_timeout = 0');
    assertUtf8((await client.query<{ server_encoding: string }>('SHOW server_encoding')).rows[0]?.server_encoding);
    for (let attempt = 1; ; attempt++) {
      try {
        return await releaseOnce(client, migrations, code, options);
      } catch (error) {
        // A table lock held elsewhere (a long transaction): try again rather than queue every request
        // behind the release's lock.
        if ((error as { code?: string }).code !== '55P03' || attempt >= attempts) throw error;
        await sleep(500 * attempt);
      }
    }
  } finally {
    await client.end();
  }
}

async function releaseOnce(client: pg.Client, migrations: Migration[], code: CodeModule[], options: ReleaseOptions): Promise<ReleaseResult> {
  await client.query('BEGIN');
  try {
    // The lock first: a second release waits here, then finds everything done.
    await client.query('SELECT pg_advisory_xact_lock($1)', [LOCK_KEY]);
    await client.query(`SET LOCAL lock_timeout = ${Math.trunc(options.lockTimeoutMs ?? 5_000)}`);
    await ensureBookkeeping(client);
    await applyDatabaseSettings(client, undefined, { statementTimeoutMs: options.statementTimeoutMs });
    const pending = await pendingMigrations(client, migrations);
    const checksum = codeChecksum(code);
    const current = await client.query<{ checksum: string }>('SELECT checksum FROM schema_code');
    if (!pending.length && !options.rebuild && current.rows[0]?.checksum === checksum) {
      await ensurePartitions(client);
      await client.query('COMMIT');
      return { applied: [], code: 'unchanged' };
    }
    await dropCode(client);
    for (const migration of pending) await applyMigration(client, migration);
    await buildCode(client, code);
    await client.query(
      `INSERT INTO schema_code (checksum) VALUES ($1)
       ON CONFLICT (id) DO UPDATE SET checksum = excluded.checksum, released_at = now()`, [checksum]);
    await ensurePartitions(client);
    await client.query('COMMIT');
    return { applied: pending.map((m) => m.name), code: 'rebuilt' };
  } catch (error) {
    await client.query('ROLLBACK');
    throw error;
  }
}

// Today's and tomorrow's partitions of the tables partitioned by day (sql/code/partitions.sql),
// whatever else changed: the worker keeps a week ahead, and a missing one only sends rows to the
// default partition.
async function ensurePartitions(client: pg.Client): Promise<void> {
  await client.query(`SELECT set_config('search_path', $1, true)`, [SEARCH_PATH]);
  await client.query('SELECT ensure_partitions(1)');
}

// The release's own bookkeeping, which it needs before it can read any file.
async function ensureBookkeeping(client: pg.Client): Promise<void> {
  await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
    id int PRIMARY KEY, name text NOT NULL, checksum text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now())`);
  await client.query(`CREATE TABLE IF NOT EXISTS schema_code (
    id boolean PRIMARY KEY DEFAULT true CHECK (id), checksum text NOT NULL,
    released_at timestamptz NOT NULL DEFAULT now())`);
}

/**
 * Applied migrations whose comments were corrected afterwards, and the checksums they had before: a
 * database that recorded one of those is accepted and records the file's current checksum. Only
 * comments may change this way (they cited a note that is not in the repository; they now cite its
 * decision records); anything else is a new migration.
 */
const AMENDED: Readonly<Record<number, readonly string[]>> = {
  4: ['ec04befb7c9b50fac398c00863b87b9bb1263725e75b7766b27d7aef443ffab7'],
  7: ['4f3b883bb5a80a72db532205bf0761e43a7449c08ff3d573819457ef0e29a64d'],
};

async function pendingMigrations(client: pg.Client, migrations: Migration[]): Promise<Migration[]> {
  const { rows } = await client.query<{ id: number; name: string; checksum: string }>(
    'SELECT id, name, checksum FROM schema_migrations ORDER BY id');
  for (const row of rows) {
    const file = migrations.find((m) => m.id === row.id);
    if (!file) {
      throw new Error(`the database has migration ${row.name}, which sql/migrations does not: ` +
        'it was migrated by a newer release, or before the chain was squashed (CHANGELOG.md); ' +
        'a development database can be recreated');
    }
    if (file.checksum !== row.checksum) {
      if (!AMENDED[file.id]?.includes(row.checksum)) {
        throw new Error(`migration ${file.name} changed after it was applied; add a new migration instead`);
      }
      await client.query('UPDATE schema_migrations SET checksum = $1 WHERE id = $2', [file.checksum, file.id]);
    }
  }
  return migrations.filter((m) => !rows.some((r) => r.id === m.id));
}

async function applyMigration(client: pg.Client, migration: Migration): Promise<void> {
  await client.query('INSERT INTO schema_migrations (id, name, checksum) VALUES ($1, $2, $3)',
    [migration.id, migration.name, migration.checksum]);
  try {
    await client.query(migration.sql);
  } catch (error) {
    throw new Error(`migration ${migration.name} failed: ${(error as Error).message}`, { cause: error });
  }
}

/**
 * Objects outside the code schema that would go with it, triggers aside (the code files create them
 * again): a CHECK, default or index that calls a code function would be dropped silently.
 */
export async function codeDependents(client: pg.Client | pg.PoolClient): Promise<string[]> {
  const { rows } = await client.query<{ dependent: string }>(`
    WITH code_objects AS (
      SELECT 'pg_proc'::regclass AS classid, oid FROM pg_proc WHERE pronamespace = to_regnamespace($1)
      UNION ALL SELECT 'pg_class'::regclass, oid FROM pg_class WHERE relnamespace = to_regnamespace($1)
      UNION ALL SELECT 'pg_type'::regclass, oid FROM pg_type WHERE typnamespace = to_regnamespace($1))
    SELECT DISTINCT pg_describe_object(d.classid, d.objid, d.objsubid) AS dependent
      FROM pg_depend d JOIN code_objects c ON c.classid = d.refclassid AND c.oid = d.refobjid
      -- A view's rule belongs to the schema of its view.
      LEFT JOIN pg_rewrite r ON d.classid = 'pg_rewrite'::regclass AND r.oid = d.objid
      LEFT JOIN pg_class v ON v.oid = r.ev_class
     WHERE d.classid <> 'pg_trigger'::regclass
       AND coalesce(v.relnamespace = to_regnamespace($1), (pg_identify_object(d.classid, d.objid, d.objsubid)).schema = $1) IS NOT TRUE
     ORDER BY 1`, [CODE_SCHEMA]);
  return rows.map((r) => r.dependent);
}

async function dropCode(client: pg.Client): Promise<void> {
  const dependents = await codeDependents(client);
  if (dependents.length) {
    throw new Error(`the code schema cannot be rebuilt: ${dependents.join('; ')} depend on it. ` +
      'A function a table needs (in a CHECK, default or index) is part of the schema: define it in a migration');
  }
  await client.query(`DROP SCHEMA IF EXISTS ${CODE_SCHEMA} CASCADE`);
}

async function buildCode(client: pg.Client, modules: CodeModule[]): Promise<void> {
  await client.query(`CREATE SCHEMA ${CODE_SCHEMA}`);
  await client.query(`COMMENT ON SCHEMA ${CODE_SCHEMA} IS 'Functions, views and triggers of sql/code, rebuilt by every release that changes them: never put data here.'`);
  // What the files create lands in the code schema; the tables they name are found in public.
  await client.query(`SET LOCAL search_path = ${CODE_SCHEMA}, public`);
  for (const module of modules) {
    try {
      await client.query(module.sql);
    } catch (error) {
      throw new Error(`sql/code/${module.name}.sql failed: ${(error as Error).message}`, { cause: error });
    }
  }
  await client.query(`SET LOCAL search_path = ${SEARCH_PATH}`);
}

/**
 * What every session of the database needs: the code schema on its search_path. And the web's
 * timeouts as the defaults of the role in this database: a pooler in transaction mode passes no
 * setting from the client's startup packet, so the web's pooled sessions get them from here. A
 * session that says otherwise at its start keeps its own (the worker, pg-boss, the release, the
 * CLI); an operator's psql as this role gets them too (README, "Behind PgBouncer").
 */
export async function applyDatabaseSettings(
  client: pg.Client,
  database?: string,
  settings: { statementTimeoutMs?: number | undefined } = {},
): Promise<void> {
  const name = database ?? (await client.query<{ db: string }>('SELECT current_database() AS db')).rows[0]?.db ?? '';
  const db = client.escapeIdentifier(name);
  await client.query(`ALTER DATABASE ${db} SET search_path = ${SEARCH_PATH}`);
  const statementTimeout = Math.trunc(settings.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS);
  await client.query(`ALTER ROLE CURRENT_USER IN DATABASE ${db} SET statement_timeout = ${statementTimeout}`);
  await client.query(`ALTER ROLE CURRENT_USER IN DATABASE ${db} SET idle_in_transaction_session_timeout = ${IDLE_IN_TRANSACTION_TIMEOUT_MS}`);
}
