// A real PgBouncer (Debian's package, 1.18 on bookworm) in transaction mode in front of the test
// server, as a Heroku-style pooled database URL puts it in front of the web processes.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from '#shared/db/embedded.ts';

export type PgBouncer = {
  port: number;
  version: string;
  /** The pooled URL of a database of the test server. */
  urlFor(database: string): string;
  /** What PgBouncer logged (its refusals say what a client sent that it does not pass). */
  log(): Promise<string>;
  stop(): Promise<void>;
};

const CANDIDATES = ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer'];

/** The pgbouncer binary, or null when it is not installed. */
export function pgbouncerBinary(): string | null {
  for (const candidate of CANDIDATES) if (spawnSync(candidate, ['--version']).status === 0) return candidate;
  const found = spawnSync('sh', ['-c', 'command -v pgbouncer']);
  return found.status === 0 ? found.stdout.toString().trim() || null : null;
}

/**
 * Starts PgBouncer in transaction mode for every database of the server `adminUrl` names, with a
 * small server pool so that a client's consecutive transactions land on different server sessions.
 */
export async function startPgBouncer(binary: string, adminUrl: string, options: { serverPoolSize?: number } = {}): Promise<PgBouncer> {
  const server = new URL(adminUrl);
  const dir = await mkdtemp(path.join(tmpdir(), 'pgbouncer-'));
  // PgBouncer will not run as root: as root it is started as the postgres user, who must read and
  // write here.
  const asRoot = process.getuid?.() === 0;
  if (asRoot) await chmod(dir, 0o777);
  const port = await freePort();
  const user = decodeURIComponent(server.username || 'postgres');
  const password = decodeURIComponent(server.password);
  const ini = `[databases]
* = host=${server.hostname} port=${server.port || 5432} user=${user}${password ? ` password=${password}` : ''}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = ${port}
unix_socket_dir =
auth_type = any
pool_mode = transaction
default_pool_size = ${options.serverPoolSize ?? 4}
max_client_conn = 500
logfile = ${path.join(dir, 'pgbouncer.log')}
pidfile = ${path.join(dir, 'pgbouncer.pid')}
admin_users = ${user}
`;
  const iniFile = path.join(dir, 'pgbouncer.ini');
  await writeFile(iniFile, ini, { mode: 0o644 });
  const version = spawnSync(binary, ['--version']).stdout.toString().split('\n')[0]?.trim() ?? 'PgBouncer';
  const child: ChildProcess = spawn(binary, asRoot ? ['-u', 'postgres', iniFile] : [iniFile], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout?.on('data', (d: Buffer) => { output += d.toString(); });
  child.stderr?.on('data', (d: Buffer) => { output += d.toString(); });
  const log = async () => `${output}${await readFile(path.join(dir, 'pgbouncer.log'), 'utf8').catch(() => '')}`;
  await waitForPort(port, child, log);
  return {
    port,
    version,
    urlFor(database) {
      const url = new URL(adminUrl);
      url.hostname = '127.0.0.1';
      url.port = String(port);
      url.pathname = `/${database}`;
      return url.toString();
    },
    log,
    async stop() {
      child.kill('SIGINT');
      await new Promise((resolve) => (child.exitCode !== null ? resolve(null) : child.once('exit', resolve)));
      await rm(dir, { recursive: true, force: true });
    },
  };
}

async function waitForPort(port: number, child: ChildProcess, log: () => Promise<string>): Promise<void> {
  const { connect } = await import('node:net');
  for (let i = 0; i < 100; i++) {
    if (child.exitCode !== null) throw new Error(`pgbouncer exited with ${child.exitCode}: ${await log()}`);
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => { socket.destroy(); resolve(true); });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`pgbouncer did not listen on ${port}: ${await log()}`);
}
