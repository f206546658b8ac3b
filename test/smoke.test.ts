// npm start on a fresh data folder with no DATABASE_URL: the embedded PostgreSQL, migrations,
// demo data, web and worker, and the banner's key and URL working; SIGTERM stops it all.
import { spawn } from 'node:child_process';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { request } from './helpers/http.ts';

const test = suite('npm start');

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });
}

test('starts on the embedded database, answers /v1/saude with the printed key, and stops on SIGTERM', async () => {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'npm-start-'));
  await chmod(dataDir, 0o755); // PostgreSQL runs as the postgres user when the tests run as root
  const env: NodeJS.ProcessEnv = { ...process.env, EMBEDDED_PG_DIR: path.join(dataDir, 'pg'), PORT: '0', LOG_LEVEL: 'info' };
  delete env.DATABASE_URL;
  // Its own process group, so the stop below reaches every process as Ctrl-C or a platform would.
  const child = spawn('npm', ['start'], { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let output = '';
  child.stdout.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr.on('data', (c: Buffer) => (output += c.toString()));
  // Every process of the group holds the pipe: it closes when the last one is gone.
  const allExited = new Promise<void>((resolve) => child.stdout.on('close', () => resolve()));
  try {
    const deadline = Date.now() + 90_000;
    while (!/Try: curl/.test(output) && Date.now() < deadline && child.exitCode === null) await new Promise((r) => setTimeout(r, 100));
    const token = /Bearer (chv_\S+)"/.exec(output)?.[1];
    const url = /(http:\/\/\S+\/v1)\/saude/.exec(output)?.[1];
    assert.ok(token && url, `banner not printed:\n${output}`);
    const res = await request(`${url}/saude`, { token });
    assert.is(res.status, 200);
    assert.is(res.body.situacao, 'ok');
    const pgPort = Number(/127\.0\.0\.1:(\d+)/.exec(output)?.[1] ?? 0);

    // The service drains, then stops the embedded database itself.
    process.kill(-(child.pid ?? 0), 'SIGTERM');
    await allExited;
    assert.match(output, '"msg":"stopped"', 'the service stopped gracefully');
    assert.not.match(output, 'graceful stop took too long');
    const port = Number(new URL(url).port);
    assert.not.ok(await portOpen(port), 'the API port is closed');
    if (pgPort) assert.not.ok(await portOpen(pgPort), 'the embedded PostgreSQL stopped');
  } finally {
    if (child.exitCode === null) process.kill(-(child.pid ?? 0), 'SIGKILL');
    await rm(dataDir, { recursive: true, force: true });
  }
});

test.run();
