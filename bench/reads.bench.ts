// One-record reads: GET /v1/pedidos-producao/{id} through the whole pipeline (key, scope,
// admission with every ceiling, validation, the read, the strong ETag, the request log) answering
// 200, and the same request with If-None-Match answering 304; beside two baselines in the same run,
// bare restify servers that rate-limit with rate-limiter-flexible (on Redis, then on PostgreSQL) and
// run the same SELECT through plain pg (bench/reads-bare-server.ts). Then the service's other GETs of
// one record as extra rows. Many accounts with one key and one record of each kind, plans raised so
// nothing is refused. Figures are reported, never asserted.
import os from 'node:os';
import { Redis } from 'ioredis';
import { movimentar } from '../shared/db/estoque.ts';
import { createDatabasePool, sql } from '../shared/db/pool.ts';
import { criarCanalDeTeste, criarProdutoCompleto } from '../test/helpers/catalogo.ts';
import { itemAvulso, novaCotacao, novoPedido } from '../test/helpers/cotacoes.ts';
import { createAccount, createPlan } from '../test/helpers/fixtures.ts';
import { benchDatabase, load, procfileNodeArgs, spawnServer, writeSection, type LoadResult } from './lib.ts';

const ACCOUNTS = 50;
const CONNECTIONS = 50;
const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
/** The extra rows are there for scale, not for a ratio: shorter runs keep the bench within ~3 minutes. */
const EXTRA_SECONDS = Number(process.env.BENCH_EXTRA_SECONDS ?? 6);
/** The main rows run this many times in turn, each row keeping its fastest run. */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

const db = await benchDatabase('reads');
const pool = await createDatabasePool(db.url, { size: 4, statementTimeoutMs: 120_000, applicationName: 'bench' });
await createPlan(pool, 'bench_reads', {
  chaves_ativas: 10, leituras_por_minuto: 100_000_000, escritas_por_minuto: 100_000_000, chamadas_por_mes: 2_000_000_000,
  rajada: 1_000_000, rajada_recarga_por_segundo: 1_000_000, simultaneas_por_chave: 1000, simultaneas_por_conta: 1000,
});

/** One account: its key and one record of each kind a GET of one record reads. */
type Account = { token: string; contaId: string; pedido: string; cotacao: string; produto: string; movimento: string; etag?: string };

async function seedAccount(): Promise<Account> {
  // Every permission, custos.ver included: the order is read with its cost field, the larger body.
  const account = await createAccount(pool, { plano: 'bench_reads' });
  const itens = [itemAvulso('Suporte de parede', 2), itemAvulso('Engrenagem 40 dentes', 10), itemAvulso('Tampa com logo', 1)];
  const pedido = await novoPedido(pool, account.contaId, { itens: itens.map(({ nome, quantidade }) => ({ tipo: 'avulso', nome, quantidade })) });
  const cotacao = await novaCotacao(pool, account.contaId, { itens });
  const canal = await criarCanalDeTeste(pool, account.contaId);
  const produto = await criarProdutoCompleto(pool, account.contaId, {
    variacoes: [{ partes: ['Base', 'Tampa'] }, { partes: ['Base', 'Tampa'] }, { partes: ['Base', 'Tampa'] }],
    precos: [{ canalId: canal, faixas: [[1, 3900], [10, 3500], [50, 2900]] }],
  });
  const moved = await pool.transaction((tx) => movimentar(tx, account.contaId,
    { tipo: 'ajuste', variacao_id: produto.variacoes[0]?.id ?? '', contado: 100, motivo: 'correcao' }));
  if (!moved.ok) throw new Error(`could not seed a movement: ${moved.recusa}`);
  return { token: account.token, contaId: account.contaId, pedido, cotacao, produto: produto.produtoId, movimento: moved.movimento.id };
}

const accounts: Account[] = [];
for (let i = 0; i < ACCOUNTS; i++) accounts.push(await seedAccount());
await pool.query(sql.unsafe`ANALYZE`);

/** Whether Redis answers a PING within a second; without it the Redis baseline is skipped, not failed. */
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
const bareServer = (store: 'redis' | 'postgres') =>
  spawnServer('bench/reads-bare-server.ts', { DATABASE_URL: db.url, RATE_LIMIT_STORE: store, REDIS_URL }, '/hello', webFlags);
