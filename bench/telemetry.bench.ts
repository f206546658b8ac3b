// What OpenTelemetry costs (issue 36; docs/decisions/0049-opentelemetry.md): the same work with
// telemetry off (no OTEL_ variable: the SDK not loaded) and on (OTEL_EXPORTER_OTLP_ENDPOINT naming a
// real OTLP/HTTP sink, bench/otlp-sink.ts, a process of its own that reads every export and drops it;
// the span batch delay and the metric interval at their defaults), in the same run, in turn.
// (1) The reads bench's GET of one production order (bench/reads-rig.ts): three web processes at
//     once, off, on (every trace sampled: parentbased_always_on, the default) and on with 10 % of
//     traces sampled (traceidratio 0.1), loaded one after the other in each of ROUNDS rounds.
// (2) The webhooks bench's drains and steady run (bench/webhooks-rig.ts): in each round a worker off,
//     one on and one on10 deliver a backlog of 2,000 events to one endpoint, then one of 20,000 over
//     20 endpoints, then 200 events/s for STEADY_SECONDS (commit → receipt). On, each event comes from
//     a traced change (its own sampled trace in outbox.traceparent, as a traced request's write
//     leaves it); on10, from a traced change sampled as a web process sampling 10 % decides (about
//     1 in 10 with flags 01, the rest 00), the worker started as on10's web process; off, from an
//     untraced one, as the web with telemetry off leaves it.
// Figures are reported, never asserted.
import type { ChildProcess } from 'node:child_process';
import { ROOT_CONTEXT } from '@opentelemetry/api';
import { SamplingDecision, TraceIdRatioBasedSampler } from '@opentelemetry/sdk-trace';
import { z } from 'zod';
import { archiveEnded, FROM_THE_START } from '#shared/db/archive.ts';
import { createDatabasePool, sql, type Pool } from '#shared/db/pool.ts';
import { createPlan } from '../test/helpers/fixtures.ts';
import { benchDatabase, load, procfileNodeArgs, spawnServer, writeSection, type LoadResult } from './lib.ts';
import type { SinkStats } from './otlp-sink.ts';
import { ACCOUNTS, ORDERS_PER_ACCOUNT, rotate, seedReads, type Target } from './reads-rig.ts';
import { fmt, median, spread } from './spread.ts';
import {
  accountsWithEndpoints, allRecorded, arrivedAt, closeReceiver, counts, cpuBetween, emitBacklog, emitOne, latencies, log, mark, memoryOf, perSecond, postgresByRole,
  spawnWorker, steady, stopAllWorkers, stopChild, stopWorker, until, usOf, watch, watchPostgres, watchProcess, workerListening, type CpuUse,
  type Tracing,
} from './webhooks-rig.ts';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONNECTIONS = 50;
const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
const W_ACCOUNTS = 20;
const BACKLOG = Number(process.env.BENCH_WEBHOOK_BACKLOG ?? 20_000);
const ONE_BACKLOG = Number(process.env.BENCH_WEBHOOK_ONE_BACKLOG ?? 2_000);
const RATE = 200;
const STEADY_SECONDS = Number(process.env.BENCH_STEADY_SECONDS ?? 15);
/** Longer than OTEL_BSP_SCHEDULE_DELAY's default (5 s): after it, a web process has exported every span it ended. */
const SETTLE_MS = 6_000;
const SINK = 'server (bench/otlp-sink.ts)';
const WEB = 'server (api/main.ts)';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const db = await benchDatabase('telemetry');
const pool = await createDatabasePool(db.url, { size: 4, statementTimeoutMs: 120_000, applicationName: 'bench' });
const pgVersion = await pool.oneFirst(sql.type(z.object({ v: z.string() }))`SELECT current_setting('server_version') AS v`);
const sink = await spawnServer('bench/otlp-sink.ts', {}, '/stats');
watchProcess(sink.child.pid, 'OTLP sink');
const sinkStats = async () => (await (await fetch(`${sink.url}/stats`)).json()) as SinkStats;
/** What the sink received between two readings, per unit of work. */
type Exported = { spans: number; bytes: number; metricBytes: number; exports: number };
const exportedPer = (a: SinkStats, b: SinkStats, units: number): Exported => ({
  spans: (b.traces.spans - a.traces.spans) / Math.max(1, units),
  bytes: (b.traces.bytes - a.traces.bytes) / Math.max(1, units),
  metricBytes: (b.metrics.bytes - a.metrics.bytes) / Math.max(1, units),
  exports: b.traces.exports - a.traces.exports + b.metrics.exports - a.metrics.exports,
});

