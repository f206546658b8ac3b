// The webhooks benchmark's rig (bench/webhooks.bench.ts): the receiver, worker processes, the raw
// sender, emitting events, and CPU read from /proc by process (bench/cpu.ts).
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import http from 'node:http';
import { text } from 'node:stream/consumers';
import pg from 'pg';
import { Webhook } from 'standardwebhooks';
import { z } from 'zod';
import { projectRoot } from '#shared/config.ts';
import { freePort } from '#shared/db/embedded.ts';
import { sql, type Pool } from '#shared/db/pool.ts';
import { criarEndpoint } from '#shared/db/webhooks.ts';
import { createAccount } from '../test/helpers/fixtures.ts';
import { cpuPerRequest, cpuPerRequestByRole, othersShare, postmasterOf, sampleCpu, sampleMachine } from './cpu.ts';
import { percentile } from './lib.ts';
import type { RawEvent, RawSenderInput, RawSenderOutput } from './webhooks-raw-sender.ts';

export const WORKER_BASE_URL = 'http://127.0.0.1:3000/v1';
const benchStarted = performance.now();
export const log = (line: string) => process.stdout.write(`[${((performance.now() - benchStarted) / 1000).toFixed(0).padStart(3)} s] ${line}\n`);

// CPU by process: the worker and the raw sender by pid; this process (emitter and receiver) is the
// one cpu.ts calls the load generator; PostgreSQL's processes under its postmaster.
const processes = new Map<number, string>();
const databases = new Set<number>();

/** Finds the postmaster of the server at `url`, so only its processes count as PostgreSQL. */
export async function watchPostgres(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  // While the backend still runs: once the connection closes its pid names nothing.
  const postmaster = postmasterOf(rows[0]?.pid ?? 0);
  await client.end();
  if (postmaster && postmaster > 1) databases.add(postmaster);
  else log('PostgreSQL runs elsewhere or its postmaster was not found: every PostgreSQL on this machine is counted');
}

/** Counts another process of the bench's (e.g. an OTLP sink) under `label` from now on. */
export const watchProcess = (pid: number | undefined, label: string) => void (pid && processes.set(pid, label));

export type CpuMark = { cpu: ReturnType<typeof sampleCpu>; machine: ReturnType<typeof sampleMachine> };
export const mark = (): CpuMark => ({ cpu: sampleCpu(processes, databases), machine: sampleMachine() });
export type CpuUse = { us: Record<string, number>; others: number };

/** µs of CPU per unit by process between two marks, and the share of the machine others took. */
export function cpuBetween(from: CpuMark, to: CpuMark, units: number): CpuUse {
  const us = Object.fromEntries(Object.entries(cpuPerRequest(from.cpu, to.cpu, units))
    .map(([label, v]) => [label.startsWith('load generator') ? 'bench' : label, v]));
  if (process.env.BENCH_DEBUG_CPU) {
    const rows = [...to.cpu].map(([pid, v]) => [pid, v.label, v.ticks - (from.cpu.get(pid)?.ticks ?? 0)] as const).filter((r) => r[2] > 0).sort((a, b) => b[2] - a[2]).slice(0, 12);
    for (const [pid, label, ticks] of rows) {
      let cmd = '';
      try { cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim().slice(0, 90); } catch { cmd = '(gone)'; }
      process.stdout.write(`   ${pid} ${label} ${ticks} ticks: ${cmd}\n`);
    }
  }
  return { us, others: othersShare(from.cpu, to.cpu, from.machine, to.machine) };
}
export const usOf = (c: CpuUse | null | undefined, label: string) => c?.us[label] ?? 0;

/**
 * PostgreSQL's CPU per unit between two marks by whose process it was, told by pg_stat_activity
 * while the processes still run: the bench's connections (emitting), the worker's, the worker's
 * LISTEN connection, and the server's own processes (autovacuum, WAL writer, checkpointer) with
 * whatever ended and left its time with the postmaster.
 */
export async function postgresByRole(pool: Pool, from: CpuMark, to: CpuMark, units: number): Promise<Record<string, number>> {
  const roles = new Map((await pool.any(sql.type(z.object({ pid: z.number(), role: z.string() }))`
    SELECT pid, CASE WHEN backend_type <> 'client backend' THEN 'server' WHEN application_name = 'bench' THEN 'emitting'
                     WHEN application_name = 'worker-listen' THEN 'LISTEN' WHEN application_name = 'worker' THEN 'worker'
                     ELSE 'server' END AS role
      FROM pg_stat_activity`)).map((r) => [r.pid, r.role]));
  return cpuPerRequestByRole(from.cpu, to.cpu, units, 'PostgreSQL', (pid) => roles.get(pid), 'server');
}

