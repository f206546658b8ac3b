// Admission (issue 3): GET /v1/saude through the full pipeline — key lookup, scope, concurrency
// slot, burst, minute and month counters, headers, request log — against a bare restify route doing
// one UPDATE and one SELECT on the same database, in the same run. Many accounts and keys, plans
// raised so nothing is refused.
import { createDatabasePool } from '../shared/db/pool.ts';
import { createAccount, createPlan } from '../test/helpers/fixtures.ts';
import { benchDatabase, cpuCell, load, spawnServer, writeSection, type LoadResult } from './lib.ts';

const ACCOUNTS = 200;
const SECONDS = Number(process.env.BENCH_SECONDS ?? 15);

const db = await benchDatabase('admission');
const pool = await createDatabasePool(db.url, { size: 4, statementTimeoutMs: 60_000, applicationName: 'bench' });
await createPlan(pool, 'bench', {
  chaves_ativas: 10, leituras_por_minuto: 100_000_000, escritas_por_minuto: 100_000_000, chamadas_por_mes: 2_000_000_000,
  rajada: 1_000_000, rajada_recarga_por_segundo: 1_000_000, simultaneas_por_chave: 1000, simultaneas_por_conta: 1000,
});
const tokens: string[] = [];
for (let i = 0; i < ACCOUNTS; i++) tokens.push((await createAccount(pool, { plano: 'bench', escopos: [] })).token);

const api = await spawnServer('api/main.ts', { DATABASE_URL: db.url, DB_POOL_SIZE: process.env.BENCH_POOL ?? '10' }, '/v1/openapi.json');
const bare = await spawnServer('bench/bare-server.ts', { DATABASE_URL: db.url }, '/hello');
let k = 0;

/** p50 of 2,000 sequential requests (after 300 of warm-up), in ms. */
async function sequential(url: string, headers: Record<string, string>): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < 2300; i++) {
    const started = performance.now();
    const res = await fetch(url, { headers });
    await res.arrayBuffer();
    if (i >= 300) times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)] ?? 0;
}
const withKey = (req: Record<string, any>) => ({ ...req, headers: { ...req.headers, authorization: `Bearer ${tokens[k++ % tokens.length]}` } });

try {
  const results: [string, LoadResult][] = [];
  const run = async (name: string, url: string, connections: number, setupRequest?: typeof withKey) => {
    const r = await load({ url, connections, seconds: SECONDS, setupRequest });
    process.stdout.write(`${name}: ${r.rps} req/s, p50 ${r.p50} ms, p99 ${r.p99} ms (${r.non2xx} non-2xx, ${r.errors} errors); CPU µs/request: ${cpuCell(r)}\n`);
    results.push([name, r]);
    return r;
  };
  // One request at a time on a quiet machine (docs/decisions/0012-admission-in-one-batched-round-trip.md), before the loads leave PostgreSQL busy
  // with their aftermath (autovacuum, checkpoints); timed here to the microsecond (autocannon
  // reports whole milliseconds).
  const quietHello = await sequential(`${bare.url}/hello`, {});
  const quietBare = await sequential(`${bare.url}/bare`, {});
  const quietFull = await sequential(`${api.url}/v1/saude`, { authorization: `Bearer ${tokens[0]}` });
  const bareUpdate = await run('bare restify, one UPDATE + one SELECT, 50 connections', `${bare.url}/bare`, 50);
  const full = await run('GET /v1/saude through full admission, 50 connections', `${api.url}/v1/saude`, 50, withKey);
  process.stdout.write(`one at a time, p50: bare route without database ${quietHello.toFixed(3)} ms, ` +
    `bare UPDATE + SELECT ${quietBare.toFixed(3)} ms, full admission ${quietFull.toFixed(3)} ms\n`);

  const ratio = full.rps / bareUpdate.rps;
  const added = quietFull - quietHello;
  const table = results.map(([name, r]) => `| ${name} | ${r.rps} | ${r.p50} | ${r.p99} | ${r.non2xx + r.errors} | ${cpuCell(r)} |`).join('\n');
  await writeSection('admission', `## Admission (GET /v1/saude)

${ACCOUNTS} accounts with one key each, requests spread over the keys; plans raised so nothing is
refused; autocannon in this process, the API and the baseline each in their own process, PostgreSQL
${process.env.DATABASE_URL ? 'from DATABASE_URL' : 'embedded (default settings, fsync on)'}; ${SECONDS} s per run after 2 s of warm-up.

| run | req/s | p50 ms | p99 ms | non-2xx/errors | CPU µs per request |
| --- | ---: | ---: | ---: | ---: | --- |
${table}

- Throughput ratio, full admission / one UPDATE + one SELECT: **${ratio.toFixed(2)}** (target ≥ 0.8).
  Admission goes in batches: every request waiting at a moment shares one round trip, one set of
  statements and one commit (api/admission-queue.ts); under this load a batch holds many requests.
- Added latency of admission at p50, one request at a time (full pipeline ${quietFull.toFixed(3)} ms minus a
  bare route without database ${quietHello.toFixed(3)} ms): **${added.toFixed(2)} ms** (target < 1 ms),
  measured before the loads. Alone a request is a batch of one, which PostgreSQL admits with
  api_admit_one (small statements on scalars, sql/code/admission_one.sql); its commit waits for no WAL flush, since
  the month counter is charged ahead in durable blocks (sql/migrations/0007_limites.sql). For scale, the bare route's
  UPDATE + SELECT adds ${(quietBare - quietHello).toFixed(2)} ms one at a time (${quietBare.toFixed(3)} ms).`);
} finally {
  await api.stop();
  await bare.stop();
  await pool.end();
  await db.stop();
}
