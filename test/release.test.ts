// The release: numbered migrations for the tables, sql/code for the functions, views and triggers,
// all in one transaction under an advisory lock. Idempotent (a second release changes nothing),
// exact (the database's code is the files: an edit is applied, a removal is gone) and safe (two at
// once do not collide; a failure leaves the database as it was).
import { execFile } from 'node:child_process';
import { appendFile, cp, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { projectRoot } from '#shared/config.ts';
import { codeDependents, codeDir, migrationsDir, readMigrations, release } from '#shared/db/release.ts';
import { createEmptyDatabase } from './helpers/db.ts';
import { catalogSchema, findPgDump, pgDumpSchema } from './helpers/schema.ts';

const test = suite('release');
const run = promisify(execFile);

async function query<T extends pg.QueryResultRow>(url: string, text: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(text, values)).rows;
  } finally {
    await client.end();
  }
}

/** The schema as pg_dump prints it when this server's pg_dump is installed, and as the catalog describes it. */
async function schemaOf(url: string): Promise<{ dump: string | null; catalog: string }> {
  const pgDump = await findPgDump(url);
  return { dump: pgDump ? await pgDumpSchema(pgDump, url) : null, catalog: await catalogSchema(url) };
}

function assertSameSchema(a: { dump: string | null; catalog: string }, b: { dump: string | null; catalog: string }, what: string) {
  assert.fixture(b.catalog, a.catalog, `${what} (catalog)`);
  if (a.dump !== null) assert.fixture(b.dump ?? '', a.dump, `${what} (pg_dump --schema-only)`);
}

async function copyOf(dir: string): Promise<string> {
  const copy = await mkdtemp(path.join(tmpdir(), 'release-'));
  await cp(dir, copy, { recursive: true });
  return copy;
}

const releaseProcess = (url: string) =>
  run(process.execPath, ['ops/release.ts'], { cwd: projectRoot, env: { PATH: process.env.PATH, DATABASE_URL: url } });

test.before(async () => {
  if (!(await findPgDump(process.env.TEST_ADMIN_URL ?? ''))) {
    process.stdout.write('note: no pg_dump for this server version here; schemas compared through the catalog only\n');
  }
});

test('a release on an empty database applies every migration and builds the code; a second changes nothing', async () => {
  const { url } = await createEmptyDatabase();
  const first = await release(url);
  assert.equal(first, { applied: (await readMigrations()).map((m) => m.name), code: 'rebuilt' });
  const before = await schemaOf(url);
  const [built] = await query<{ xmin: string }>(url, 'SELECT xmin::text FROM schema_code');
  const second = await release(url);
  assert.equal(second, { applied: [], code: 'unchanged' });
  assertSameSchema(before, await schemaOf(url), 'the second release changed the schema');
  const [after] = await query<{ xmin: string }>(url, 'SELECT xmin::text FROM schema_code');
  assert.is(after?.xmin, built?.xmin, 'the second release wrote nothing');
  const tables = (await query<{ t: string }>(url, "SELECT tablename AS t FROM pg_tables WHERE schemaname = 'public'")).map((r) => r.t);
  for (const table of ['planos', 'contas', 'chaves_api', 'produtos', 'estoque_movimentos', 'cotacoes', 'pedidos_producao',
    'webhook_endpoints', 'outbox', 'deliveries', 'delivery_attempts', 'idempotency_keys', 'request_log', 'monthly_usage']) {
    assert.ok(tables.includes(table), `table ${table} exists`);
  }
});

test('rebuilding the code from the same files gives exactly the same schema', async () => {
  const { url } = await createEmptyDatabase();
  await release(url);
  const before = await schemaOf(url);
  assert.equal(await release(url, { rebuild: true }), { applied: [], code: 'rebuilt' });
  assertSameSchema(before, await schemaOf(url), 'a rebuild changed the schema');
});

test('two release processes at once: each migration applied once, the code built once, the same schema', async () => {
  const { url } = await createEmptyDatabase();
  const outputs = await Promise.all([releaseProcess(url), releaseProcess(url)]);
  const said = outputs.map((o) => o.stdout.trim()).sort();
  assert.match(said[0] ?? '', /^migrations applied: 0001_contas\.sql.*; code rebuilt$/);
  assert.is(said[1], 'migrations applied: none pending; code unchanged');
  const recorded = await query<{ n: number }>(url, 'SELECT count(*)::int AS n FROM schema_migrations');
  assert.is(recorded[0]?.n, (await readMigrations()).length);
  const { url: alone } = await createEmptyDatabase();
  await releaseProcess(alone);
  assertSameSchema(await schemaOf(alone), await schemaOf(url), 'two releases at once built another schema than one');
});

test('an edited function file is applied by the next release', async () => {
  const { url } = await createEmptyDatabase();
  await release(url);
  const dir = await copyOf(codeDir);
  const file = path.join(dir, 'eventos.sql');
  await writeFile(file, (await readFile(file, 'utf8')).replace("nullif(current_setting('app.via', true), ''), 'tela')", "nullif(current_setting('app.via', true), ''), 'rotina')"));
  assert.equal(await release(url, { codeDir: dir }), { applied: [], code: 'rebuilt' });
  assert.equal(await query(url, "SELECT origem_da_mudanca() ->> 'via' AS via"), [{ via: 'rotina' }]);
  await release(url);
  assert.equal(await query(url, "SELECT origem_da_mudanca() ->> 'via' AS via"), [{ via: 'tela' }]);
});

