// Shared pieces of the benchmarks: a database to run on, servers in their own processes (the load
// generator must not share their event loop), autocannon runs, the machine they ran on, and
// writing a section of BENCHMARKS.md between markers so each benchmark replaces only its own.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import pg from 'pg';
import { projectRoot } from '#shared/config.ts';
import { startEmbeddedPostgres, freePort, type EmbeddedPostgres } from '#shared/db/embedded.ts';
import { installBossSchema } from '#shared/boss.ts';
import { release } from '#shared/db/release.ts';
import { cpuPerRequest, othersShare, postmasterOf, sampleCpu, sampleMachine } from './cpu.ts';

const FILE = path.join(projectRoot, 'BENCHMARKS.md');

export function machine(): string {
  const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
  return `${os.cpus().length} × ${cpu}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, ${os.type()} ${os.release()}, Node ${process.version}`;
}

export async function writeSection(name: string, markdown: string): Promise<void> {
  const begin = `<!-- bench:${name} -->`;
  const end = `<!-- /bench:${name} -->`;
  let text = await readFile(FILE, 'utf8').catch(() => '# Benchmarks\n\nFigures written by `npm run bench`; each section says when and where it ran.\n');
  const block = `${begin}\n${markdown.trim()}\n\n_Measured ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC on ${machine()}._\n${end}`;
  const start = text.indexOf(begin);
  const stop = text.indexOf(end);
  text = start >= 0 && stop > start ? text.slice(0, start) + block + text.slice(stop + end.length) : `${text.trimEnd()}\n\n${block}\n`;
  await writeFile(FILE, text);
}

export const percentile = (sorted: number[], p: number) =>
  sorted.length ? (sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0) : 0;


export type BenchDatabase = {
  url: string;
  stop(): Promise<void>;
  /** Another database on the same server, released like this one: its URL. */
  sibling(name: string): Promise<string>;
};

/**
 * DATABASE_URL when set, else a fresh database on an embedded PostgreSQL in .data/bench-<name>
 * (default settings: real fsync).
 */
export async function benchDatabase(name: string): Promise<BenchDatabase> {
  let embedded: EmbeddedPostgres | null = null;
  let url = process.env.DATABASE_URL;
  if (!url) {
    embedded = await startEmbeddedPostgres({ dataDir: path.join(projectRoot, '.data', `bench-${name}`), database: 'postgres' });
    const admin = new pg.Client({ connectionString: embedded.adminUrl });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS bench_${name} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE bench_${name}`);
    await admin.end();
    url = embedded.url.replace(/\/postgres$/, `/bench_${name}`);
  }
  await release(url);
  await installBossSchema(url);
  await watchDatabase(url);
  const first = url;
  return {
    url,
    stop: async () => embedded?.stop(),
    async sibling(suffix) {
      const admin = new URL(first);
      const name = `${admin.pathname.slice(1)}_${suffix}`;
      admin.pathname = '/postgres';
      const client = new pg.Client({ connectionString: admin.toString() });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${client.escapeIdentifier(name)} WITH (FORCE)`);
      await client.query(`CREATE DATABASE ${client.escapeIdentifier(name)}`);
      await client.end();
      admin.pathname = `/${name}`;
      await release(admin.toString());
      await installBossSchema(admin.toString());
      return admin.toString();
    },
  };
}

/** Servers spawned by this benchmark, named for the CPU report. */
const servers = new Map<number, string>();
/** Postmasters of the benchmark's PostgreSQL: the CPU report counts them and their backends only. */
const databases = new Set<number>();

/** Finds the postmaster of the server at `url` when it runs on this machine (else every PostgreSQL is counted). */
async function watchDatabase(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  // Read while the backend lives: once the connection ends its pid names nothing.
  const postmaster = postmasterOf(rows[0]?.pid ?? 0);
  await client.end();
  if (postmaster && postmaster > 1) databases.add(postmaster);
}

/** The node flags the Procfile gives a role (e.g. its heap sizes), so a benchmark runs it as production does. */
export async function procfileNodeArgs(role: string): Promise<string[]> {
  const line = (await readFile(path.join(projectRoot, 'Procfile'), 'utf8')).split('\n').find((l) => l.startsWith(`${role}:`)) ?? '';
  return line.split(/\s+/).filter((word) => word.startsWith('--'));
}

/**
 * Keeps this process, and what it starts from now on (an embedded PostgreSQL, load generators), on
 * the given CPUs (taskset's list form, e.g. "1"), so a server started on the others has its CPU to
 * itself, as a web process on its own machine would. False where taskset is missing.
 */
export function pinThisProcess(cpus: string): boolean {
  return spawnSync('taskset', ['-pc', cpus, String(process.pid)], { stdio: 'ignore' }).status === 0;
}

