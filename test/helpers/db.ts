// A fresh database per suite, cloned from the migrated template that test/run.ts prepared.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { createDatabasePool, type Pool } from '../../shared/db/pool.ts';

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
