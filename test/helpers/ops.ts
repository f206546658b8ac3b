// Running the operator CLI from a test. runOps calls it in the test's own process (ops/run-cli.ts),
// with the environment an operator's shell would give it and its output captured; spawnOps starts it
// as an operator does, a process of its own, and is kept for one smoke test per command family.
// Both are asynchronous, so a server in the test's own process keeps serving (and closing idle
// keep-alive sockets on time) while a command runs.
import { execFile } from 'node:child_process';
import { runCli } from '../../ops/run-cli.ts';
import { projectRoot } from '#shared/config.ts';

export type OpsResult = { code: number; json: any; stdout: string; stderr: string };
/** Variables beyond DATABASE_URL, as strings, as a shell would pass them. */
export type OpsEnv = Record<string, string>;

export async function runOps(databaseUrl: string, args: string[], env: OpsEnv = {}): Promise<OpsResult> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(args, { DATABASE_URL: databaseUrl, ...env }, {
    stdout: (text) => (stdout += text),
    stderr: (text) => (stderr += text),
  });
  return { code, json: parsed(stdout), stdout, stderr };
}

export function spawnOps(databaseUrl: string, args: string[], env: OpsEnv = {}, timeoutMs = 60_000): Promise<OpsResult> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['ops/cli.ts', ...args], { cwd: projectRoot, env: { PATH: process.env.PATH, DATABASE_URL: databaseUrl, ...env }, timeout: timeoutMs },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, json: parsed(stdout), stdout, stderr });
      });
  });
}

function parsed(stdout: string): unknown {
  try {
    return JSON.parse(stdout);
  } catch {
    return null;
  }
}
