// Webhooks (issues 6, 20 and 33): a worker process (node worker/main.ts, default settings) relaying
// the outbox and delivering to a local receiver that verifies every signature. REPS runs, each of:
// (1) steady 200 events/s on fresh tables (a new database): commit-to-receipt latency and CPU per
//     event, the baseline of (4);
// (2) a backlog of 2,000 events to ONE endpoint, committed at once while a worker runs on the tables
//     as a quiet spell leaves them (what ended archived, the tables vacuumed), then the same signed
//     bodies POSTed by the raw sender (bench/webhooks-raw-sender.ts: no database, the worker's
//     concurrency per endpoint, keep-alive);
// (3) the same with 20,000 events over 20 accounts (one endpoint each), then the raw sender with the
//     worker's concurrency in all (100);
// (4) right after (3), with the same worker, on the tables that drain left (no VACUUM, no ANALYZE):
//     steady 200 events/s as in (1).
// Then pg-boss alone in the same database: send() and work() of empty jobs, and send-to-handler
// latency at 200 jobs/s. Figures are reported, never asserted.
import type { ChildProcess } from 'node:child_process';
import os from 'node:os';
import { PgBoss } from 'pg-boss';
import { z } from 'zod';
import { loadConfig } from '#shared/config.ts';
import { BOSS_SCHEMA } from '#shared/boss.ts';
import { archiveEnded, FROM_THE_START } from '#shared/db/archive.ts';
import { createDatabasePool, sql, type Pool } from '#shared/db/pool.ts';
import { createPlan } from '../test/helpers/fixtures.ts';
import { RELAY_SPACING_MS } from '../worker/webhooks/relay.ts';
import { benchDatabase, writeSection } from './lib.ts';
import {
  accountsWithEndpoints, allRecorded, arrivedAt, closeReceiver, counts, cpuBetween, drainRaw, emitBacklog, emitOne, latencies, log, mark, memoryOf,
  perSecond, postgresByRole, spawnWorker, steady, stopWorker, until, usOf, watch, watchPostgres,
  workerListening, type CpuUse, type Drain,
} from './webhooks-rig.ts';
import { webhooksReport, type Run } from './webhooks-report.ts';

const ACCOUNTS = 20;
const BACKLOG = Number(process.env.BENCH_WEBHOOK_BACKLOG ?? 20_000);
const ONE_BACKLOG = Number(process.env.BENCH_WEBHOOK_ONE_BACKLOG ?? 2_000);
const REPS = Number(process.env.BENCH_PAIRS ?? 3);
const BOSS_BACKLOG = Number(process.env.BENCH_BOSS_BACKLOG ?? 10_000);
const RATE = 200;
const SECONDS = Number(process.env.BENCH_SECONDS ?? 15);
/** Seconds of emitting at RATE with no worker running: PostgreSQL's cost of the events themselves. */
const EMIT_ONLY_SECONDS = 5;
/**
 * The raw sender's HTTP client: fetch, as issue 20 defines the baseline ("a raw fetch sender of the
 * same signed bodies"), or node:http with a keep-alive agent (BENCH_RAW_CLIENT=http).
 */
const RAW_CLIENT = process.env.BENCH_RAW_CLIENT === 'http' ? 'http' : 'fetch';
// The worker's defaults (shared/config.ts), which it runs with here.
const defaults = loadConfig({});
const PER_ENDPOINT = defaults.WEBHOOK_CONCURRENCY_PER_ENDPOINT;

const db = await benchDatabase('webhooks');
const pool = await createDatabasePool(db.url, { size: 4, statementTimeoutMs: 120_000, applicationName: 'bench' });
const PLAN = {
  chaves_ativas: 10, leituras_por_minuto: 1000, escritas_por_minuto: 1000, chamadas_por_mes: 1_000_000, rajada: 100,
  rajada_recarga_por_segundo: 100, simultaneas_por_chave: 10, simultaneas_por_conta: 10, entregas_webhook_por_hora: 100_000_000,
};
await createPlan(pool, 'bench_webhooks', PLAN);
await watchPostgres(db.url);

const accounts = (on: Pool, prefix: string, n: number) => accountsWithEndpoints(on, 'bench_webhooks', prefix, n);
const contas = await accounts(pool, 'r', ACCOUNTS);
const [one = ''] = await accounts(pool, 'one', 1);

/** Worker drain of a backlog: rates, CPU from first to last arrival, PostgreSQL's by process. */
type Drained = Drain & { pgByRole: Record<string, number>; peakRssMb: number; ids: { id: string; path: string }[] };
/**
 * A backlog of `n` events to `to`, committed in one statement while a worker runs, as after a quiet
 * spell: what ended is archived (the maintenance job) and the working tables vacuumed (autovacuum),
 * and the worker has been polling them (its statements planned) for a moment. The worker keeps
 * running when `keep`.
 */
