// Starting one of the service's roles from a test as the Procfile does: `node <script>`, a process of
// its own on the suite's database, its output kept for a failure's message, and added to `children`
// so the suite can kill what is left when it ends.
import { spawn, type ChildProcess } from 'node:child_process';
import { projectRoot } from '#shared/config.ts';

export type RoleProcess = ChildProcess & { output: () => string };

/** `env` completes the role's environment (DATABASE_URL, PUBLIC_BASE_URL, …); PATH and a quiet log are given. */
export function spawnRole(script: string, env: Record<string, string>, children: Set<ChildProcess>): RoleProcess {
  const child = spawn(process.execPath, [script], {
    cwd: projectRoot,
    env: { PATH: process.env.PATH, WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr?.on('data', (c: Buffer) => (output += c.toString()));
  children.add(child);
  child.on('exit', () => children.delete(child));
  return Object.assign(child, { output: () => output });
}