// The receiver: answers 204 at once, verifies every signature with the secret of the path it came
// to, and notes when each event first arrived and, per group of paths watched (the path's leading
// letters: /one, /r0…/r19 → /r, /raw/… → /raw), the first and last arrival.
export type PathStats = { count: number; first: number; last: number; expect: number; cpuFirst: CpuMark | null; cpuLast: CpuMark | null; ids: string[] };
const paths = new Map<string, PathStats>();
export const arrivals = new Map<string, number>();
/** The path each event first arrived at. */
export const arrivedAt = new Map<string, string>();
/** Bodies of the worker's deliveries by event id, to check the raw sender's against. */
const bodies = new Map<string, string>();
const secrets = new Map<string, Webhook>();
export const counts = { received: 0, badSignatures: 0, rawBodiesDiffering: 0 };

const groupOf = (path: string) => /^\/(raw|[a-z]+)/.exec(path)?.[0] ?? path;
/** Counts arrivals at the paths of `group` from now on; with `expect`, marks the CPU at the first and at the expect-th. */
export function watch(group: string, expect: number): PathStats {
  const s: PathStats = { count: 0, first: 0, last: 0, expect, cpuFirst: null, cpuLast: null, ids: [] };
  paths.set(group, s);
  return s;
}
export const verifyWith = (path: string, secret: string) => void secrets.set(path, new Webhook(secret));

const receiver = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const now = performance.now();
    const id = String(req.headers['webhook-id']);
    const path = req.url ?? '';
    const body = Buffer.concat(chunks);
    try {
      secrets.get(path)?.verify(body, req.headers as Record<string, string>);
    } catch {
      counts.badSignatures++;
    }
    res.writeHead(204).end();
    counts.received++;
    if (path.startsWith('/raw')) {
      if (bodies.get(id) !== body.toString()) counts.rawBodiesDiffering++;
    } else if (!arrivals.has(id)) {
      arrivals.set(id, now);
      arrivedAt.set(id, path);
      bodies.set(id, body.toString());
    }
    const s = paths.get(groupOf(path));
    if (!s) return;
    if (s.count++ === 0) {
      s.first = now;
      if (s.expect > 0) s.cpuFirst = mark();
    }
    s.last = now;
    s.ids.push(id);
    if (s.count === s.expect) s.cpuLast = mark();
  });
});
export const receiverPort = await freePort();
await new Promise<void>((resolve) => receiver.listen(receiverPort, '127.0.0.1', resolve));
export const closeReceiver = () => (receiver.close(), receiver.closeAllConnections());

/** `n` accounts of `plano` with one endpoint each, at /<prefix><i> of the receiver (verified with its secret). */
export async function accountsWithEndpoints(on: Pool, plano: string, prefix: string, n: number): Promise<string[]> {
  const contas: string[] = [];
  for (let i = 0; i < n; i++) {
    const account = await createAccount(on, { plano, escopos: [] });
    const path = `/${prefix}${n > 1 ? i : ''}`;
    const endpoint = await criarEndpoint(on, { contaId: account.contaId, usuarioId: account.usuarioId, url: `http://127.0.0.1:${receiverPort}${path}`, tipos: [], descricao: null });
    verifyWith(path, endpoint.segredo);
    contas.push(account.contaId);
  }
  return contas;
}

/**
 * BENCH_WORKER_ENV: extra variables for every worker, as KEY=VALUE separated by spaces (e.g.
 * OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 to run them with telemetry on).
 */
const workerEnvFromBench = (): Record<string, string> => Object.fromEntries((process.env.BENCH_WORKER_ENV ?? '').split(' ')
  .filter((pair) => pair.indexOf('=') > 0).map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]));

