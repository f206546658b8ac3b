// One-record reads as an outside benchmark would measure them: GET /v1/pedidos-producao/{id} through
// the whole pipeline (key, scope, admission with every ceiling, validation, the read, the strong
// ETag, the request log) answering 200, the same with If-None-Match answering 304, and GET /v1/saude
// (admission alone); beside three baselines in the same rounds, bare restify servers
// (bench/reads-bare-server.ts) that rate-limit with rate-limiter-flexible and run the same SELECT
// prepared once per connection: on Redis with pg, on Redis with postgres.js, on PostgreSQL with pg.
// 200 accounts with one key each and 5 orders of 3 items each; the requests rotate over all 1,000
// orders and their keys. Figures are reported, never asserted.
import { Redis } from 'ioredis';
import { createDatabasePool } from '#shared/db/pool.ts';
import { benchDatabase, load, procfileNodeArgs, spawnServer, writeSection, type LoadResult } from './lib.ts';
import { readsSection, type Measured, type RowSpec } from './reads-report.ts';
import { ACCOUNTS, ORDERS_PER_ACCOUNT, rotate as rotateOver, seedReads, type Target } from './reads-rig.ts';

const CONNECTIONS = 50;
const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
/** The extra rows are there for scale, not for a ratio: shorter runs keep the bench within minutes. */
const EXTRA_SECONDS = Number(process.env.BENCH_EXTRA_SECONDS ?? 6);
/** The main rows run this many times, one after the other in turn (alternating), for their spread. */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

const db = await benchDatabase('reads');
const pool = await createDatabasePool(db.url, { size: 4, statementTimeoutMs: 120_000, applicationName: 'bench' });
const { targets } = await seedReads(pool);

/** Whether Redis answers a PING within a second; without it the Redis baselines are skipped, not failed. */
async function redisAnswers(url: string): Promise<boolean> {
  const redis = new Redis(url, { lazyConnect: true, connectTimeout: 1000, maxRetriesPerRequest: 0, retryStrategy: () => null });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    return (await Promise.race([redis.ping(), new Promise((resolve) => setTimeout(resolve, 1000, null))])) === 'PONG';
  } catch {
    return false;
  } finally {
    redis.disconnect();
  }
}

// Every server as the Procfile runs the web role (its heap sizes), so their RSS compare.
const webFlags = await procfileNodeArgs('web');
const api = await spawnServer('api/main.ts', { DATABASE_URL: db.url, DB_POOL_SIZE: '10' }, '/v1/openapi.json', webFlags);
const bareServer = (store: 'redis' | 'postgres', driver: 'pg' | 'postgres') =>
  spawnServer('bench/reads-bare-server.ts', { DATABASE_URL: db.url, RATE_LIMIT_STORE: store, SQL_DRIVER: driver, REDIS_URL }, '/hello', webFlags);
const redisUp = await redisAnswers(REDIS_URL);
const bareRedisPg = redisUp ? await bareServer('redis', 'pg') : null;
const bareRedisPostgresJs = redisUp ? await bareServer('redis', 'postgres') : null;
const barePostgres = await bareServer('postgres', 'pg');

const rotate = (path: (t: Target) => string, headers?: (t: Target) => Record<string, string>) => rotateOver(targets, path, headers);

/** Every target read once (and its ETag kept for the 304 row), and every server answering 200: a benchmark of 404s measures nothing. */
async function sanity(): Promise<void> {
  for (const target of targets) {
    const auth = { authorization: `Bearer ${target.account.token}` };
    const res = await fetch(`${api.url}/v1/pedidos-producao/${target.pedido}`, { headers: auth });
    if (res.status !== 200) throw new Error(`GET pedido: ${res.status} ${await res.text()}`);
    await res.arrayBuffer();
    target.etag = res.headers.get('etag') ?? undefined;
  }
  const first = targets[0] as Target;
  const again = await fetch(`${api.url}/v1/pedidos-producao/${first.pedido}`,
    { headers: { authorization: `Bearer ${first.account.token}`, 'if-none-match': first.etag ?? '' } });
  if (again.status !== 304) throw new Error(`GET pedido with If-None-Match: ${again.status}`);
  const bares = [bareRedisPg, bareRedisPostgresJs, barePostgres].flatMap((bare) => (bare ? [bare] : []));
  for (const bare of bares) {
    const res = await fetch(`${bare.url}/pedidos/${first.account.contaId}/${first.pedido}`, { headers: { authorization: `Bearer ${first.account.token}` } });
    if (res.status !== 200) throw new Error(`${bare.url}: ${res.status} ${await res.text()}`);
    await res.arrayBuffer();
  }
}

const SERVICE = 'server (api/main.ts)';
const BARE = 'server (bench/reads-bare-server.ts)';

