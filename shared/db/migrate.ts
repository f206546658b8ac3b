// Applies the numbered plain-SQL migrations of sql/ in order, each in its own transaction.
// Plain pg (not slonik): a migration file holds many statements, which only the simple query
// protocol runs. Two runners at once are safe: a session advisory lock makes the second wait,
// and it then finds every migration recorded.
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { projectRoot } from '../config.ts';

export const migrationsDir = path.join(projectRoot, 'sql');
const LOCK_KEY = 7_410_203_001;

export type Migration = { id: number; name: string; sql: string; checksum: string };

export async function readMigrations(dir = migrationsDir): Promise<Migration[]> {
  const files = (await readdir(dir)).filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f)).sort();
  const migrations: Migration[] = [];
  for (const name of files) {
    const sql = await readFile(path.join(dir, name), 'utf8');
    const id = Number(name.slice(0, 4));
    if (migrations.some((m) => m.id === id)) throw new Error(`two migrations numbered ${id}`);
    migrations.push({ id, name, sql, checksum: createHash('sha256').update(sql).digest('hex') });
  }
  return migrations;
}

export type MigrateResult = { applied: string[] };

export async function migrate(databaseUrl: string, dir = migrationsDir): Promise<MigrateResult> {
  const migrations = await readMigrations(dir);
  const client = new pg.Client({ connectionString: databaseUrl, application_name: 'migrate' });
  await client.connect();
  try {
    await client.query('SET client_min_messages = warning');
    await client.query('SELECT pg_advisory_lock($1)', [LOCK_KEY]);
    await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      id int PRIMARY KEY, name text NOT NULL, checksum text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now())`);
    const { rows } = await client.query<{ id: number; name: string; checksum: string }>(
      'SELECT id, name, checksum FROM schema_migrations ORDER BY id',
    );
    const done = new Map(rows.map((r) => [r.id, r]));
    const applied: string[] = [];
    for (const migration of migrations) {
      const previous = done.get(migration.id);
      if (previous) {
        if (previous.checksum !== migration.checksum) {
          throw new Error(
            `migration ${migration.name} changed after it was applied; add a new migration instead`,
          );
        }
        continue;
      }
      await applyOne(client, migration);
      applied.push(migration.name);
    }
    return { applied };
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [LOCK_KEY]).catch(() => undefined);
    await client.end();
  }
}

async function applyOne(client: pg.Client, migration: Migration): Promise<void> {
  await client.query('BEGIN');
  try {
    // The row first: a runner that somehow raced past the lock collides here, not halfway through.
    await client.query('INSERT INTO schema_migrations (id, name, checksum) VALUES ($1, $2, $3)', [
      migration.id,
      migration.name,
      migration.checksum,
    ]);
    await client.query(migration.sql);
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK');
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(`migration ${migration.name} failed: ${reason}`, { cause: error });
  }
}
