// Admission: GET /v1/saude through the full pipeline (key lookup, scope, concurrency slot, burst,
// minute and month counters, headers, request log) against a bare restify route doing one UPDATE and
// one SELECT on the same database, alternately in the same rounds; then api_admit called directly,
// by batch size, for what admission itself costs PostgreSQL. 200 accounts with one key each, plans
// raised so nothing is refused.
import { createDatabasePool } from '#shared/db/pool.ts';
import { createAccount, createPlan } from '../test/helpers/fixtures.ts';
import { admissionCalls, type CallsRow, type Key } from './admission-calls.ts';
import { benchDatabase, cpuCell, load, spawnServer, writeSection, type LoadResult } from './lib.ts';
import { spread } from './spread.ts';

const ACCOUNTS = 200;
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CALL_SECONDS = Number(process.env.BENCH_CALL_SECONDS ?? 4);
const SIZES = [1, 4, 16, 64];

const db = await benchDatabase('admission');
const pool = await createDatabasePool(db.url, { size: 4, statementTimeoutMs: 60_000, applicationName: 'bench' });
await createPlan(pool, 'bench', {
  chaves_ativas: 10, leituras_por_minuto: 100_000_000, escritas_por_minuto: 100_000_000, chamadas_por_mes: 2_000_000_000,
  rajada: 1_000_000, rajada_recarga_por_segundo: 1_000_000, simultaneas_por_chave: 1000, simultaneas_por_conta: 1000,
});
const keys: Key[] = [];
for (let i = 0; i < ACCOUNTS; i++) keys.push(await createAccount(pool, { plano: 'bench', escopos: [] }));

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
const withKey = (req: Record<string, any>) => ({ ...req, headers: { ...req.headers, authorization: `Bearer ${keys[k++ % keys.length]?.token}` } });

type Row = { name: string; runs: LoadResult[] };
const pg = (r: LoadResult) => r.cpu.PostgreSQL ?? 0;

function httpRow({ name, runs }: Row): string {
  const of = (pick: (r: LoadResult) => number) => spread(runs.map(pick));
  const cpu = runs.map(cpuCell).join('; ');
  return `| ${name} | ${of((r) => r.rps)} | ${of((r) => r.p50)} | ${of((r) => r.p99)} | ${runs.reduce((n, r) => n + r.non2xx + r.errors, 0)} | `
    + `${of(pg)} | ${of((r) => r.written?.walBytes ?? 0)} | ${cpu} |`;
}

function callsRow(size: number, runs: CallsRow[]): string {
  return `| ${size} | ${spread(runs.map((r) => r.requestsPerSecond))} | **${spread(runs.map((r) => r.pgUs))}** | ${spread(runs.map((r) => r.walBytes))} |`;
}

try {
  // One request at a time on a quiet machine, before the loads leave PostgreSQL busy with their
  // aftermath (autovacuum, checkpoints); timed here to the microsecond (autocannon reports whole ms).
  const quietHello = await sequential(`${bare.url}/hello`, {});
  const quietBare = await sequential(`${bare.url}/bare`, {});
  const quietFull = await sequential(`${api.url}/v1/saude`, { authorization: `Bearer ${keys[0]?.token}` });
  const rows: Row[] = [{ name: 'bare restify, one UPDATE + one SELECT, 50 connections', runs: [] },
    { name: 'GET /v1/saude through full admission, 50 connections', runs: [] }];
  const [bareRow, fullRow] = rows as [Row, Row];
  const calls = new Map<number, CallsRow[]>(SIZES.map((size) => [size, []]));
  for (let round = 0; round < ROUNDS; round++) {
    for (const [row, url, setup] of [[bareRow, `${bare.url}/bare`, undefined], [fullRow, `${api.url}/v1/saude`, withKey]] as const) {
      const r = await load({ url, connections: 50, seconds: SECONDS, setupRequest: setup, writtenIn: db.url });
      process.stdout.write(`round ${round + 1}, ${row.name}: ${r.rps} req/s, p50 ${r.p50} ms, p99 ${r.p99} ms; CPU µs/request: ${cpuCell(r)}; WAL ${r.written?.walBytes} B\n`);
      row.runs.push(r);
    }
    for (const result of await admissionCalls(db.url, keys, SIZES, CALL_SECONDS)) {
      process.stdout.write(`round ${round + 1}, api_admit of ${result.size}: ${result.requestsPerSecond} req/s, PostgreSQL ${result.pgUs} µs/request, WAL ${result.walBytes} B/request\n`);
      calls.get(result.size)?.push(result);
    }
  }
  const ratios = fullRow.runs.map((r, i) => r.rps / Math.max(1, bareRow.runs[i]?.rps ?? 1));
  const added = quietFull - quietHello;
  await writeSection('admission', `## Admission (GET /v1/saude, and api_admit alone)

${ACCOUNTS} accounts with one key each, requests spread over the keys; plans raised so nothing is
refused; autocannon in this process, the API and the baseline each in their own process, PostgreSQL
${process.env.DATABASE_URL ? 'from DATABASE_URL' : 'embedded (default settings, fsync on)'}. The two HTTP rows ran ${ROUNDS} times, alternately,
${SECONDS} s each after 2 s of warm-up; each cell is the median of the runs and their spread (min–max). WAL is per request,
the request log's row included.

| run | req/s | p50 ms | p99 ms | non-2xx/errors | PostgreSQL CPU µs/req | WAL B/req | CPU µs per request, each run |
| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |
${rows.map(httpRow).join('\n')}

- Throughput ratio, full admission / one UPDATE + one SELECT: **${spread(ratios, 2)}** (target ≥ 0.8).
- Added latency of admission at p50, one request at a time (full pipeline ${quietFull.toFixed(3)} ms minus a
  bare route without database ${quietHello.toFixed(3)} ms): **${added.toFixed(2)} ms** (target < 1 ms), measured
  before the loads. For scale, the bare route's UPDATE + SELECT adds ${(quietBare - quietHello).toFixed(2)} ms one at a time.

**api_admit alone** (sql/code/admission.sql), called as a web process calls it: a named statement from 3 connections
at once, each call a batch of distinct keys that gives back the slots its connection's previous call took;
${CALL_SECONDS} s per size, ${ROUNDS} rounds. PostgreSQL CPU (from /proc) and WAL per admitted request; goal ≤ 60 µs and ≤ 300 B.

| requests per call | admitted/s | PostgreSQL CPU µs per request | WAL B per request |
| ---: | ---: | ---: | ---: |
${SIZES.map((size) => callsRow(size, calls.get(size) ?? [])).join('\n')}

- A call costs a fixed part (its few statements, each started anew) and a part per request; under load a web
  process sends the requests waiting at a moment together, so the batch grows with the load.`);
} finally {
  await api.stop();
  await bare.stop();
  await pool.end();
  await db.stop();
}
