// The runner (test/run.ts) and what CI reads of it (.ci/run): run on the fixture suites of
// test/fixtures/runner, a suite that cannot run here is reported as skipped with the line that says
// what is missing, never as a count like 0/-1; the closing line counts passed, failed and skipped
// tests, after the run's wall time and its slowest suites; CI reads the same totals from it; failures
// still fail the run, skips do not.
import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { projectRoot } from '#shared/config.ts';

const test = suite('test runner');
// Its own run id, so the inner runner's template database never touches this run's databases.
const RUN_ID = `${(process.env.TEST_DB_PREFIX ?? 'x').replace(/[^a-z0-9]/gi, '')}runner`.toLowerCase();

type Run = { status: number | null; output: string; stdout: string };
// The fixtures' times, apart from those of the real suites.
const timesDir = await mkdtemp(path.join(tmpdir(), 'runner-times-'));
const TIMES = path.join(timesDir, 'test-times.json');

function runner(filter: string[], env: Record<string, string> = {}): Run {
  const { CI: _ci, ...outer } = process.env;
  const result = spawnSync(process.execPath, ['test/run.ts', ...filter], {
    cwd: projectRoot,
    env: { ...outer, DATABASE_URL: process.env.TEST_ADMIN_URL ?? '', TEST_RUN_ID: RUN_ID, TEST_DIR: 'test/fixtures/runner', TEST_TIMES_FILE: TIMES, ...env },
    encoding: 'utf8',
    timeout: 120_000,
  });
  return { status: result.status, output: `${result.stdout}${result.stderr}`, stdout: result.stdout };
}

const closingLine = (output: string) => output.trimEnd().split('\n').at(-1);

test.after(async () => {
  const admin = new pg.Client({ connectionString: process.env.TEST_ADMIN_URL });
  await admin.connect();
  const { rows } = await admin.query<{ datname: string }>('SELECT datname FROM pg_database WHERE starts_with(datname, $1)', [`pft_${RUN_ID}_`]);
  for (const { datname } of rows) await admin.query(`DROP DATABASE IF EXISTS ${admin.escapeIdentifier(datname)} WITH (FORCE)`);
  await admin.end();
  await rm(timesDir, { recursive: true, force: true });
});

test('a suite that cannot run is reported as skipped, naming what is missing and how to install it', () => {
  const run = runner(['passes', 'skips']);
  assert.is(run.status, 0, run.output);
  assert.match(run.output, /^ok {3}test\/fixtures\/runner\/passes\.test\.ts \(2\/2 in [\d.]+ s\)$/m);
  assert.match(run.output,
    /^skip test\/fixtures\/runner\/skips\.test\.ts \(0\/0, 1 skipped in [\d.]+ s\): no frobnicator at \/nonexistent\/frobnicator; install it with apt-get install frobnicator$/m);
  assert.not.match(run.output, /-\d/, 'no negative count');
  assert.is(closingLine(run.output), '2 passed, 0 failed, 1 skipped');
});

test('the closing line counts a failure, and the run fails', () => {
  const run = runner([]);
  assert.is(run.status, 1, run.output);
  assert.match(run.output, /^FAIL test\/fixtures\/runner\/fails\.test\.ts \(1\/2 in [\d.]+ s\)$/m);
  assert.is(closingLine(run.output), '3 passed, 1 failed, 1 skipped');
});

test('the run ends with its slowest suites, slowest first, and its wall time, just before the closing line', () => {
  const run = runner([]);
  // What the runner prints is on its standard output (the suites' own output is indented into it).
  const lines = run.stdout.trimEnd().split('\n');
  const at = lines.indexOf('slowest suites:');
  assert.ok(at >= 0, run.output);
  const slowest = lines.slice(at + 1, at + 4).map((l) => /^ +([\d.]+) s {2}(test\/fixtures\/runner\/\w+\.test\.ts)$/.exec(l));
  assert.ok(slowest.every(Boolean), run.output);
  assert.equal(slowest.map((m) => m?.[2]).sort(), ['fails', 'passes', 'skips'].map((f) => `test/fixtures/runner/${f}.test.ts`));
  const seconds = slowest.map((m) => Number(m?.[1]));
  assert.equal(seconds, [...seconds].sort((a, b) => b - a), 'slowest first');
  assert.ok(/^wall time [\d.]+ s \(3 suites, \d+ at a time\)$/.test(lines.at(-2) ?? ''), run.output);
  assert.is(at, lines.length - 6, run.output);
});

test('the suites that took longest in the last run start first, and the run records its times', async () => {
  const fixture = (name: string) => `test/fixtures/runner/${name}.test.ts`;
  await writeFile(TIMES, JSON.stringify({ [fixture('fails')]: 1, [fixture('passes')]: 3, [fixture('skips')]: 2, 'test/other.test.ts': 7 }));
  const run = runner([], { TEST_CONCURRENCY: '1' });
  const finished = [...run.output.matchAll(/^(?:ok  |FAIL|skip) (\S+)/gm)].map((m) => m[1]);
  assert.equal(finished, ['passes', 'skips', 'fails'].map(fixture), run.output);
  const times = JSON.parse(await readFile(TIMES, 'utf8')) as Record<string, number>;
  assert.equal(Object.keys(times).sort(), [...['fails', 'passes', 'skips'].map(fixture), 'test/other.test.ts'].sort());
  assert.is(times['test/other.test.ts'], 7, 'a suite that did not run keeps its time');
  assert.ok(Object.values(times).every((t) => typeof t === 'number' && t >= 0));
});

test('with CI set, a suite that cannot run fails instead of skipping', () => {
  const run = runner(['skips'], { CI: '1' });
  assert.is(run.status, 1, run.output);
  assert.match(run.output, 'CI must run this suite');
  assert.is(closingLine(run.output), '0 passed, 1 failed, 0 skipped');
});

test('.ci/run reads the totals of the closing line, and counts a run without one as a failure', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'runner-'));
  try {
    const totals = async (log: string) => {
      const file = path.join(dir, 'log');
      await writeFile(file, log);
      const result = spawnSync('bash', ['.ci/run', '--totals', file], { cwd: projectRoot, encoding: 'utf8', timeout: 10_000 });
      assert.is(result.status, 0, result.stderr);
      return result.stdout.trim();
    };
    assert.is(await totals(runner([]).output), '3 1 1');
    assert.is(await totals('ok   x (2/2 in 0.1 s)\n12 passed, 0 failed, 2 skipped\n'), '12 0 2');
    assert.is(await totals('Error: cannot reach PostgreSQL\n'), '0 1 0');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test.run();
