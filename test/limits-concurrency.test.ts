// Ceilings under concurrency: many requests at once, from more than one web process on one
// database, never pass a limit; the process's own in-flight ceiling answers 503.
import { spawn, type ChildProcess } from 'node:child_process';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { startWeb, type RunningWeb } from '../api/main.ts';
import { routes } from '../api/routes/index.ts';
import { freePort } from '#shared/db/embedded.ts';
import { sql } from '#shared/db/pool.ts';
import { createLogger } from '#shared/log.ts';
import { startTestApp, testConfig, type TestApp } from './helpers/app.ts';
import { createAccount, createPlan } from './helpers/fixtures.ts';
import { request } from './helpers/http.ts';
import { slowProbe, slowRoutes } from './helpers/probe-routes.ts';
import { awayFromMinuteBoundary, minuteUsed } from './helpers/uso.ts';

const test = suite('limits under concurrency');
let app: TestApp;
let second: RunningWeb;
let secondUrl: string;

test.before(async () => {
  app = await startTestApp({ extraRoutes: slowRoutes });
  const config = await testConfig({ DATABASE_URL: app.db.url });
  second = await startWeb(config, app.db.url, createLogger('silent', 'second'), [...routes, ...slowRoutes]);
  secondUrl = config.baseUrl;
  await createPlan(app.db.pool, 'concorrencia', {
    chaves_ativas: 5, leituras_por_minuto: 40, escritas_por_minuto: 10, chamadas_por_mes: 1000000, rajada: 1000,
    rajada_recarga_por_segundo: 1, simultaneas_por_chave: 3, simultaneas_por_conta: 3,
  });
});
test.after(async () => {
  await second.stop();
  await app.stop();
});

async function spawnWeb(): Promise<{ url: string; child: ChildProcess }> {
  const port = await freePort();
  const child = spawn(process.execPath, ['api/main.ts'], {
    env: { PATH: process.env.PATH, DATABASE_URL: app.db.url, PORT: String(port), HOST: '127.0.0.1', PUBLIC_BASE_URL: `http://127.0.0.1:${port}/v1`, LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}/v1`;
  for (let i = 0; i < 200; i++) {
    const up = await fetch(`${url}/openapi.json`).then(() => true, () => false);
    if (up) return { url, child };
    await new Promise((r) => setTimeout(r, 50));
  }
  child.kill('SIGKILL');
  throw new Error('the second web process did not start');
}

test('200 concurrent requests through two web processes never pass the minute ceiling, and each admitted one is counted once', async () => {
  const account = await createAccount(app.db.pool, { plano: 'concorrencia' });
  const other = await spawnWeb();
  try {
    // The 200 in one minute: across a boundary the next minute's ceiling would admit more.
    await awayFromMinuteBoundary(app.db.pool);
    const calls = Array.from({ length: 200 }, (_, i) =>
      request(`${i % 2 ? other.url : app.baseUrl}/saude`, { token: account.token }).then((r) => r.status),
    );
    const statuses = await Promise.all(calls);
    const admitted = statuses.filter((s) => s === 200).length;
    // Refused ones are 429, or 403 once twenty refusals in a row have suspended the key.
    assert.ok(statuses.every((s) => s === 200 || s === 429 || s === 403), `statuses ${[...new Set(statuses)]}`);
    assert.ok(statuses.includes(429));
    assert.ok(admitted > 0 && admitted <= 40, `admitted ${admitted}`);
    const counted = await app.db.pool.oneFirst(sql.unsafe`SELECT calls FROM effective_monthly_usage WHERE conta_id = ${account.contaId}`);
    assert.is(counted, admitted, 'the month counts exactly the admitted calls');
    const minute = await app.db.pool.oneFirst(sql.unsafe`SELECT ${minuteUsed(account.contaId, 'leitura')} AS used`);
    assert.ok(Number(minute) <= 40, `minute ${minute}`);
  } finally {
    other.child.kill('SIGTERM');
  }
});

test('simultaneous requests of one account never exceed its ceiling across two processes', async () => {
  const account = await createAccount(app.db.pool, { plano: 'concorrencia' });
  const keys = [account.token];
  slowProbe.maxRunning = 0;
  // Twelve: fewer than twenty refusals, so the key is not suspended on the way.
  const calls = Array.from({ length: 12 }, (_, i) =>
    request(`${i % 2 ? secondUrl : app.baseUrl}/teste/lento?ms=150`, { token: keys[0] }).then((r) => r.status),
  );
  const statuses = await Promise.all(calls);
  assert.ok(slowProbe.maxRunning <= 3, `at most 3 at once, saw ${slowProbe.maxRunning}`);
  assert.ok(slowProbe.maxRunning >= 2, 'requests did overlap');
  assert.ok(statuses.includes(429));
  assert.ok(statuses.includes(200));
  // Once they are done their slots are free again.
  await new Promise((r) => setTimeout(r, 50));
  assert.is((await request(`${app.baseUrl}/saude`, { token: account.token })).status, 200);
});

test('beyond the process in-flight ceiling the answer is 503 indisponivel with Retry-After', async () => {
  const small = await startTestApp({ extraRoutes: slowRoutes, env: { MAX_IN_FLIGHT: '2' } });
  try {
    await small.db.pool.query(sql.unsafe`UPDATE planos SET simultaneas_por_chave = 10, simultaneas_por_conta = 10 WHERE id = 'farm'`);
    const account = await createAccount(small.db.pool, { plano: 'farm' });
    const results = await Promise.all(
      Array.from({ length: 6 }, () => request(`${small.baseUrl}/teste/lento?ms=300`, { token: account.token })),
    );
    const refused = results.filter((r) => r.status === 503);
    assert.ok(refused.length >= 1, `statuses ${results.map((r) => r.status)}`);
    assert.ok(results.filter((r) => r.status === 200).length >= 1);
    for (const r of refused) {
      assert.is(r.body.codigo, 'indisponivel');
      assert.is(r.headers.get('retry-after'), '1');
    }
  } finally {
    await small.stop();
  }
});

test.run();