test('an object removed from the files is gone from the database after the next release', async () => {
  const { url } = await createEmptyDatabase();
  const dir = await copyOf(codeDir);
  await appendFile(path.join(dir, 'common.sql'), `
CREATE FUNCTION probe_removida() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$;
CREATE VIEW probe_removida_view AS SELECT probe_removida() AS n;
CREATE TRIGGER probe_removida_trigger BEFORE UPDATE ON etapas FOR EACH ROW EXECUTE FUNCTION touch_row();
`);
  await release(url, { codeDir: dir });
  const probes = `SELECT to_regprocedure('code.probe_removida()') IS NOT NULL AS f, to_regclass('code.probe_removida_view') IS NOT NULL AS v,
                         EXISTS (SELECT FROM pg_trigger WHERE tgname = 'probe_removida_trigger') AS t`;
  assert.equal(await query(url, probes), [{ f: true, v: true, t: true }]);
  await release(url);
  assert.equal(await query(url, probes), [{ f: false, v: false, t: false }]);
});

test('a migration whose comments were corrected after it was applied is accepted from its former checksum, and recorded anew', async () => {
  const { url } = await createEmptyDatabase();
  await release(url);
  const current = await query(url, 'SELECT checksum FROM schema_migrations WHERE id = 7');
  // As a database released before the correction recorded it.
  await query(url, "UPDATE schema_migrations SET checksum = '4f3b883bb5a80a72db532205bf0761e43a7449c08ff3d573819457ef0e29a64d' WHERE id = 7");
  await release(url);
  assert.equal(await query(url, 'SELECT checksum FROM schema_migrations WHERE id = 7'), current);
  await query(url, "UPDATE schema_migrations SET checksum = 'another' WHERE id = 7");
  try {
    await release(url);
    assert.unreachable('any other checksum is still refused');
  } catch (error) {
    assert.match(String(error), /0007_limites\.sql changed after it was applied/);
  }
});

test('refuses to run when an applied migration was edited, or the database has one the files do not', async () => {
  const { url } = await createEmptyDatabase();
  await release(url);
  const dir = await copyOf(migrationsDir);
  await appendFile(path.join(dir, '0001_contas.sql'), '\n-- edited\n');
  try {
    await release(url, { migrationsDir: dir });
    assert.unreachable('an edited migration must be refused');
  } catch (error) {
    assert.match(String(error), /0001_contas\.sql changed after it was applied/);
  }
  await query(url, "INSERT INTO schema_migrations (id, name, checksum) VALUES (9998, '9998_from_the_future.sql', 'x')");
  try {
    await release(url);
    assert.unreachable('a database migrated further than the files must be refused');
  } catch (error) {
    assert.match(String(error), /has migration 9998_from_the_future\.sql, which sql\/migrations does not/);
  }
});

test('a failing migration or code file leaves the database as it was: the release is one transaction', async () => {
  const { url } = await createEmptyDatabase();
  const migrations = await copyOf(migrationsDir);
  await writeFile(path.join(migrations, '9999_broken.sql'), 'CREATE TABLE half_done (id int);\nSELECT 1/0;\n');
  try {
    await release(url, { migrationsDir: migrations });
    assert.unreachable('the broken migration must fail');
  } catch (error) {
    assert.match(String(error), /9999_broken\.sql failed: division by zero/);
  }
  assert.equal(await query(url, "SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public'"), [{ n: 0 }], 'nothing was left behind');

  await release(url);
  const before = await schemaOf(url);
  const code = await copyOf(codeDir);
  await appendFile(path.join(code, 'operator_views.sql'), '\nCREATE VIEW broken AS SELECT no_such_column FROM outbox;\n');
  try {
    await release(url, { codeDir: code });
    assert.unreachable('the broken code file must fail');
  } catch (error) {
    assert.match(String(error), /sql\/code\/operator_views\.sql failed: column "no_such_column" does not exist/);
  }
  assertSameSchema(before, await schemaOf(url), 'a failed release changed the schema');
});

test('no table, constraint, default or index depends on the code schema; one that did would stop the release', async () => {
  const { url } = await createEmptyDatabase();
  await release(url);
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    assert.equal(await codeDependents(client), []);
    await client.query("ALTER TABLE etapas ADD CONSTRAINT etapas_probe CHECK (code.transicao_permitida('cotacao', 'rascunho', 'enviada'))");
    assert.equal(await codeDependents(client), ['constraint etapas_probe on table etapas']);
  } finally {
    await client.end();
  }
  try {
    await release(url, { rebuild: true });
    assert.unreachable('dropping the code would drop the constraint');
  } catch (error) {
    assert.match(String(error), /constraint etapas_probe on table etapas depend on it/);
  }
  assert.equal(await query(url, "SELECT count(*)::int AS n FROM pg_constraint WHERE conname = 'etapas_probe'"), [{ n: 1 }]);
});

test('every new session finds the code by name; a rebuild waits for a table lock only briefly, then retries', async () => {
  const { url } = await createEmptyDatabase();
  await release(url);
  assert.equal(await query(url, "SELECT agrupamento_do_evento('produto.atualizado', '{\"id\": \"p\"}') AS g"), [{ g: 'produto.atualizado:p' }]);

  const holder = new pg.Client({ connectionString: url });
  await holder.connect();
  try {
    await holder.query('BEGIN');
    await holder.query('LOCK TABLE contas IN ACCESS SHARE MODE');
    try {
      await release(url, { rebuild: true, lockTimeoutMs: 50, attempts: 2 });
      assert.unreachable('the lock is held for longer than both attempts');
    } catch (error) {
      assert.is((error as { code?: string }).code, '55P03', 'lock_timeout, not a queue behind the lock');
    }
    const released = release(url, { rebuild: true, lockTimeoutMs: 50, attempts: 10 });
    setTimeout(() => void holder.query('COMMIT'), 300);
    assert.equal(await released, { applied: [], code: 'rebuilt' }, 'retried until the lock was free');
  } finally {
    await holder.end();
  }
});

test.run();