function mainRows(): RowSpec[] {
  const bare = (server: typeof barePostgres | null) => (server
    ? { url: server.url, connections: CONNECTIONS, seconds: SECONDS, rssOf: server.child.pid, writtenIn: db.url,
        setupRequest: rotate((t) => `/pedidos/${t.account.contaId}/${t.pedido}`) }
    : null);
  const service = (setupRequest: ReturnType<typeof rotate>) =>
    ({ url: api.url, connections: CONNECTIONS, seconds: SECONDS, rssOf: api.child.pid, writtenIn: db.url, setupRequest });
  const noRedis = `Redis does not answer at ${REDIS_URL}`;
  return [
    { key: 'A', name: 'baseline A: restify, RateLimiterRedis (ioredis), the SELECT as a named prepared statement (pg.Pool of 10)',
      server: BARE, redis: true, options: bare(bareRedisPg), skipped: noRedis },
    { key: 'ok', name: 'GET /v1/pedidos-producao/{id} → 200 (3 items)', server: SERVICE, redis: false,
      options: service(rotate((t) => `/v1/pedidos-producao/${t.pedido}`)) },
    { key: 'A2', name: 'baseline A′: restify, RateLimiterRedis (ioredis), the SELECT through postgres.js (prepared, max 10)',
      server: BARE, redis: true, options: bare(bareRedisPostgresJs), skipped: noRedis },
    { key: 'notModified', name: 'same, If-None-Match: its ETag → 304', server: SERVICE, redis: false,
      options: service(rotate((t) => `/v1/pedidos-producao/${t.pedido}`, (t) => ({ 'if-none-match': t.etag ?? '' }))) },
    { key: 'B', name: 'baseline B: restify, RateLimiterPostgres (its own table), the SELECT as a named prepared statement (pg.Pool of 10)',
      server: BARE, redis: false, options: bare(barePostgres) },
    { key: 'saude', name: 'GET /v1/saude → 200 (admission alone)', server: SERVICE, redis: false,
      options: service(rotate(() => '/v1/saude')) },
  ];
}

const statusText = (r: LoadResult) =>
  Object.entries(r.statuses).sort((a, b) => b[1] - a[1]).map(([code, count]) => `${code}: ${count}`).join(', ');

async function measure(name: string, options: Parameters<typeof load>[0]): Promise<LoadResult> {
  const r = await load(options);
  process.stdout.write(`${name}: ${r.rps} req/s, p50 ${r.p50} ms, p99 ${r.p99} ms (${statusText(r)}, ${r.errors} errors); `
    + `CPU µs/request: ${JSON.stringify(r.cpu)}; WAL ${r.written?.walBytes} B, rows ${r.written?.rows}; others' CPU ${Math.round(r.othersCpu * 100)}%\n`);
  return r;
}

/** The main rows ROUNDS times, one after the other in turn, so the machine's drift weighs on every row alike. */
async function rounds(rows: RowSpec[]): Promise<Measured[]> {
  const runs = new Map<string, LoadResult[]>();
  for (let round = 0; round < ROUNDS; round++) {
    for (const { key, name, options } of rows) {
      if (!options) continue;
      runs.set(key, [...(runs.get(key) ?? []), await measure(`round ${round + 1}, ${name}`, options)]);
    }
  }
  return rows.map(({ options: _options, ...row }) => ({ ...row, runs: runs.get(row.key) ?? [] }));
}

const EXTRAS: Record<string, (t: Target) => string> = {
  'GET /v1/cotacoes/{id} (3 items)': (t) => `/v1/cotacoes/${t.account.cotacao}`,
  'GET /v1/produtos/{id} (3 variations, 2 parts, 1 channel × 3 tiers)': (t) => `/v1/produtos/${t.account.produto}`,
  'GET /v1/estoque/movimentos/{id}': (t) => `/v1/estoque/movimentos/${t.account.movimento}`,
};

try {
  await sanity();
  const measured = await rounds(mainRows());
  for (const [name, path] of Object.entries(EXTRAS)) {
    const options = { url: api.url, connections: CONNECTIONS, seconds: EXTRA_SECONDS, rssOf: api.child.pid, setupRequest: rotate(path) };
    measured.push({ key: name, name: `${name} → 200`, server: SERVICE, redis: false, runs: [await measure(`${name} → 200`, options)] });
  }
  await writeSection('reads', readsSection(measured, {
    accounts: ACCOUNTS, orders: ACCOUNTS * ORDERS_PER_ACCOUNT, connections: CONNECTIONS, seconds: SECONDS, extraSeconds: EXTRA_SECONDS,
    rounds: ROUNDS, webFlags, database: process.env.DATABASE_URL ? 'from DATABASE_URL' : 'embedded (default settings, fsync on)',
    redis: redisUp ? `at ${REDIS_URL}` : 'not answering', service: SERVICE, bare: BARE,
  }));
} finally {
  await api.stop();
  await bareRedisPg?.stop();
  await bareRedisPostgresJs?.stop();
  await barePostgres.stop();
  await pool.end();
  await db.stop();
}
