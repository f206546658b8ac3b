// Running the operator CLI from a test, as an operator would: a separate process on the suite's
// database. Asynchronous, so a server in the test's own process keeps serving (and closing idle
// keep-alive sockets on time) while a command runs.
import { execFile } from 'node:child_process';

export type OpsResult = { code: number; json: any; stderr: string };

export function runOps(databaseUrl: string, args: string[], timeoutMs = 60_000): Promise<OpsResult> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['ops/cli.ts', ...args], { env: { PATH: process.env.PATH, DATABASE_URL: databaseUrl }, timeout: timeoutMs },
      (error, stdout, stderr) => {
        let json: unknown = null;
        try {
          json = JSON.parse(stdout);
        } catch {
          json = null;
        }
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, json, stderr });
      });
  });
}
