// The runner (test/run.ts) and what CI reads of it (.ci/run): run on the fixture suites of
// test/fixtures/runner, a suite that cannot run here is reported as skipped with the line that says
// what is missing, never as a count like 0/-1; the closing line counts passed, failed and skipped
// tests; CI reads the same totals from it; failures still fail the run, skips do not.
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { projectRoot } from '../shared/config.ts';

const test = suite('test runner');
// Its own run id, so the inner runner's template database never touches this run's databases.
const RUN_ID = `${(process.env.TEST_DB_PREFIX ?? 'x').replace(/[^a-z0-9]/gi, '')}runner`.toLowerCase();

type Run = { status: number | null; output: string };

function runner(filter: string[], env: Record<string, string> = {}): Run {
  const { CI: _ci, ...outer } = process.env;
  const result = spawnSync(process.execPath, ['test/run.ts', ...filter], {
    cwd: projectRoot,
    env: { ...outer, DATABASE_URL: process.env.TEST_ADMIN_URL ?? '', TEST_RUN_ID: RUN_ID, TEST_DIR: 'test/fixtures/runner', ...env },
    encoding: 'utf8',
    timeout: 120_000,
  });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

const closingLine = (output: string) => output.trimEnd().split('\n').at(-1);

test.after(async () => {
  const admin = new pg.Client({ connectionString: process.env.TEST_ADMIN_URL });
  await admin.connect();
  const { rows } = await admin.query<{ datname: string }>('SELECT datname FROM pg_database WHERE starts_with(datname, $1)', [`pft_${RUN_ID}_`]);
  for (const { datname } of rows) await admin.query(`DROP DATABASE IF EXISTS ${admin.escapeIdentifier(datname)} WITH (FORCE)`);
  await admin.end();
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