const redisUp = await redisAnswers(REDIS_URL);
const bareRedis = redisUp ? await bareServer('redis') : null;
const barePostgres = await bareServer('postgres');

/** Requests spread over the accounts, each with its own key: `path` gives the account's URL path. */
function spread(path: (a: Account) => string, headers: (a: Account) => Record<string, string> = () => ({})) {
  let n = 0;
  return (req: Record<string, any>) => {
    const account = accounts[n++ % ACCOUNTS] as Account;
    return { ...req, path: path(account), headers: { authorization: `Bearer ${account.token}`, ...headers(account) } };
  };
}

// The service's other GETs of one record (variations, materials and balances have none: they are
// read in lists).
const EXTRAS: Record<string, (a: Account) => string> = {
  'GET /v1/cotacoes/{id} (3 items)': (a) => `/v1/cotacoes/${a.cotacao}`,
  'GET /v1/produtos/{id} (3 variations, 2 parts, 1 channel × 3 tiers)': (a) => `/v1/produtos/${a.produto}`,
  'GET /v1/estoque/movimentos/{id}': (a) => `/v1/estoque/movimentos/${a.movimento}`,
};

/**
 * One request of each row before measuring, and every order's ETag for the 304 row: a benchmark of
 * refusals or 404s would measure nothing.
 */
async function sanity(): Promise<void> {
  for (const account of accounts) {
    const auth = { authorization: `Bearer ${account.token}` };
    const res = await fetch(`${api.url}/v1/pedidos-producao/${account.pedido}`, { headers: auth });
    if (res.status !== 200) throw new Error(`GET pedido: ${res.status} ${await res.text()}`);
    await res.arrayBuffer();
    account.etag = res.headers.get('etag') ?? undefined;
    const again = await fetch(res.url, { headers: { ...auth, 'if-none-match': account.etag ?? '' } });
    if (again.status !== 304) throw new Error(`GET pedido with If-None-Match: ${again.status}`);
  }
  const first = accounts[0] as Account;
  const urls = [
    ...[bareRedis, barePostgres].flatMap((bare) => (bare ? [`${bare.url}/pedidos/${first.contaId}/${first.pedido}`] : [])),
    ...Object.values(EXTRAS).map((path) => `${api.url}${path(first)}`),
  ];
  for (const url of urls) {
    const res = await fetch(url, { headers: { authorization: `Bearer ${first.token}` } });
    if (res.status !== 200) throw new Error(`${url}: ${res.status} ${await res.text()}`);
    await res.arrayBuffer();
  }
}

// The CPU report's labels (lib.ts): both baselines run the same script, one at a time.
const SERVICE = 'server (api/main.ts)';
const BARE = 'server (bench/reads-bare-server.ts)';

/**
 * A row of the table: `server` is its server's label in the CPU report, `redis` whether that server
 * talks to Redis (elsewhere Redis's own timer shows as 1–2 µs).
 */
type Row = { name: string; result: LoadResult | null; server: string; redis: boolean; skipped?: string | undefined };

const cpuOf = (r: LoadResult, label: string) => r.cpu[label] ?? 0;
const pgOf = (r: LoadResult) => cpuOf(r, 'PostgreSQL');
/** CPU µs per request of every process the row's requests went through (the load generator's left out). */
const serving = (r: LoadResult, row: Pick<Row, 'server' | 'redis'>) => pgOf(r) + cpuOf(r, row.server) + (row.redis ? cpuOf(r, 'Redis') : 0);
const statusText = (r: LoadResult) =>
  Object.entries(r.statuses).sort((a, b) => b[1] - a[1]).map(([code, count]) => `${code}: ${count}`).join(', ');

function tableRow({ name, result: r, server, redis, skipped }: Row): string {
  if (!r) return `| ${name} | skipped: ${skipped} | | | | | | | | | |`;
  return `| ${name} | ${r.rps} | ${r.p50} | ${r.p99} | ${statusText(r)}${r.errors ? `, errors: ${r.errors}` : ''} | `
    + `${pgOf(r)} | ${cpuOf(r, server)} | ${redis ? cpuOf(r, 'Redis') : '–'} | ${cpuOf(r, 'load generator (autocannon)')} | ${r.peakRssMb ?? ''} | ${Math.round(r.othersCpu * 100)} |`;
}

/** "12 µs more" or "12 µs less". */
const moreOrLess = (us: number) => (us >= 0 ? `${us} µs more` : `${-us} µs less`);

