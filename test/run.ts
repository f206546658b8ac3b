// npm test: the uvu suites against a real PostgreSQL. DATABASE_URL points at a server to use;
// without it an embedded PostgreSQL runs in .data/test-postgres. The schema is migrated once into
// a template database and every suite clones its own from it. Suites run as separate processes,
// TEST_CONCURRENCY at a time, the longest first (by their times in the last run), so that no long
// suite starts last; a failed suite's databases are kept for
// inspection and their names printed. The run ends with its wall time and its five slowest suites.
// A suite that cannot run on this machine says so in one line, `SKIPPED: <what is missing>; <how to
// install it>` (test/helpers/skip.ts), and is reported as skipped; the closing line is
// `N passed, N failed, N skipped`, which .ci/run reads.
import { spawn } from 'node:child_process';
import { mkdir, readdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { projectRoot } from '#shared/config.ts';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '#shared/db/embedded.ts';
import { installBossSchema } from '#shared/boss.ts';
import { release } from '#shared/db/release.ts';

// Runs sharing one server (or one machine) keep apart by TEST_RUN_ID: their databases and their
// embedded data folders carry it, and each run only drops what it made.
const RUN_ID = (process.env.TEST_RUN_ID ?? 'main').replace(/[^a-z0-9]/gi, '').toLowerCase() || 'main';
const PREFIX = `pft_${RUN_ID}_`;
const TEMPLATE = `${PREFIX}template`;
// Three at a time on two cores: many suites spend much of their time waiting (on PostgreSQL, a child
// process, a timer); more than three took no less time (docs/decisions/0045-a-fast-test-loop.md).
const concurrency = Number(process.env.TEST_CONCURRENCY ?? 3);
// A suite that hangs (a handle left open after a failure keeps its process alive) is killed, with
// everything it started, and counted as failed: one stuck suite must not eat CI's whole budget.
const suiteTimeoutMs = Number(process.env.TEST_SUITE_TIMEOUT_MS ?? 240_000);
const filter = process.argv.slice(2);
// Node's on-disk cache of compiled modules (checked against each module's source), shared by the
// suites' processes and what they start with the runner's environment: every suite loads much the
// same modules, and compiling them again was a large part of each suite's start.
const compileCache = process.env.NODE_COMPILE_CACHE ?? path.join(projectRoot, '.data', 'compile-cache');
// The folder of the suites; TEST_DIR points the runner elsewhere (test/runner.test.ts runs fixtures).
const testDir = path.resolve(projectRoot, process.env.TEST_DIR ?? 'test');

async function main(): Promise<number> {
  const runStarted = performance.now();
  let embedded: EmbeddedPostgres | null = null;
  let adminUrl: string;
  if (process.env.DATABASE_URL) {
    const url = new URL(process.env.DATABASE_URL);
    url.pathname = '/postgres';
    adminUrl = url.toString();
  } else {
    embedded = await startEmbeddedPostgres({ dataDir: path.join(projectRoot, '.data', `test-postgres-${RUN_ID}`), fast: true, database: 'postgres' });
    adminUrl = embedded.adminUrl;
  }
  try {
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect().catch((error: unknown) => {
      throw new Error(`cannot reach PostgreSQL at ${redact(adminUrl)}: ${String(error)}\n` +
        'Start one (pg_ctlcluster --skip-systemctl-redirect 15 main start) or unset DATABASE_URL to use the embedded one.');
    });
    const started = performance.now();
    await dropDatabases(admin, PREFIX);
    await admin.query(`CREATE DATABASE ${TEMPLATE}`);
    const templateUrl = databaseUrl(adminUrl, TEMPLATE);
    await release(templateUrl);
    await installBossSchema(templateUrl);
    process.stdout.write(`template database released in ${Math.round(performance.now() - started)} ms (${embedded ? 'embedded PostgreSQL' : redact(adminUrl)})\n`);

    const times = await lastTimes();
    const files = longestFirst(await testFiles(filter), times);
    const results = await runAll(files, adminUrl, admin);
    await admin.end();
    await keepTimes(times, results);
    const passed = results.reduce((n, r) => n + r.passed, 0);
    const failed = results.reduce((n, r) => n + r.failed, 0);
    const skipped = results.reduce((n, r) => n + r.skipped, 0);
    const broken = results.filter((r) => r.code !== 0);
    for (const r of broken) process.stdout.write(`FAILED ${r.file} (exit ${r.code})${r.kept.length ? `; databases kept: ${r.kept.join(', ')}` : ''}\n`);
    // A suite that crashed before reporting counts as one failure.
    const failures = failed + broken.filter((r) => r.failed === 0).length;
    process.stdout.write(summary(results, performance.now() - runStarted));
    process.stdout.write(`${passed} passed, ${failures} failed, ${skipped} skipped\n`);
    return failures === 0 ? 0 : 1;
  } finally {
    await embedded?.stop();
  }
}

type Result = { file: string; code: number; passed: number; failed: number; skipped: number; kept: string[]; seconds: number };

async function runAll(files: string[], adminUrl: string, admin: pg.Client): Promise<Result[]> {
  const results: Result[] = [];
  const queue = files.map((file, index) => ({ file, prefix: `${PREFIX}${index}_` }));
  // Suite prefixes are pft_<run>_<n>_; the template (pft_<run>_template) never matches one.
  const workers = Array.from({ length: Math.min(concurrency, queue.length) }, async () => {
    for (let next = queue.shift(); next; next = queue.shift()) {
      const result = await runFile(next.file, next.prefix, adminUrl);
      if (result.code === 0) await dropDatabases(admin, next.prefix);
      else result.kept = await listDatabases(admin, next.prefix);
      results.push(result);
    }
  });
  await Promise.all(workers);
  return results;
}

function runFile(file: string, prefix: string, adminUrl: string): Promise<Result> {
  return new Promise((resolve) => {
    const started = performance.now();
    const child = spawn(process.execPath, [file], {
      cwd: projectRoot,
      env: { ...process.env, TEST_ADMIN_URL: adminUrl, TEST_TEMPLATE_DB: TEMPLATE, TEST_DB_PREFIX: prefix, FORCE_COLOR: '0', NODE_COMPILE_CACHE: compileCache },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true, // its own process group, so a timeout kills what it spawned too
    });
    let output = '';
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      try { process.kill(-child.pid!, 'SIGKILL'); } catch { child.kill('SIGKILL'); }
    }, suiteTimeoutMs);
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('close', (code) => {
      clearTimeout(timer);
      if (timedOut) output += `\nkilled: the suite ran longer than ${suiteTimeoutMs / 1000} s (TEST_SUITE_TIMEOUT_MS)\n`;
      const passed = Number(/Passed:\s+(\d+)/.exec(output)?.[1] ?? 0);
      // uvu's Total counts the tests that ran; the skipped ones are counted apart.
      const total = Number(/Total:\s+(\d+)/.exec(output)?.[1] ?? 0);
      const skipped = Number(/Skipped:\s+(\d+)/.exec(output)?.[1] ?? 0);
      const why = /^SKIPPED: (.+)$/m.exec(output)?.[1];
      const seconds = ((performance.now() - started) / 1000).toFixed(1);
      const name = path.relative(projectRoot, file);
      // uvu exits 0 when a hook throws before the tests ran ("Exiting early"): a suite passes only
      // when it reported every test it ran as passed.
      const ok = !timedOut && code === 0 && /Total:/.test(output) && passed >= total;
      const counts = `${passed}/${total}${skipped ? `, ${skipped} skipped` : ''} in ${seconds} s`;
      if (ok && why) process.stdout.write(`skip ${name} (${counts}): ${why}\n`);
      else process.stdout.write(`${ok ? 'ok  ' : 'FAIL'} ${name} (${counts})\n`);
      // TEST_VERBOSE=1 shows what passing suites printed too (e.g. the crash test's figures).
      if (!ok || process.env.TEST_VERBOSE) process.stdout.write(indent(output));
      resolve({ file: name, code: ok ? 0 : (code || 1), passed, failed: Math.max(0, total - passed), skipped, kept: [], seconds: Number(seconds) });
    });
  });
}

