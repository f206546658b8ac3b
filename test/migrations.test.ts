import { mkdtemp, cp, appendFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { migrate, migrationsDir, readMigrations } from '../shared/db/migrate.ts';
import { createEmptyDatabase } from './helpers/db.ts';

const test = suite('migrations');

async function tables(url: string): Promise<string[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const { rows } = await client.query<{ table_name: string }>(
    "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1");
  await client.end();
  return rows.map((r) => r.table_name);
}

test('apply on an empty database, then are a no-op the second time', async () => {
  const { url } = await createEmptyDatabase();
  const all = await readMigrations();
  const first = await migrate(url);
  assert.equal(first.applied, all.map((m) => m.name));
  const second = await migrate(url);
  assert.equal(second.applied, []);
  const names = await tables(url);
  for (const table of ['planos', 'contas', 'usuarios', 'chaves_api', 'canais', 'produtos', 'variacoes', 'partes', 'precos',
    'materiais', 'cores', 'locais', 'estoque_saldos', 'estoque_movimentos', 'insumos', 'cotacoes', 'cotacao_itens',
    'pedidos_producao', 'pedido_itens', 'etapas', 'webhook_endpoints', 'outbox', 'deliveries', 'delivery_attempts',
    'idempotency_keys', 'request_log', 'outgoing_emails', 'uso_mensal']) {
    assert.ok(names.includes(table), `table ${table} exists`);
  }
});

test('two runners at once apply each migration exactly once', async () => {
  const { url } = await createEmptyDatabase();
  const [a, b] = await Promise.all([migrate(url), migrate(url)]);
  const all = await readMigrations();
  assert.is(a.applied.length + b.applied.length, all.length);
  assert.ok(a.applied.length === 0 || b.applied.length === 0, 'one runner did everything, the other waited');
});

test('refuses to run when an applied migration was edited', async () => {
  const { url } = await createEmptyDatabase();
  await migrate(url);
  const dir = await mkdtemp(path.join(tmpdir(), 'migrations-'));
  await cp(migrationsDir, dir, { recursive: true });
  await appendFile(path.join(dir, '0001_contas.sql'), '\n-- edited\n');
  try {
    await migrate(url, dir);
    assert.unreachable('an edited migration must be refused');
  } catch (error) {
    assert.match(String(error), /changed after it was applied/);
  }
});

test('a failing migration leaves nothing behind and is not recorded', async () => {
  const { url } = await createEmptyDatabase();
  const dir = await mkdtemp(path.join(tmpdir(), 'migrations-'));
  await cp(migrationsDir, dir, { recursive: true });
  const { writeFile } = await import('node:fs/promises');
  await writeFile(path.join(dir, '9999_broken.sql'), 'CREATE TABLE half_done (id int);\nSELECT 1/0;\n');
  try {
    await migrate(url, dir);
    assert.unreachable('the broken migration must fail');
  } catch (error) {
    assert.match(String(error), /9999_broken.sql failed/);
  }
  const names = await tables(url);
  assert.not.ok(names.includes('half_done'));
  assert.is((await migrate(url)).applied.length, 0, 'everything before it was applied and recorded');
});

test.run();