/** What the figures say: with every process sharing the machine's cores, a row's rate follows its CPU per request. */
function meaning(ok: LoadResult, notModified: LoadResult, redisBase: LoadResult | null, postgresBase: LoadResult | null): string {
  const pg = pgOf;
  const service = { server: SERVICE, redis: false };
  const node = (r: LoadResult) => cpuOf(r, r === redisBase || r === postgresBase ? BARE : SERVICE);
  const costs = [
    `the service's 200: ${serving(ok, service)} µs`, `its 304: ${serving(notModified, service)} µs`,
    ...(redisBase ? [`baseline A: ${serving(redisBase, { server: BARE, redis: true })} µs (Redis's ${cpuOf(redisBase, 'Redis')} included)`] : []),
    ...(postgresBase ? [`baseline B: ${serving(postgresBase, { server: BARE, redis: false })} µs`] : []),
  ];
  const lines = [
    `- What they mean: these processes share the machine's ${os.cpus().length} cores and keep them busy, so a row's rate is
  about the cores over its CPU per request (PostgreSQL, server, Redis):
  ${costs.join(', ')}.`,
  ];
  if (redisBase) {
    lines.push(`- Against baseline A the service's 200 spends ${moreOrLess(pg(ok) - pg(redisBase))} in PostgreSQL and
  ${moreOrLess(node(ok) - node(redisBase))} in its process, for the work the baseline leaves out: admission (the key, every
  ceiling and the concurrency slot, in one round trip shared by the requests waiting at a moment), the request log's rows,
  validation, the row checked against its schema, the ETag and the log line. The baseline's SELECT is parsed and planned
  at every call, as pool.query sends it.`);
  }
  if (postgresBase) {
    lines.push(`- Baseline B pays for its limiter in PostgreSQL: an upsert per request, committed on its own and waiting for
  its WAL flush${redisBase ? ` (${pg(postgresBase) - pg(redisBase)} µs a request over baseline A)` : ''}.
  Admission shares one commit among the requests of a batch, and its counters write no WAL (UNLOGGED
  tables; the month charged ahead in durable blocks).`);
  }
  lines.push(`- A 304 of one record is answered from admission's verdict: admission looks up the order's version
  (versao_do_recurso, in the round trip that charges the request) and, when If-None-Match names it in the caller's
  representation, the handler neither reads nor serializes the order (docs/decisions.md, "A 304 of one record reads
  nothing but admission"). The 304 costs PostgreSQL ${pg(notModified)} µs a request against the 200's ${pg(ok)}, and the
  process ${node(notModified)} µs against ${node(ok)}.`);
  return lines.join('\n');
}

const ratioText = (a: LoadResult | null, b: LoadResult | null, goal: string) =>
  a && b ? `**${(a.rps / b.rps).toFixed(2)}** (${a.rps} / ${b.rps}; goal ${goal})` : `skipped (the baseline did not run; goal ${goal})`;

/** A row measured in rounds: its load, or why it cannot run. */
type Measured = Omit<Row, 'result'> & { options: Parameters<typeof load>[0] | null };

function mainRows(): Measured[] {
  const order = spread((a) => `/v1/pedidos-producao/${a.pedido}`);
  const bare = (server: typeof barePostgres | null) => (server
    ? { url: server.url, connections: CONNECTIONS, seconds: SECONDS, rssOf: server.child.pid, setupRequest: spread((a) => `/pedidos/${a.contaId}/${a.pedido}`) }
    : null);
  // The service's two rows side by side, between the baselines, so the machine's drift over a
  // round weighs on both ratios alike.
  return [
    { name: 'baseline A: bare restify, RateLimiterRedis (ioredis) + the SELECT (pg.Pool of 10)', server: BARE, redis: true,
      options: bare(bareRedis), skipped: `Redis does not answer at ${REDIS_URL}` },
    { name: 'GET /v1/pedidos-producao/{id} → 200 (3 items)', server: SERVICE, redis: false,
      options: { url: api.url, connections: CONNECTIONS, seconds: SECONDS, rssOf: api.child.pid, setupRequest: order } },
    { name: 'same, If-None-Match: its ETag → 304', server: SERVICE, redis: false,
      options: { url: api.url, connections: CONNECTIONS, seconds: SECONDS, rssOf: api.child.pid,
        setupRequest: spread((a) => `/v1/pedidos-producao/${a.pedido}`, (a) => ({ 'if-none-match': a.etag ?? '' })) } },
    { name: 'baseline B: bare restify, RateLimiterPostgres (own table) + the SELECT (pg.Pool of 10)', server: BARE, redis: false,
      options: bare(barePostgres) },
  ];
}

