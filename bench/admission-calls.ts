// Admission's own cost in PostgreSQL, without HTTP: api_admit called directly as web processes call it
// (a named statement, a batch of distinct keys, each call giving back the slots the previous call of
// its connection took), from a few connections at once, for a few batch sizes. What a request costs
// PostgreSQL (CPU from /proc, this server's processes only) and the WAL it writes, per admitted request.
import { createHash } from 'node:crypto';
import pg from 'pg';
import { cpuPerRequest, postmasterOf, sampleCpu } from './cpu.ts';

export type Key = { token: string; contaId: string; chaveId: string };
export type CallsRow = { size: number; requestsPerSecond: number; pgUs: number; walBytes: number };

const ADMIT = {
  name: 'bench_api_admit',
  text: 'SELECT api_admit($1::text[]::bytea[], $2, $3, $4, $5, $6, NULL, $7, $8, $9) AS a',
};

/** One call: the batch's keys, the slots its connection's previous call took given back. */
function call(client: pg.Client, keys: Key[], hashes: Map<string, string>, released: Key[], holder: string) {
  const none = keys.map(() => null);
  return client.query({
    ...ADMIT,
    values: [keys.map((k) => hashes.get(k.token)), none, none, keys.map(() => 1), none, keys.map(() => 'leitura'), holder,
      released.map((k) => k.contaId), released.map((k) => k.chaveId)],
  });
}

async function walPosition(client: pg.Client): Promise<number> {
  return Number((await client.query(`SELECT pg_current_wal_lsn() - '0/0'::pg_lsn AS w`)).rows[0].w);
}

/** Calls of `size` requests from every connection for `seconds` (after one of warm-up); figures per admitted request. */
async function measureSize(clients: pg.Client[], keys: Key[], hashes: Map<string, string>, size: number, seconds: number, databases: Set<number>): Promise<CallsRow> {
  let cursor = 0;
  let admitted = 0;
  let stop = false;
  const run = async (client: pg.Client, c: number) => {
    let released: Key[] = [];
    while (!stop) {
      const batch = Array.from({ length: size }, () => keys[cursor++ % keys.length] as Key);
      const { rows } = await call(client, batch, hashes, released, `bench-${c}`);
      const answer = String(rows[0]?.a ?? '');
      if (!answer.split('\n').every((line) => line.startsWith('ok|'))) throw new Error(`a request was not admitted: ${answer.slice(0, 200)}`);
      admitted += batch.length;
      released = batch;
    }
    await call(client, [], hashes, released, `bench-${c}`);
  };
  const rounds = async (ms: number) => {
    stop = false;
    const runs = clients.map(run);
    await new Promise((resolve) => setTimeout(resolve, ms));
    stop = true;
    await Promise.all(runs);
  };
  await rounds(1000);
  admitted = 0;
  const wal = await walPosition(clients[0] as pg.Client);
  const before = sampleCpu(new Map(), databases);
  await rounds(seconds * 1000);
  const after = sampleCpu(new Map(), databases);
  const walBytes = (await walPosition(clients[0] as pg.Client)) - wal;
  return {
    size, requestsPerSecond: Math.round(admitted / seconds),
    pgUs: cpuPerRequest(before, after, admitted).PostgreSQL ?? 0, walBytes: Math.round(walBytes / Math.max(1, admitted)),
  };
}

export async function admissionCalls(url: string, keys: Key[], sizes: number[], seconds: number, connections = 3): Promise<CallsRow[]> {
  const hashes = new Map(keys.map((k) => [k.token, `\\x${createHash('sha256').update(k.token).digest('hex')}`]));
  const clients: pg.Client[] = [];
  for (let i = 0; i < connections; i++) {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    clients.push(client);
  }
  try {
    const { rows } = await (clients[0] as pg.Client).query('SELECT pg_backend_pid() AS pid');
    const postmaster = postmasterOf(Number(rows[0]?.pid));
    const databases = new Set<number>(postmaster ? [postmaster] : []);
    const results: CallsRow[] = [];
    for (const size of sizes) results.push(await measureSize(clients, keys, hashes, size, seconds, databases));
    return results;
  } finally {
    for (const client of clients) await client.end();
  }
}