/** A worker process on `databaseUrl` with the defaults, and `env` (then BENCH_WORKER_ENV) over them. */
export function spawnWorker(databaseUrl: string, env: Record<string, string> = {}): ChildProcess {
  // BENCH_WORKER_NODE_ARGS: extra node flags for the worker (e.g. --cpu-prof to profile it).
  const nodeArgs = (process.env.BENCH_WORKER_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const child = spawn(process.execPath, [...nodeArgs, 'worker/main.ts'], {
    cwd: projectRoot,
    env: {
      PATH: process.env.PATH ?? '', DATABASE_URL: databaseUrl, PUBLIC_BASE_URL: WORKER_BASE_URL, WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', LOG_LEVEL: 'warn',
      ...env, ...workerEnvFromBench(),
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  if (child.pid) processes.set(child.pid, 'worker');
  workers.add(child);
  return child;
}
export async function stopWorker(child: ChildProcess): Promise<void> {
  await stopChild(child);
  if (child.pid) processes.delete(child.pid);
  workers.delete(child);
}
/** Workers started and not yet stopped: stopAllWorkers() ends them when a bench fails halfway. */
const workers = new Set<ChildProcess>();
export const stopAllWorkers = () => Promise.all([...workers].map((child) => stopWorker(child)));
/**
 * Stops a child process: SIGTERM, then SIGKILL if it has not exited within `graceMs`. Returns at
 * once when it has already exited (waiting for an 'exit' that has already fired would never end).
 */
export async function stopChild(child: ChildProcess, graceMs = 15_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), graceMs)));
  if ((await Promise.race([exited, late])) === 'late') {
    log(`pid ${child.pid} still running ${graceMs / 1000} s after SIGTERM: SIGKILL`);
    child.kill('SIGKILL');
    await exited;
  }
  clearTimeout(timer);
}
/** The process's peak resident set (VmHWM) and current one, in MB. */
export async function memoryOf(pid: number | undefined): Promise<{ peak: number; now: number }> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
  const mb = (field: string) => Math.round(Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? 0) / 1024);
  return { peak: mb('VmHWM'), now: mb('VmRSS') };
}

const Count = z.object({ n: z.number() });
export async function until(check: () => Promise<boolean> | boolean, timeoutMs = 180_000, everyMs = 5): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('benchmark timed out');
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
export const workerListening = async (pool: Pool) => (await pool.oneFirst(sql.type(Count)`
  SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'worker-listen'`)) === 1;
/** Every delivery's outcome recorded (polled slowly: the count is PostgreSQL work of the bench's own). */
export const allRecorded = (pool: Pool) => until(async () => (await pool.oneFirst(sql.type(Count)`
  SELECT count(*)::int AS n FROM deliveries WHERE status = 'pending'`)) === 0, 180_000, 50);
const sleepUntil = (t: number) => new Promise((r) => setTimeout(r, Math.max(0, t - performance.now())));

/** Emits one event per tick at `rate` per second for `seconds`, each in its own transaction; commit times by id. */
export async function steady(rate: number, seconds: number, send: (i: number) => Promise<string>): Promise<Map<string, number>> {
  const committed = new Map<string, number>();
  const start = performance.now();
  const pending: Promise<void>[] = [];
  for (let i = 0; i < rate * seconds; i++) {
    await sleepUntil(start + (i * 1000) / rate);
    pending.push(send(i).then((id) => void committed.set(id, performance.now())));
  }
  await Promise.all(pending);
  return committed;
}
/**
 * How an emitted change is traced: false, not at all (as when the web's telemetry is off); true, a
 * trace of its own, sampled; a number, a trace of its own sampled with that probability (tracedChange).
 */
export type Tracing = boolean | number;
/** One event of one of `contas`, in a transaction of its own (traced as `traced` says: tracedChange). */
export const emitOne = (pool: Pool, contas: readonly string[], traced: Tracing = false) => (i: number) => pool.oneFirst(sql.type(z.object({ id: z.string() }))`
  SELECT emit_event(${contas[i % contas.length] ?? ''}, 'cotacao.criada',
    jsonb_build_object('objeto', 'cotacao', 'id', gen_random_uuid(), 'codigo', 'COT-000001', 'status', 'rascunho')) AS id
  ${traced === false ? sql.fragment`` : sql.fragment`FROM (SELECT md5(random()::text) AS trace_id OFFSET 0) t, LATERAL (SELECT ${tracedChange(traced)} AS tp OFFSET 0) traced`}`);
/** `n` events committed in one statement, spread over `accounts` in turn (each traced as `traced` says: tracedChange). */
export const emitBacklog = (pool: Pool, accounts: readonly string[], n: number, traced: Tracing = false) => pool.query(sql.unsafe`
  SELECT emit_event(c, 'cotacao.criada', jsonb_build_object('objeto', 'cotacao', 'id', gen_random_uuid(), 'codigo', 'COT-' || g, 'status', 'rascunho'))
    FROM generate_series(1, ${n}) g, LATERAL (SELECT (${sql.array([...accounts], 'uuid')}::uuid[])[1 + g % ${accounts.length}] AS c) x
    ${traced === false ? sql.fragment`` : sql.fragment`, LATERAL (SELECT md5(random()::text) AS trace_id, g AS traced_g OFFSET 0) t,
      LATERAL (SELECT ${tracedChange(traced)} AS tp OFFSET 0) traced`}`);
