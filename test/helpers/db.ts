// A fresh database per suite, cloned from the migrated template that test/run.ts prepared.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { createDatabasePool, type Pool, type Tx } from '#shared/db/pool.ts';
import { applyDatabaseSettings } from '#shared/db/release.ts';

function env(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run the suites through npm test (test/run.ts)`);
  return value;
}

export type TestDatabase = { url: string; name: string; pool: Pool; close(): Promise<void> };

export async function createTestDatabase(): Promise<TestDatabase> {
  const adminUrl = env('TEST_ADMIN_URL');
  const name = `${env('TEST_DB_PREFIX')}${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${admin.escapeIdentifier(name)} TEMPLATE ${admin.escapeIdentifier(env('TEST_TEMPLATE_DB'))}`);
    // A clone does not inherit the template's database settings (the release's search_path).
    await applyDatabaseSettings(admin, name);
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const pool = await createDatabasePool(url.toString(), { size: 5, statementTimeoutMs: 30_000, applicationName: 'test' });
  return { url: url.toString(), name, pool, close: () => pool.end() };
}

/** A second, empty database (for migration tests). */
export async function createEmptyDatabase(): Promise<{ url: string; name: string }> {
  const adminUrl = env('TEST_ADMIN_URL');
  const name = `${env('TEST_DB_PREFIX')}empty_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${admin.escapeIdentifier(name)}`);
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return { url: url.toString(), name };
}

class Rollback extends Error {}

/** Runs `work` in a transaction that is rolled back (the database clock stands still within it). */
export async function rolledBack(pool: Pool, work: (tx: Tx) => Promise<void>): Promise<void> {
  try {
    await pool.transaction(async (tx) => {
      await work(tx);
      throw new Rollback();
    });
  } catch (error) {
    if (!(error instanceof Rollback)) throw error;
  }
}
