// A suite that cannot run on this machine (a browser or a database extension missing) says so the
// one way the runner understands: a line `SKIPPED: <what is missing>; <how to install it>` and its
// tests skipped, so test/run.ts reports it as skipped instead of as a count that reads like a
// failure. CI must run every suite: with CI set, a missing tool fails the suite instead.
import type { Test } from 'uvu';

export function cannotRun(test: Test, name: string, missing: string, install: string): void {
  if (process.env.CI) throw new Error(`${missing}; CI must run this suite (.ci/run installs what it needs): ${install}`);
  process.stdout.write(`SKIPPED: ${missing}; ${install}\n`);
  test.skip(name, () => undefined);
}
