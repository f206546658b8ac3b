// UTF-8 whatever the environment (issue 17): npm start's embedded cluster is created as UTF8 even
// with LANG and LC_ALL unset (initdb would otherwise make SQL_ASCII, where nothing validates text
// and a length CHECK counts bytes), and every role refuses a database in another encoding.
import { spawn } from 'node:child_process';
import { chmod, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { projectRoot } from '#shared/config.ts';
import { release } from '#shared/db/release.ts';
import { createLogger } from '#shared/log.ts';
import { startWeb } from '../api/main.ts';
import { testConfig } from './helpers/app.ts';
import { createEmptyDatabase } from './helpers/db.ts';

const test = suite('UTF-8 everywhere');

test('npm start with no LANG nor LC_ALL runs a UTF8 cluster: 200 × é is 200 characters', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'utf8-'));
  await chmod(dir, 0o755); // PostgreSQL runs as the postgres user when the suites run as root
  const dataDir = path.join(dir, 'pg');
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, EMBEDDED_PG_DIR: dataDir, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'error' };
  const child = spawn(process.execPath, ['ops/start.ts'], { cwd: projectRoot, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  try {
    const started = performance.now();
    while (!/Demo API key/.test(output) && child.exitCode === null && performance.now() - started < 90_000) {
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.match(output, /API v1 ready at (http:\/\/\S+)/, output);
    const baseUrl = /API v1 ready at (http:\/\/\S+)/.exec(output)?.[1] ?? '';
    const token = /Demo API key[^:]*: (chv_\S+)/.exec(output)?.[1] ?? '';
    const port = Number((await readFile(path.join(dataDir, 'postmaster.pid'), 'utf8')).split('\n')[3]);
    const client = new pg.Client({ connectionString: `postgres://postgres:postgres@127.0.0.1:${port}/printfarm` });
    await client.connect();
    const { rows } = await client.query<{ encoding: string; chars: number; variacao: string }>(`
      SELECT current_setting('server_encoding') AS encoding, length(repeat('é', 200)) AS chars,
             (SELECT v.id FROM variacoes v LIMIT 1) AS variacao`);
    await client.end();
    assert.equal([rows[0]?.encoding, rows[0]?.chars], ['UTF8', 200]);
    const res = await fetch(`${baseUrl}/estoque/movimentos`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'idempotency-key': 'utf8-200' },
      body: JSON.stringify({ tipo: 'entrada', variacao_id: rows[0]?.variacao, quantidade: 1, motivo: 'correcao', observacao: 'é'.repeat(200) }),
    });
    assert.is(res.status, 201, await res.text());
  } finally {
    child.kill('SIGTERM');
    await exited;
    await rm(path.dirname(dataDir), { recursive: true, force: true });
  }
});

test('the release and the web role refuse a database that is not UTF8, saying how to fix it', async () => {
  const { url, name } = await createEmptyDatabase();
  const admin = new pg.Client({ connectionString: process.env.TEST_ADMIN_URL });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE ${name}`);
    // libc: a cluster made with the builtin provider (the embedded one) has no SQL_ASCII locale.
    await admin.query(`CREATE DATABASE ${name} ENCODING 'SQL_ASCII' LOCALE_PROVIDER libc LOCALE 'C' TEMPLATE template0`);
  } finally {
    await admin.end();
  }
  try {
    await release(url);
    assert.unreachable('a SQL_ASCII database must be refused');
  } catch (error) {
    assert.match(String(error), /encoding is SQL_ASCII, and the service needs UTF8: create the database with ENCODING 'UTF8'/);
  }
  const config = await testConfig({ DATABASE_URL: url });
  try {
    await startWeb(config, url, createLogger('silent', 'test'));
    assert.unreachable('the web role must refuse it too');
  } catch (error) {
    assert.match(String(error), /needs UTF8/);
  }
});

test.run();