async function testFiles(only: string[]): Promise<string[]> {
  const entries = await readdir(testDir, { recursive: true });
  return entries
    .filter((f) => f.endsWith('.test.ts') && !f.split(path.sep).includes('fixtures'))
    .filter((f) => only.length === 0 || only.some((o) => f.includes(o)))
    .sort()
    .map((f) => path.join(testDir, f));
}

// The suites' times in the last run, by file relative to the project: a local record (in .data/, not
// in the repository), over a snapshot in test/suite-times.json for a clean clone (refresh it from the
// record after adding a slow suite). A new or renamed suite has no time yet and starts among the first.
// TEST_TIMES_FILE names another record (test/runner.test.ts keeps the fixtures' times apart).
const timesFile = path.resolve(projectRoot, process.env.TEST_TIMES_FILE ?? '.data/test-times.json');
const timesSnapshot = path.join(projectRoot, 'test', 'suite-times.json');
type Times = Record<string, number>;

async function lastTimes(): Promise<Times> {
  const read = (file: string) => readFile(file, 'utf8').then((text) => JSON.parse(text) as Times, () => ({}));
  const snapshot = process.env.TEST_TIMES_FILE ? {} : await read(timesSnapshot);
  return { ...snapshot, ...(await read(timesFile)) };
}