/** A Node process serving HTTP (started with node <script>), ready once `probe` answers; on `cpus` when given (taskset). */
export async function spawnServer(
  script: string, env: Record<string, string>, probe: string, flags: string[] = [], cpus?: string,
): Promise<{ url: string; child: ChildProcess; stop(): Promise<void> }> {
  const port = await freePort();
  // BENCH_NODE_ARGS (e.g. --cpu-prof) lets a profiler ride along without changing the benchmark.
  const nodeArgs = [...flags, ...(process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean)];
  // taskset execs node: the child's pid is the server's.
  const [command, args] = cpus ? ['taskset', ['-c', cpus, process.execPath, ...nodeArgs, script]] : [process.execPath, [...nodeArgs, script]];
  const child = spawn(command, args, {
    cwd: projectRoot,
    env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: String(port), PUBLIC_BASE_URL: `http://127.0.0.1:${port}/v1`, LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 300; i++) {
    if (await fetch(`${url}${probe}`).then(() => true, () => false)) {
      if (child.pid) servers.set(child.pid, `server (${script})`);
      return { url, child, stop: () => new Promise((resolve) => (child.once('exit', () => resolve()), child.kill('SIGTERM'))) };
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill('SIGKILL');
  throw new Error(`${script} did not start`);
}

export type LoadResult = {
  rps: number;
  p50: number;
  p99: number;
  requests: number;
  /** Requests of the warm-up before the measured run (what the server did besides `requests`, e.g. spans it exported after). */
  warmupRequests: number;
  non2xx: number;
  errors: number;
  /** Answers by status code ("200", "304"…): a 304 is not a 2xx, and non2xx alone cannot tell it from a failure. */
  statuses: Record<string, number>;
  /** µs of CPU per request by process: the server, PostgreSQL, the load generator. */
  cpu: Record<string, number>;
  /** Peak resident set of the process `rssOf` named, in MB, over the warm-up and the run. */
  peakRssMb?: number;
  /** Share of the machine's CPU (0–1) taken by processes outside the benchmark during the run. */
  othersCpu: number;
  /** With `writtenIn`: WAL bytes and rows (inserted, updated, deleted) per request in that database over the run. */
  written?: { walBytes: number; rows: number; byRelation?: WalShare[] | null };
};

/** Where a database's WAL and written rows stood: what a run wrote is the difference (writtenSince). */
export type WrittenMark = { lsn: string; rows: number };

const WRITTEN = `
  SELECT pg_current_wal_lsn()::text AS lsn,
         pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn)::float8 AS bytes,
         (SELECT (tup_inserted + tup_updated + tup_deleted)::float8 FROM pg_stat_database WHERE datname = current_database()) AS rows`;

async function readWritten(url: string, since: string): Promise<{ lsn: string; bytes: number; rows: number }> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ lsn: string; bytes: number; rows: number }>(WRITTEN, [since]);
    return rows[0] ?? { lsn: since, bytes: 0, rows: 0 };
  } finally {
    await client.end();
  }
}

export async function writtenMark(url: string): Promise<WrittenMark> {
  const { lsn, rows } = await readWritten(url, '0/0');
  return { lsn, rows };
}

/** WAL written for one relation, per unit of work, and of those bytes the whole-page images. */
export type WalShare = { rel: string; bytes: number; fullPageBytes: number };

// Each record's bytes go to the relations of its blocks: a block's data and image to its own, the
// rest of the record (headers, main data) split evenly among its blocks; what no block carries
// (commits, multixacts, …) is the difference from the total. Hash joins and aggregates only: the
// WAL of a 15 s run is a million blocks. Whole-page images come with the first change of a page
// after a checkpoint, so their share depends on when checkpoints fall.
const WAL_BY_RELATION = `
  WITH blocks AS MATERIALIZED (
    SELECT start_lsn, relfilenode, block_data_length + coalesce(block_fpi_length, 0) AS own,
           coalesce(block_fpi_length, 0) AS fpi, record_length
      FROM pg_get_wal_block_info($1::pg_lsn, $2::pg_lsn)
  ), records AS (
    SELECT start_lsn, count(*) AS n, sum(own) AS own FROM blocks GROUP BY start_lsn
  )
  SELECT coalesce(c.relname, 'relfilenode ' || b.relfilenode) AS rel,
         sum(b.own + greatest(0, b.record_length - r.own)::float8 / r.n)::float8 AS bytes, sum(b.fpi)::float8 AS fpi
    FROM blocks b JOIN records r USING (start_lsn)
    LEFT JOIN pg_class c ON c.relfilenode = b.relfilenode
   GROUP BY 1 ORDER BY 2 DESC`;

/**
 * The WAL between two positions by relation, per unit, largest first, and what no relation's blocks
 * carry; null where the server cannot tell (pg_walinspect's block view came with PostgreSQL 16).
 */