type Variant = { key: 'off' | 'on' | 'on10'; name: string; env: Record<string, string> };
const ON = { OTEL_EXPORTER_OTLP_ENDPOINT: sink.url };
const ON10_RATIO = 0.1;
const VARIANTS: Variant[] = [
  { key: 'off', name: 'telemetry off (no OTEL_ variable)', env: {} },
  { key: 'on', name: 'on, every trace sampled (default parentbased_always_on)', env: ON },
  { key: 'on10', name: 'on, 10 % of traces sampled (traceidratio 0.1)', env: { ...ON, OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: String(ON10_RATIO) } },
];
/** How the changes a variant's worker delivers were traced: as its web process would leave them. */
const tracingOf = (v: Variant): Tracing => (v.key === 'off' ? false : v.key === 'on10' ? ON10_RATIO : true);

// ---------------------------------------------------------------------------------------- (1) reads
type ReadRun = { r: LoadResult; exported: Exported };
type ReadRow = Variant & { runs: ReadRun[]; unloaded: Exported | null };

async function reads(): Promise<{ rows: ReadRow[]; webFlags: string[] }> {
  const { targets } = await seedReads(pool);
  const webFlags = await procfileNodeArgs('web');
  const servers = new Map<string, Awaited<ReturnType<typeof spawnServer>>>();
  try {
    for (const v of VARIANTS) {
      servers.set(v.key, await spawnServer('api/main.ts', { DATABASE_URL: db.url, DB_POOL_SIZE: '10', ...v.env }, '/v1/openapi.json', webFlags));
    }
    const rows: ReadRow[] = [];
    for (const v of VARIANTS) {
      const server = servers.get(v.key);
      if (!server) throw new Error(v.key);
      // 200 targets read one at a time: each answers 200 (a benchmark of 404s measures nothing), and
      // what a request exports when nothing is dropped.
      const before = await sinkStats();
      for (const [i, t] of targets.entries()) {
        const res = await fetch(`${server.url}/v1/pedidos-producao/${t.pedido}`, { headers: { authorization: `Bearer ${t.account.token}` } });
        if (res.status !== 200) throw new Error(`${v.key}: GET pedido ${res.status} ${await res.text()}`);
        await res.arrayBuffer();
        if (i === 199) break;
      }
      if (v.key !== 'off') await sleep(SETTLE_MS);
      const unloaded = v.key === 'off' ? null : exportedPer(before, await sinkStats(), 200);
      log(`${v.key}: unloaded, ${JSON.stringify(unloaded)} exported per request`);
      rows.push({ ...v, runs: [], unloaded });
    }
    for (let round = 0; round < ROUNDS; round++) {
      for (const row of rows) {
        const server = servers.get(row.key);
        if (!server) throw new Error(row.key);
        const before = await sinkStats();
        const r = await load({
          url: server.url, connections: CONNECTIONS, seconds: SECONDS, rssOf: server.child.pid,
          setupRequest: rotate(targets, (t: Target) => `/v1/pedidos-producao/${t.pedido}`),
        });
        // The spans it ended last leave after the batch delay: counted with this run, before the next.
        if (row.key !== 'off') await sleep(SETTLE_MS);
        const exported = exportedPer(before, await sinkStats(), r.requests + r.warmupRequests);
        row.runs.push({ r, exported });
        log(`round ${round + 1}, ${row.key}: ${r.rps} req/s, p50 ${r.p50} ms, p99 ${r.p99} ms (${JSON.stringify(r.statuses)}, ${r.errors} errors); `
          + `CPU µs/request ${JSON.stringify(r.cpu)}; exported/request ${exported.spans.toFixed(2)} spans, ${Math.round(exported.bytes)} B; `
          + `peak RSS ${r.peakRssMb} MB; others' CPU ${Math.round(r.othersCpu * 100)}%`);
      }
    }
    return { rows, webFlags };
  } finally {
    for (const server of servers.values()) await stopChild(server.child);
  }
}

// ------------------------------------------------------------------------------------- (2) webhooks
const PLAN = {
  chaves_ativas: 10, leituras_por_minuto: 1000, escritas_por_minuto: 1000, chamadas_por_mes: 1_000_000, rajada: 100,
  rajada_recarga_por_segundo: 100, simultaneas_por_chave: 10, simultaneas_por_conta: 10, entregas_webhook_por_hora: 100_000_000,
};
const endpoints = (on: Pool, prefix: string, n: number) => accountsWithEndpoints(on, 'bench_webhooks', prefix, n);

