// 503 indisponivel when the database cannot serve: the pool's wait budget, and PostgreSQL
// stopped under load, then back, with no restart of the service.
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { sql } from '#shared/db/pool.ts';
import { startWeb } from '../api/main.ts';
import { startEmbeddedPostgres, freePort } from '#shared/db/embedded.ts';
import { release } from '#shared/db/release.ts';
import { createDatabasePool } from '#shared/db/pool.ts';
import { createLogger } from '#shared/log.ts';
import { installBossSchema } from '#shared/boss.ts';
import { startTestApp, testConfig } from './helpers/app.ts';
import { createAccount } from './helpers/fixtures.ts';
import { request } from './helpers/http.ts';
import { eventually } from './helpers/receiver.ts';
import { slowRoutes } from './helpers/probe-routes.ts';
import { routes } from '../api/routes/index.ts';

const test = suite('availability');

test('a request that cannot get a connection within the wait budget is 503, and the breaker closes again by itself', async () => {
  const app = await startTestApp({
    extraRoutes: slowRoutes,
    env: { DB_POOL_SIZE: '1', DB_POOL_WAIT_MS: '100', DB_BREAKER_OPEN_MS: '300' },
  });
  try {
    const account = await createAccount(app.db.pool, { plano: 'farm' });
    const holder = request(`${app.baseUrl}/teste/lento?ms=1200&db=sim`, { token: account.token });
    // Until the slow request holds the pool's one connection (a fixed wait was too short on a loaded
    // machine: the requests below were admitted before it).
    await eventually(() => app.db.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int AS n FROM pg_stat_activity
       WHERE datname = current_database() AND state = 'active' AND query LIKE 'SELECT pg_sleep%'`), (n) => n === 1);
    const waiting = await Promise.all(Array.from({ length: 4 }, () => request(`${app.baseUrl}/saude`, { token: account.token })));
    for (const res of waiting) {
      assert.is(res.status, 503);
      assert.is(res.body.codigo, 'indisponivel');
      assert.ok(Number(res.headers.get('retry-after')) >= 1);
    }
    assert.is((await holder).status, 200);
    let recovered = 0;
    for (let i = 0; i < 50 && recovered === 0; i++) {
      await new Promise((r) => setTimeout(r, 50));
      if ((await request(`${app.baseUrl}/saude`, { token: account.token })).status === 200) recovered++;
    }
    assert.is(recovered, 1, 'admitted again once the connection is free and the breaker closed');
  } finally {
    await app.stop();
  }
});

test('with PostgreSQL stopped under load the API answers 503 (never 500), and recovers when it is back, without a restart', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'pg-restart-'));
  await chmod(dir, 0o755);
  const dataDir = path.join(dir, 'pg');
  const port = await freePort();
  let cluster = await startEmbeddedPostgres({ dataDir, port, fast: true });
  await release(cluster.url);
  await installBossSchema(cluster.url);
  const setup = await createDatabasePool(cluster.url, { size: 1, statementTimeoutMs: 10_000, applicationName: 'setup' });
  const account = await createAccount(setup, { plano: 'farm' });
  await setup.end();
  const config = await testConfig({ DATABASE_URL: cluster.url, DB_POOL_WAIT_MS: '500', DB_BREAKER_OPEN_MS: '200', DB_STATEMENT_TIMEOUT_MS: '2000' });
  const web = await startWeb(config, cluster.url, createLogger('silent', 'web'), routes);

  const seen: { at: number; status: number }[] = [];
  let running = true;
  const load = Array.from({ length: 2 }, async () => {
    while (running) {
      const res = await request(`${config.baseUrl}/saude`, { token: account.token }).catch(() => ({ status: 0 }));
      seen.push({ at: Date.now(), status: res.status });
      await new Promise((r) => setTimeout(r, 150));
    }
  });
  try {
    await new Promise((r) => setTimeout(r, 500));
    assert.ok(seen.some((s) => s.status === 200), 'up before');
    const stoppedAt = Date.now();
    await cluster.stop();
    await new Promise((r) => setTimeout(r, 1500));
    const during = seen.filter((s) => s.at > stoppedAt + 300);
    assert.ok(during.length > 0 && during.every((s) => s.status === 503), `during: ${during.map((s) => s.status)}`);
    cluster = await startEmbeddedPostgres({ dataDir, port, fast: true });
    const backAt = Date.now();
    for (let i = 0; i < 100 && !seen.some((s) => s.at > backAt && s.status === 200); i++) await new Promise((r) => setTimeout(r, 100));
    assert.ok(seen.some((s) => s.at > backAt && s.status === 200), 'admitted again after PostgreSQL came back');
    assert.not.ok(seen.some((s) => s.status === 500 || s.status === 0), `statuses: ${[...new Set(seen.map((s) => s.status))]}`);
  } finally {
    running = false;
    await Promise.all(load);
    await web.stop();
    await cluster.stop();
    await rm(dir, { recursive: true, force: true });
  }
});

test.run();