async function keepTimes(times: Times, results: Result[]): Promise<void> {
  const kept = { ...times, ...Object.fromEntries(results.map((r) => [r.file, r.seconds])) };
  await mkdir(path.dirname(timesFile), { recursive: true });
  // Written aside and renamed: a run that reads it meanwhile sees the old record or the new one.
  const aside = `${timesFile}.${process.pid}`;
  await writeFile(aside, `${JSON.stringify(kept, null, 2)}\n`);
  await rename(aside, timesFile);
}

/** Longest-processing-time first: the suites without a time, then the others by their last time. */
function longestFirst(files: string[], times: Times): string[] {
  const time = (file: string) => times[path.relative(projectRoot, file)] ?? Number.MAX_VALUE;
  return [...files].sort((a, b) => time(b) - time(a));
}

/** The run's wall time and its five slowest suites, before the closing line. */
function summary(results: Result[], wallMs: number): string {
  const slowest = [...results].sort((a, b) => b.seconds - a.seconds).slice(0, 5);
  const lines = slowest.map((r) => `  ${r.seconds.toFixed(1).padStart(6)} s  ${r.file}\n`);
  return `slowest suites:\n${lines.join('')}wall time ${(wallMs / 1000).toFixed(1)} s (${results.length} suite${results.length === 1 ? '' : 's'}, ${concurrency} at a time)\n`;
}

async function listDatabases(admin: pg.Client, prefix: string): Promise<string[]> {
  const { rows } = await admin.query<{ datname: string }>(
    'SELECT datname FROM pg_database WHERE starts_with(datname, $1)', [prefix]);
  return rows.map((r) => r.datname);
}

async function dropDatabases(admin: pg.Client, prefix: string): Promise<void> {
  for (const name of await listDatabases(admin, prefix)) {
    await admin.query(`DROP DATABASE IF EXISTS ${admin.escapeIdentifier(name)} WITH (FORCE)`);
  }
}

function databaseUrl(adminUrl: string, database: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

const redact = (url: string) => url.replace(/\/\/([^:@/]+):[^@/]+@/, '//$1:***@');
const indent = (text: string) => text.split('\n').map((l) => `    ${l}`).join('\n') + '\n';

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  },
);