async function drain(group: string, to: readonly string[], n: number, keep: boolean): Promise<Drained & { worker: ChildProcess | null }> {
  await archiveEnded(pool, FROM_THE_START, { afterSeconds: 0 });
  await pool.query(sql.unsafe`VACUUM ANALYZE outbox, deliveries, delivery_attempts`);
  const worker = spawnWorker(db.url);
  await until(() => workerListening(pool));
  await new Promise((r) => setTimeout(r, 2_000));
  const s = watch(group, n);
  const committing = performance.now();
  await emitBacklog(pool, to, n);
  await until(() => s.count >= n, 180_000);
  const pgByRole = s.cpuFirst && s.cpuLast ? await postgresByRole(pool, s.cpuFirst, s.cpuLast, n) : {};
  const memory = await memoryOf(worker.pid);
  await allRecorded(pool);
  if (!keep) await stopWorker(worker);
  return {
    fromFirst: perSecond(n, s.first, s.last),
    fromStart: perSecond(n, committing, s.last),
    cpu: s.cpuFirst && s.cpuLast ? cpuBetween(s.cpuFirst, s.cpuLast, n) : null,
    pgByRole,
    peakRssMb: memory.peak,
    ids: s.ids.map((id) => ({ id, path: arrivedAt.get(id) ?? '' })),
    worker: keep ? worker : null,
  };
}

export type Steady = { p50: number; p99: number; max: number; cpu: CpuUse; pgByRole: Record<string, number>; emitOnly: CpuUse | null };
/** SECONDS at RATE events/s to `to` through `worker` (warmed up first when `warmUp`), all delivered and recorded. */
async function steadyRun(on: Pool, to: readonly string[], worker: ChildProcess, warmUp: boolean): Promise<Steady> {
  if (warmUp) {
    await until(() => workerListening(on));
    await steady(RATE, 2, emitOne(on, to));
    await allRecorded(on);
  }
  const from = mark();
  const committed = await steady(RATE, SECONDS, emitOne(on, to));
  await until(() => [...committed.keys()].every((id) => arrivedAt.has(id)), 60_000);
  await allRecorded(on);
  const to_ = mark();
  const hook = latencies(committed);
  return { ...hook, cpu: cpuBetween(from, to_, committed.size), pgByRole: await postgresByRole(on, from, to_, committed.size), emitOnly: null };
}

/** (1) On a new database: emitting alone first (no worker: the events wait), then a worker delivers them and the steady run follows. */
async function freshSteady(): Promise<Steady> {
  const url = await db.sibling('fresh');
  const fresh = await createDatabasePool(url, { size: 4, statementTimeoutMs: 120_000, applicationName: 'bench' });
  try {
    await createPlan(fresh, 'bench_webhooks', PLAN);
    const to = await accounts(fresh, 's', ACCOUNTS);
    const emitFrom = mark();
    const emitted = await steady(RATE, EMIT_ONLY_SECONDS, emitOne(fresh, to));
    const emitOnly = cpuBetween(emitFrom, mark(), emitted.size);
    const worker = spawnWorker(url);
    await until(() => [...emitted.keys()].every((id) => arrivedAt.has(id)), 60_000);
    const result = await steadyRun(fresh, to, worker, true);
    await stopWorker(worker);
    return { ...result, emitOnly };
  } finally {
    await fresh.end();
  }
}