async function measure(name: string, options: Parameters<typeof load>[0]): Promise<LoadResult> {
  const r = await load(options);
  process.stdout.write(`${name}: ${r.rps} req/s, p50 ${r.p50} ms, p99 ${r.p99} ms (${statusText(r)}, ${r.errors} errors); `
    + `CPU µs/request: ${JSON.stringify(r.cpu)}; peak RSS ${r.peakRssMb} MB; others' CPU ${Math.round(r.othersCpu * 100)}%\n`);
  return r;
}

/**
 * The main rows ROUNDS times, in turn; each keeps its fastest run. Other work on a shared machine
 * only ever slows a run down, so the fastest is the closest to what the machine allows.
 */
async function bestOfRounds(rows: Measured[]): Promise<Row[]> {
  const best = new Map<string, LoadResult>();
  for (let round = 0; round < ROUNDS; round++) {
    for (const { name, options } of rows) {
      if (!options) continue;
      const r = await measure(name, options);
      if (r.rps > (best.get(name)?.rps ?? -1)) best.set(name, r);
    }
  }
  return rows.map(({ options: _options, ...row }) => ({ ...row, result: best.get(row.name) ?? null }));
}

try {
  await sanity();
  const rows = await bestOfRounds(mainRows());
  const [redisBase = null, ok, notModified, postgresBase = null] = rows.map((row) => row.result);
  if (!ok || !notModified) throw new Error('the service\'s rows did not run');
  for (const [name, path] of Object.entries(EXTRAS)) {
    const options = { url: api.url, connections: CONNECTIONS, seconds: EXTRA_SECONDS, rssOf: api.child.pid, setupRequest: spread(path) };
    rows.push({ name: `${name} → 200`, server: SERVICE, redis: false, result: await measure(`${name} → 200`, options) });
  }

  await writeSection('reads', `## One-record reads (GET /v1/pedidos-producao/{id}, 200 and 304)

${ACCOUNTS} accounts with one key each and one record of each kind, requests spread over the accounts,
${CONNECTIONS} connections; plans raised so nothing is refused. autocannon in this process; the API (DB_POOL_SIZE 10)
and each baseline in a process of its own, all with the web role's flags (\`${webFlags.join(' ')}\`);
PostgreSQL ${process.env.DATABASE_URL ? 'from DATABASE_URL' : 'embedded (default settings, fsync on)'}, Redis ${redisUp ? `at ${REDIS_URL}` : 'not answering'};
${SECONDS} s per run after 2 s of warm-up; the four main rows ran ${ROUNDS} times in turn and each shows its
fastest run (other work on a shared machine only slows a run down); the extra rows once, ${EXTRA_SECONDS} s.
The baselines are bare restify servers (bench/reads-bare-server.ts) that per request consume one point
of rate-limiter-flexible keyed by the Authorization header, then run the service's SELECT of an order
(lerPedido) through plain pg (pool.query) and JSON.stringify the row: no authentication, validation,
ETag or request log. CPU is per request over the measured run; RSS is the server process's peak over
the row's run (the API's rows share a process, so a later row's peak includes what an earlier one
left). The last column is the share of the machine's CPU that went to processes outside the benchmark
during the run (other work on a shared machine, another PostgreSQL included): a row measured beside
them is slower than the machine allows.

| run | req/s | p50 ms | p99 ms | answers | PostgreSQL CPU µs/req | server CPU µs/req | Redis CPU µs/req | load generator CPU µs/req | peak RSS MB | others' CPU % |
| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |
${rows.map(tableRow).join('\n')}

- Service 200 / Redis baseline: ${ratioText(ok, redisBase, '≥ 0.8')}.
- Service 200 / Postgres baseline: ${ratioText(ok, postgresBase, '≥ 1')}.
- 304 / 200: ${ratioText(notModified, ok, '≥ 1.5')}.
${meaning(ok, notModified, redisBase, postgresBase)}`);
} finally {
  await api.stop();
  await bareRedis?.stop();
  await barePostgres.stop();
  await pool.end();
  await db.stop();
}