type Drained = { rate: number; cpu: CpuUse | null; pg: Record<string, number>; peakRssMb: number; worker: ChildProcess | null };
/** A backlog of `n` events to `to`, committed at once while a worker runs, as bench/webhooks.bench.ts drains it. */
async function drain(on: Pool, url: string, group: string, to: readonly string[], n: number, keep: boolean, v: Variant): Promise<Drained> {
  await archiveEnded(on, FROM_THE_START, { afterSeconds: 0 });
  await on.query(sql.unsafe`VACUUM ANALYZE outbox, deliveries, delivery_attempts`);
  const worker = spawnWorker(url, v.env);
  await until(() => workerListening(on));
  await sleep(2_000);
  const s = watch(group, n);
  await emitBacklog(on, to, n, tracingOf(v));
  await until(() => s.count >= n, 180_000);
  const pg = s.cpuFirst && s.cpuLast ? await postgresByRole(on, s.cpuFirst, s.cpuLast, n) : {};
  const memory = await memoryOf(worker.pid);
  await allRecorded(on);
  if (!keep) await stopWorker(worker);
  return { rate: perSecond(n, s.first, s.last), cpu: s.cpuFirst && s.cpuLast ? cpuBetween(s.cpuFirst, s.cpuLast, n) : null, pg, peakRssMb: memory.peak, worker: keep ? worker : null };
}

type Steady = { p50: number; p99: number; cpu: CpuUse; events: number };
async function steadyRun(on: Pool, to: readonly string[], v: Variant): Promise<Steady> {
  const from = mark();
  const committed = await steady(RATE, STEADY_SECONDS, emitOne(on, to, tracingOf(v)));
  await until(() => [...committed.keys()].every((id) => arrivedAt.has(id)), 60_000);
  await allRecorded(on);
  const hook = latencies(committed);
  return { p50: hook.p50, p99: hook.p99, cpu: cpuBetween(from, mark(), committed.size), events: committed.size };
}

type HookRun = { one: Drained; many: Drained; after: Steady; exported: Exported };
type HookRow = Variant & { runs: HookRun[] };