const Ms = z.object({ ms: z.number() });
const runs: Run[] = [];
let bossRate = { send: 0, work: 0, p50: 0, p99: 0, pgUs: 0 };
try {
  for (let i = 0; i < REPS; i++) {
    const fresh = await freshSteady();
    log(`run ${i + 1}, fresh tables at ${RATE}/s: p50 ${fresh.p50.toFixed(1)} ms, p99 ${fresh.p99.toFixed(1)} ms; CPU µs/event ${JSON.stringify(fresh.cpu.us)}`);

    const since = await pool.oneFirst(sql.type(z.object({ t: z.string() }))`SELECT clock_timestamp()::text AS t`);
    const oneDrain = await drain('/one', [one], ONE_BACKLOG, false);
    const postMs = await pool.oneFirst(sql.type(Ms)`
      SELECT coalesce(avg(duration_ms), 0)::float8 AS ms FROM all_delivery_attempts WHERE conta_id = ${one} AND started_at >= ${since}::timestamptz`);
    const oneRaw = await drainRaw(pool, oneDrain.ids, PER_ENDPOINT, RAW_CLIENT);
    if (oneRaw.output.ok !== ONE_BACKLOG) throw new Error(`raw sender: ${JSON.stringify(oneRaw.output)}`);
    log(`run ${i + 1}, one endpoint, ${ONE_BACKLOG} events: worker ${oneDrain.fromFirst}/s, raw ${oneRaw.fromFirst}/s; CPU µs/delivery ${JSON.stringify(oneDrain.cpu?.us)}`);

    const many = await drain('/r', contas, BACKLOG, true);
    log(`run ${i + 1}, ${ACCOUNTS} accounts, ${BACKLOG} events: worker ${many.fromFirst}/s; CPU µs/delivery ${JSON.stringify(many.cpu?.us)}, PostgreSQL by process ${JSON.stringify(many.pgByRole)}`);
    const after = await steadyRun(pool, contas, many.worker as ChildProcess, false);
    const afterMemory = await memoryOf(many.worker?.pid);
    await stopWorker(many.worker as ChildProcess);
    log(`run ${i + 1}, right after at ${RATE}/s: p50 ${after.p50.toFixed(1)} ms, p99 ${after.p99.toFixed(1)} ms; CPU µs/event ${JSON.stringify(after.cpu.us)}`);
    const manyRaw = await drainRaw(pool, many.ids, defaults.WEBHOOK_CONCURRENCY, RAW_CLIENT);
    if (manyRaw.output.ok !== BACKLOG) throw new Error(`raw sender: ${JSON.stringify(manyRaw.output)}`);
    log(`run ${i + 1}, raw sender, ${BACKLOG} events to ${ACCOUNTS} endpoints: ${manyRaw.fromFirst}/s`);
    runs.push({ fresh, one: { ...oneDrain, postMs }, oneRaw, many: { ...many, peakRssMb: Math.max(many.peakRssMb, afterMemory.peak) }, manyRaw, after });
  }

  // pg-boss alone on the same database: empty jobs, LISTEN/NOTIFY on as the pipeline has it.
  const boss = new PgBoss({ connectionString: db.url, schema: BOSS_SCHEMA, max: 10, supervise: false, schedule: false, useListenNotify: true });
  boss.on('error', () => undefined);
  await boss.start();
  await boss.createQueue('bench-empty', { notify: true });
  const sendStart = performance.now();
  for (let i = 0; i < BOSS_BACKLOG; i += 50) await Promise.all(Array.from({ length: Math.min(50, BOSS_BACKLOG - i) }, () => boss.send('bench-empty', {})));
  const sendRate = perSecond(BOSS_BACKLOG, sendStart, performance.now());
  let worked = 0;
  const workStart = performance.now();
  const handled = new Map<string, number>();
  await boss.work<{ i?: number }>('bench-empty', { batchSize: 50, burstWhenBatchFull: true, pollingIntervalSeconds: 0.5 }, async (jobs) => {
    worked += jobs.length;
    for (const j of jobs) handled.set(j.id, performance.now());
  });
  await until(() => worked >= BOSS_BACKLOG);
  const workRate = perSecond(BOSS_BACKLOG, workStart, performance.now());
  const bossFrom = mark();
  const sent = await steady(RATE, SECONDS, async () => (await boss.send('bench-empty', {})) ?? '');
  await until(() => [...sent.keys()].every((id) => handled.has(id)), 60_000);
  const bossCpu = cpuBetween(bossFrom, mark(), sent.size);
  const alone = [...sent].map(([id, t]) => (handled.get(id) ?? t) - t).sort((a, b) => a - b);
  bossRate = { send: sendRate, work: workRate, p50: alone[Math.floor(alone.length / 2)] ?? 0, p99: alone[Math.floor(alone.length * 0.99)] ?? 0, pgUs: usOf(bossCpu, 'PostgreSQL') };
  log(`pg-boss alone: send() ${sendRate}/s, work() ${workRate}/s, send → handler p50 ${bossRate.p50.toFixed(1)} ms`);
  await boss.stop({ graceful: false });

  await writeSection('webhooks', webhooksReport({
    runs, boss: bossRate, counts, cores: os.cpus().length, defaults, rawClient: RAW_CLIENT, relaySpacingMs: RELAY_SPACING_MS,
    sizes: { accounts: ACCOUNTS, backlog: BACKLOG, oneBacklog: ONE_BACKLOG, rate: RATE, seconds: SECONDS, emitOnlySeconds: EMIT_ONLY_SECONDS, bossBacklog: BOSS_BACKLOG },
    embedded: !process.env.DATABASE_URL,
  }));
} finally {
  closeReceiver();
  await pool.end();
  await db.stop();
}