async function walByRelation(url: string, from: string, to: string, units: number, total: number): Promise<WalShare[] | null> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows: [version] } = await client.query<{ v: number }>(`SELECT current_setting('server_version_num')::int AS v`);
    if (!version || version.v < 160000) return null;
    await client.query('CREATE EXTENSION IF NOT EXISTS pg_walinspect');
    const { rows } = await client.query<{ rel: string; bytes: number; fpi: number }>(WAL_BY_RELATION, [from, to]);
    const shares = rows.map((r) => ({ rel: r.rel, bytes: Math.round(r.bytes / units), fullPageBytes: Math.round(r.fpi / units) }));
    const inBlocks = shares.reduce((sum, w) => sum + w.bytes, 0);
    return [...shares, { rel: '(records of no relation: commits, multixacts, …)', bytes: Math.max(0, total - inBlocks), fullPageBytes: 0 }];
  } catch {
    return null;
  } finally {
    await client.end();
  }
}

/** WAL bytes and rows (inserted, updated, deleted) per unit of work since `mark`, and the WAL by relation. */
export async function writtenSince(
  url: string, mark: WrittenMark, units: number, options: { byRelation?: boolean } = {},
): Promise<{ walBytes: number; rows: number; byRelation?: WalShare[] | null }> {
  // Backends report their rows when they go idle, at most once a second.
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  const now = await readWritten(url, mark.lsn);
  const n = Math.max(1, units);
  const walBytes = Math.round(now.bytes / n);
  return {
    walBytes,
    rows: Math.round(((now.rows - mark.rows) / n) * 10) / 10,
    ...(options.byRelation ? { byRelation: await walByRelation(url, mark.lsn, now.lsn, n, walBytes) } : {}),
  };
}

/** The process's resident set, sampled every 200 ms until stopped: its peak and last value, in MB. */
export function sampleRss(pid: number): () => Promise<{ peak: number; last: number }> {
  let peak = 0;
  let last = 0;
  const read = async () => {
    const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
    last = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
    peak = Math.max(peak, last);
  };
  const timer = setInterval(() => void read(), 200);
  return async () => {
    clearInterval(timer);
    await read();
    return { peak: Math.round(peak), last: Math.round(last) };
  };
}

/** autocannon over `seconds`, after a warm-up; latencies in ms. */
export async function load(options: {
  url: string;
  connections: number;
  seconds: number;
  method?: string;
  setupRequest?: (req: Record<string, any>) => Record<string, any>;
  /** A server's pid whose peak RSS the result reports. */
  rssOf?: number;
  /** A database whose WAL and rows written per request the result reports (cluster-wide WAL: keep other writers away). */
  writtenIn?: string;
  /** With writtenIn: the WAL by relation too (reads the run's WAL back: seconds, after the run). */
  walByRelation?: boolean;
}): Promise<LoadResult> {
  const base = {
    url: options.url,
    connections: options.connections,
    method: options.method ?? 'GET',
    ...(options.setupRequest ? { requests: [{ setupRequest: options.setupRequest }] } : {}),
  } as autocannon.Options;
  const stopRss = options.rssOf ? sampleRss(options.rssOf) : null;
  const warmUp = await autocannon({ ...base, duration: 2 });
  const mark = options.writtenIn ? await writtenMark(options.writtenIn) : null;
  const [before, machineBefore] = [sampleCpu(servers, databases), sampleMachine()];
  const r = await autocannon({ ...base, duration: options.seconds });
  const [after, machineAfter] = [sampleCpu(servers, databases), sampleMachine()];
  const written = options.writtenIn && mark ? await writtenSince(options.writtenIn, mark, r.requests.total, { byRelation: options.walByRelation }) : undefined;
  const cpu = cpuPerRequest(before, after, r.requests.total);
  const statuses = Object.fromEntries(Object.entries(r.statusCodeStats ?? {}).map(([code, s]) => [code, s.count ?? 0]));
  return {
    cpu,
    othersCpu: othersShare(before, after, machineBefore, machineAfter),
    ...(written ? { written } : {}),
    statuses,
    ...(stopRss ? { peakRssMb: (await stopRss()).peak } : {}),
    rps: Math.round(r.requests.average),
    p50: r.latency.p50,
    p99: r.latency.p99,
    requests: r.requests.total,
    warmupRequests: warmUp.requests.total,
    non2xx: r.non2xx,
    errors: r.errors + r.timeouts,
  };
}

/** Starts counting CPU by process (the servers, PostgreSQL, the load generator); the returned function gives seconds of each. */
export function countCpu(): () => Record<string, number> {
  const before = sampleCpu(servers, databases);
  return () => Object.fromEntries(Object.entries(cpuPerRequest(before, sampleCpu(servers, databases), 1)).map(([label, us]) => [label, us / 1e6]));
}

/** "server 90, PostgreSQL 125, …" (µs) for a table cell; a process idle during the run (the other
 * server of the same bench, whose time rounds to 0 µs a request) is left out. */
export const cpuCell = (r: LoadResult) =>
  Object.entries(r.cpu).filter(([, us]) => us > 0).sort((a, b) => b[1] - a[1]).map(([label, us]) => `${label.replace(/ \(.*\)$/, '')} ${us}`).join(', ');