async function webhooks(): Promise<HookRow[]> {
  const url = await db.sibling('webhooks');
  const on = await createDatabasePool(url, { size: 4, statementTimeoutMs: 120_000, applicationName: 'bench' });
  try {
    await createPlan(on, 'bench_webhooks', PLAN);
    await watchPostgres(url);
    const contas = await endpoints(on, 'r', W_ACCOUNTS);
    const [one = ''] = await endpoints(on, 'one', 1);
    // Each traced event is a trace of its own (checked, then rolled back: no worker is to see them).
    let distinct = 0;
    const rollback = new Error('rollback');
    await on.transaction(async (tx) => {
      await emitBacklog(tx as unknown as Pool, [one], 5, true);
      distinct = await tx.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(DISTINCT traceparent)::int AS n FROM outbox WHERE traceparent IS NOT NULL`);
      throw rollback;
    }).catch((error: unknown) => { if (error !== rollback) throw error; });
    if (distinct !== 5) throw new Error(`traced backlog: ${distinct} distinct traceparents of 5`);
    await checkSampledShare(on, one);
    const rows: HookRow[] = VARIANTS.map((v) => ({ ...v, runs: [] }));
    for (let round = 0; round < ROUNDS; round++) {
      for (const row of rows) {
        const before = await sinkStats();
        const oneDrain = await drain(on, url, '/one', [one], ONE_BACKLOG, false, row);
        const many = await drain(on, url, '/r', contas, BACKLOG, true, row);
        const after = await steadyRun(on, contas, row);
        const memory = await memoryOf(many.worker?.pid);
        await stopWorker(many.worker as ChildProcess);
        // A worker flushes its spans and metrics as it stops.
        await sleep(500);
        const exported = exportedPer(before, await sinkStats(), ONE_BACKLOG + BACKLOG + after.events);
        row.runs.push({ one: oneDrain, many: { ...many, peakRssMb: Math.max(many.peakRssMb, memory.peak) }, after, exported });
        log(`round ${round + 1}, ${row.key}: one endpoint ${oneDrain.rate}/s, ${W_ACCOUNTS} endpoints ${many.rate}/s `
          + `(CPU µs/delivery ${JSON.stringify(many.cpu?.us)}), steady p50 ${after.p50.toFixed(1)} ms p99 ${after.p99.toFixed(1)} ms `
          + `(worker µs/event ${usOf(after.cpu, 'worker')}); exported/delivery ${exported.spans.toFixed(2)} spans, ${Math.round(exported.bytes)} B`);
      }
    }
    return rows;
  } finally {
    await stopAllWorkers();
    await on.end();
  }
}

/**
 * on10's changes (checked on 5,000, then rolled back): about 10 % sampled, each with the flag the
 * SDK's own TraceIdRatioBased sampler (what a web process with traceidratio 0.1 runs) gives its trace id.
 */
async function checkSampledShare(on: Pool, endpoint: string): Promise<void> {
  const n = 5_000;
  let tps: readonly string[] = [];
  const rollback = new Error('rollback');
  await on.transaction(async (tx) => {
    await emitBacklog(tx as unknown as Pool, [endpoint], n, ON10_RATIO);
    tps = await tx.anyFirst(sql.type(z.object({ tp: z.string() }))`SELECT traceparent AS tp FROM outbox WHERE traceparent IS NOT NULL`);
    throw rollback;
  }).catch((error: unknown) => { if (error !== rollback) throw error; });
  const sampler = new TraceIdRatioBasedSampler(ON10_RATIO);
  const sampled = tps.filter((tp) => tp.endsWith('-01')).length;
  const disagree = tps.filter((tp) => {
    const [, traceId = ''] = tp.split('-');
    const bySampler = sampler.shouldSample(ROOT_CONTEXT, traceId).decision === SamplingDecision.RECORD_AND_SAMPLED;
    return bySampler !== tp.endsWith('-01');
  }).length;
  log(`on10's changes: ${sampled} of ${tps.length} sampled, ${disagree} flags not as TraceIdRatioBased(${ON10_RATIO}) decides`);
  if (tps.length !== n || disagree > 0 || Math.abs(sampled / n - ON10_RATIO) > 0.02) {
    throw new Error(`on10's changes: ${tps.length} of ${n} traced, ${sampled} sampled, ${disagree} flags unlike the sampler's`);
  }
}

// ------------------------------------------------------------------------------------------- report
const pct = (x: number) => `${x >= 0 ? '+' : '−'}${fmt(Math.abs(x) * 100, 1)} %`;
/** Each round's ON figure against OFF's of the same round: "−3.1 % (−5.0 to −1.2 %)", the rounds in order. */
function change(on: number[], off: number[]): { text: string; worst: number; rounds: number[] } {
  const rounds = on.map((x, i) => x / Math.max(1e-9, off[i] ?? 0) - 1);
  const lo = Math.min(...rounds);
  const hi = Math.max(...rounds);
  return { text: `**${pct(median(rounds))}** (${pct(lo)} to ${pct(hi)}; rounds ${rounds.map(pct).join(', ')})`, worst: lo, rounds };
}
const verdict = (worst: number) => (worst >= -0.1 ? 'met in every round' : `missed: down ${fmt(-worst * 100, 1)} % in the worst round (goal ≤ 10 %)`);

function report(readRows: ReadRow[], webFlags: string[], hookRows: HookRow[]): string {
  const off = readRows.find((r) => r.key === 'off') as ReadRow;
  const rps = (row: ReadRow) => row.runs.map((x) => x.r.rps);
  const cpu = (row: ReadRow, label: string) => row.runs.map((x) => x.r.cpu[label] ?? 0);
  const readTable = readRows.map((row) => `| ${row.name} | ${spread(rps(row))} | ${row.key === 'off' ? '' : change(rps(row), rps(off)).text} | `
    + `${spread(row.runs.map((x) => x.r.p50))} | ${spread(row.runs.map((x) => x.r.p99))} | ${spread(cpu(row, WEB))} | ${spread(cpu(row, 'PostgreSQL'))} | `
    + `${row.key === 'off' ? '–' : spread(cpu(row, SINK))} | ${spread(cpu(row, 'load generator (autocannon)'))} | `
    + `${row.key === 'off' ? '–' : `${spread(row.runs.map((x) => x.exported.spans), 2)} (${fmt(row.unloaded?.spans ?? 0, 2)})`} | `
    + `${row.key === 'off' ? '–' : `${spread(row.runs.map((x) => x.exported.bytes))} (${fmt(row.unloaded?.bytes ?? 0)})`} | `
    + `${spread(row.runs.map((x) => x.r.peakRssMb ?? 0))} | ${row.runs.reduce((s, x) => s + x.r.errors + x.r.non2xx, 0)} | ${Math.max(...row.runs.map((x) => Math.round(x.r.othersCpu * 100)))} |`);
  const hOff = hookRows.find((r) => r.key === 'off') as HookRow;
  const hOn = hookRows.find((r) => r.key === 'on') as HookRow;
  const hOn10 = hookRows.find((r) => r.key === 'on10') as HookRow;
  const h = (row: HookRow, pick: (x: HookRun) => number, digits = 0) => spread(row.runs.map(pick), digits);
  const hookLine = (name: string, pick: (x: HookRun) => number, digits = 0, compare = false) =>
    `| ${name} | ${h(hOff, pick, digits)} | ${[hOn, hOn10].map((row) => `${h(row, pick, digits)} | ${compare ? change(row.runs.map(pick), hOff.runs.map(pick)).text : ''}`).join(' | ')} |`;
  const on = readRows.find((r) => r.key === 'on') as ReadRow;
  const on10 = readRows.find((r) => r.key === 'on10') as ReadRow;
  const rOn = change(rps(on), rps(off));
  const rOn10 = change(rps(on10), rps(off));
  const dOne = change(hOn.runs.map((x) => x.one.rate), hOff.runs.map((x) => x.one.rate));
  const dMany = change(hOn.runs.map((x) => x.many.rate), hOff.runs.map((x) => x.many.rate));
  const dOne10 = change(hOn10.runs.map((x) => x.one.rate), hOff.runs.map((x) => x.one.rate));
  const dMany10 = change(hOn10.runs.map((x) => x.many.rate), hOff.runs.map((x) => x.many.rate));
  return `## Telemetry (OpenTelemetry over OTLP, issue 36)

The same work with telemetry off (no \`OTEL_\` variable: the SDK is not loaded) and on
(\`OTEL_EXPORTER_OTLP_ENDPOINT\` naming a real OTLP/HTTP sink, bench/otlp-sink.ts: a process of its own on the same
machine that reads every export body to its end, counts its bytes and spans and drops it, answering 200 as a collector
does; JSON encoding, no compression; \`OTEL_BSP_SCHEDULE_DELAY\` and \`OTEL_METRIC_EXPORT_INTERVAL\` at their defaults,
5 s and 60 s), in the same run, in turn, ${ROUNDS} rounds. PostgreSQL ${pgVersion} embedded (default settings, fsync on);
Node ${process.version}. Written by \`npm run bench -- telemetry\` (bench/telemetry.bench.ts).

**Reads**: GET /v1/pedidos-producao/{id} → 200 as in "One-record reads" (${ACCOUNTS} accounts, ${ACCOUNTS * ORDERS_PER_ACCOUNT}
orders rotating, ${CONNECTIONS} connections, autocannon in the bench process, ${SECONDS} s after 2 s of warm-up); three web
processes (\`node ${webFlags.join(' ')} api/main.ts\`, DB_POOL_SIZE 10) up at once, off, on, and on sampling 10 %,
loaded one after the other in each round. CPU is per request from /proc over the measured run; "exported" counts what
the sink received from the warm-up's start until ${SETTLE_MS / 1000} s after the run (the span batch's delay), per request,
and in brackets the same for 200 requests sent one at a time (nothing dropped).

| web process | req/s | change vs off, same round | p50 ms | p99 ms | web CPU µs/req | PostgreSQL µs/req | sink µs/req | autocannon µs/req | spans exported/req (unloaded) | span bytes/req (unloaded) | web peak RSS MB | non-2xx + errors | others' CPU % |
| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
${readTable.join('\n')}

**Webhooks**: as in "Webhooks" (one worker process, \`node worker/main.ts\`, default settings), in each round a worker
off, one on (\`OTEL_EXPORTER_OTLP_ENDPOINT\` passed to it: \`spawnWorker(url, env)\`, or BENCH_WORKER_ENV in the
webhooks bench) and one on sampling 10 % (the same, with \`OTEL_TRACES_SAMPLER=traceidratio\`,
\`OTEL_TRACES_SAMPLER_ARG=${ON10_RATIO}\`, as the web process above) each drain ${fmt(ONE_BACKLOG)} events to one endpoint, then (a new
worker) ${fmt(BACKLOG)} over ${W_ACCOUNTS} endpoints, then, same worker, ${RATE} events/s for ${STEADY_SECONDS} s; the tables archived and
vacuumed before each drain. On, each event comes from a traced change, a sampled trace of its own in
\`outbox.traceparent\` (as a traced request's write leaves it: the relay's spans and each attempt's join it); on 10 %,
from a traced change sampled as a web process sampling 10 % decides, by its trace id (TraceIdRatioBased: about 1 in 10
flagged sampled, \`-01\`, the rest \`-00\`; checked against the SDK's sampler on 5,000 changes); off, from an untraced
one. The receiver (in the bench process) verifies every signature: ${counts.badSignatures} bad of ${fmt(counts.received)}.

| measure (median, min–max of ${ROUNDS}) | off | on | change vs off, same round | on, 10 % sampled | change vs off, same round |
| --- | ---: | ---: | --- | ---: | --- |
${[
    hookLine(`deliveries/s, ${fmt(BACKLOG)} events over ${W_ACCOUNTS} endpoints`, (x) => x.many.rate, 0, true),
    hookLine(`deliveries/s, ${fmt(ONE_BACKLOG)} events to one endpoint`, (x) => x.one.rate, 0, true),
    hookLine(`commit → receipt p50 ms at ${RATE}/s, right after`, (x) => x.after.p50, 1, true),
    hookLine('same, p99 ms', (x) => x.after.p99, 1),
    hookLine(`worker CPU µs/delivery, ${W_ACCOUNTS} endpoints' drain`, (x) => usOf(x.many.cpu, 'worker'), 0, true),
    hookLine('PostgreSQL CPU µs/delivery, same drain', (x) => usOf(x.many.cpu, 'PostgreSQL')),
    hookLine('sink CPU µs/delivery, same drain', (x) => usOf(x.many.cpu, 'OTLP sink')),
    hookLine('worker CPU µs/delivery, one endpoint\'s drain', (x) => usOf(x.one.cpu, 'worker'), 0, true),
    hookLine(`worker CPU µs/event at ${RATE}/s`, (x) => usOf(x.after.cpu, 'worker'), 0, true),
    hookLine('spans exported per delivery (all three parts)', (x) => x.exported.spans, 2),
    hookLine('span bytes exported per delivery', (x) => x.exported.bytes, 0),
    hookLine('metric bytes exported per delivery', (x) => x.exported.metricBytes, 1),
    hookLine('worker peak RSS MB (VmHWM), 20 endpoints and the steady run', (x) => x.many.peakRssMb),
    hookLine('others\' CPU % during the drain', (x) => Math.round((x.many.cpu?.others ?? 0) * 100)),
  ].join('\n')}

Goal (issue 36): telemetry on costs at most 10 % of requests/s and of deliveries/s.

- Reads, every trace sampled: ${rOn.text} requests/s against off: ${verdict(rOn.worst)}.
- Reads, 10 % sampled: ${rOn10.text}: ${verdict(rOn10.worst)}.
- Webhooks, every trace sampled, ${W_ACCOUNTS} endpoints' drain: ${dMany.text} deliveries/s: ${verdict(dMany.worst)}; one endpoint's drain: ${dOne.text}: ${verdict(dOne.worst)}.
- Webhooks, 10 % sampled, ${W_ACCOUNTS} endpoints' drain: ${dMany10.text}: ${verdict(dMany10.worst)}; one endpoint's drain: ${dOne10.text}: ${verdict(dOne10.worst)}.
`;
}

/** One step of the cleanup: logged if it fails or takes over `ms`, so the next ones still run. */
async function cleanup(what: string, step: () => Promise<unknown> | unknown, ms = 30_000): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<void>((resolve) => (timer = setTimeout(() => (log(`cleanup: ${what} still going after ${ms / 1000} s, left`), resolve()), ms)));
  await Promise.race([Promise.resolve().then(step).catch((error: unknown) => log(`cleanup: ${what}: ${String(error)}`)), late]);
  clearTimeout(timer);
}

try {
  const { rows: readRows, webFlags } = await reads();
  const hookRows = await webhooks();
  await writeSection('telemetry', report(readRows, webFlags, hookRows));
} finally {
  await cleanup('workers', stopAllWorkers);
  await cleanup('receiver', closeReceiver);
  await cleanup('OTLP sink', () => stopChild(sink.child));
  await cleanup('pool', () => pool.end());
  await cleanup('PostgreSQL', () => db.stop(), 60_000);
  // Every process it started has ended: nothing may keep this one (and the lock its caller holds) alive.
  setTimeout(() => {
    log('still running 5 s after its cleanup: exiting');
    process.exit(process.exitCode ?? 0);
  }, 5_000).unref();
}