/**
 * A change that declares a trace of its own (its id: the column trace_id beside it), as a traced
 * request's write does (set_config('app.traceparent', …, true): docs/decisions/0049-opentelemetry.md),
 * which emit_event keeps in outbox.traceparent and the worker continues; without it the column is
 * NULL, as when the web's telemetry is off. Sampled (flags 01) always with `true`; with a share, as a
 * web process sampling that share (traceidratio) decides, by the trace id alone: TraceIdRatioBased
 * samples a trace when its id's four 32-bit words XORed fall below ⌊share × (2³² − 1)⌋ (flags 00
 * otherwise), so a worker sampling by trace id decides each event as its web did, and one following
 * its parent (parentbased_…) follows the flag.
 */
function tracedChange(traced: true | number) {
  const word = (at: number) => sql.fragment`('x' || substr(trace_id, ${at}, 8))::bit(32)::bigint`;
  const flags = traced === true || traced >= 1 ? sql.fragment`'01'`
    : sql.fragment`CASE WHEN (${word(1)} # ${word(9)} # ${word(17)} # ${word(25)}) < ${Math.floor(Math.max(0, traced) * 4294967295)} THEN '01' ELSE '00' END`;
  return sql.fragment`set_config('app.traceparent', '00-' || trace_id || '-' || left(md5(random()::text), 16) || '-' || ${flags}, true)`;
}

export function latencies(committed: Map<string, number>) {
  const values = [...committed].flatMap(([id, t]) => {
    const a = arrivals.get(id);
    return a === undefined ? [] : [Math.max(0, a - t)];
  }).sort((a, b) => a - b);
  return { n: values.length, p50: percentile(values, 50), p99: percentile(values, 99), max: values.at(-1) ?? 0 };
}
export const perSecond = (n: number, from: number, to: number) => Math.round((n / Math.max(1e-9, to - from)) * 1000);

/** Deliveries/s from the first arrival to the last, and from the start (the backlog committed, the raw sender spawned). */
export type Drain = { fromFirst: number; fromStart: number; cpu: CpuUse | null };

/**
 * The baseline: `events`, read from the database beforehand, POSTed by the raw sender in a process
 * of its own, `concurrency` at a time, to `/raw` + the path each was delivered to.
 */
export async function drainRaw(pool: Pool, events: readonly { id: string; path: string }[], concurrency: number, client: 'http' | 'fetch'): Promise<Drain & { output: RawSenderOutput }> {
  const pathOf = new Map(events.map((e) => [e.id, e.path]));
  const rows = await pool.any(sql.type(z.object({
    id: z.string(), tipo: z.string(), criado_em: z.string(), conta_id: z.string(), dados: z.record(z.string(), z.unknown()), segredo: z.string(),
  }))`
    SELECT o.id, o.tipo, o.criado_em, o.conta_id, o.dados, e.segredo
      FROM eventos o JOIN webhook_endpoints e ON e.conta_id = o.conta_id
     WHERE o.id = ANY(${sql.array(events.map((e) => e.id), 'uuid')})
     ORDER BY o.seq`);
  const input: RawSenderInput = {
    url: '', baseUrl: WORKER_BASE_URL, concurrency, client,
    events: rows.map((r): RawEvent => {
      const path = `/raw${pathOf.get(r.id) ?? ''}`;
      verifyWith(path, r.segredo);
      return { ...r, url: `http://127.0.0.1:${receiverPort}${path}` };
    }),
  };
  const s = watch('/raw', rows.length);
  const spawned = performance.now();
  const child = spawn(process.execPath, ['bench/webhooks-raw-sender.ts'], { cwd: projectRoot, stdio: ['pipe', 'pipe', 'inherit'] });
  if (child.pid) processes.set(child.pid, 'raw sender');
  child.stdin.end(JSON.stringify(input));
  const [output] = await Promise.all([text(child.stdout), once(child, 'exit')]);
  if (child.pid) processes.delete(child.pid);
  return {
    fromFirst: perSecond(rows.length, s.first, s.last),
    fromStart: perSecond(rows.length, spawned, s.last),
    cpu: s.cpuFirst && s.cpuLast ? cpuBetween(s.cpuFirst, s.cpuLast, rows.length) : null,
    output: JSON.parse(output) as RawSenderOutput,
  };
}
