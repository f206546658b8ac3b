// Many processes on one database (issue 21, item 3): four real web processes and two real workers,
// as a Heroku-style platform runs them. One key's minute and month ceilings, hammered through all
// four web processes at once, admit exactly the ceiling; a burst of events delivered by two live
// workers arrives once each, none lost and none twice.
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { freePort } from '#shared/db/embedded.ts';
import { sql } from '#shared/db/pool.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import { spawnRole } from './helpers/roles.ts';
import { createAccount, createPlan, type TestAccount } from './helpers/fixtures.ts';
import { addEndpoint, emit, eventually, startReceiver, type Receiver } from './helpers/receiver.ts';

const test = suite('four web processes and two workers on one database');
const WEBS = 4;
const WORKERS = 2;
const BASE_URL = 'http://127.0.0.1:3000/v1';
let db: TestDatabase;
let receiver: Receiver;
const children = new Set<ChildProcess>();
const webUrls: string[] = [];

type Process = ChildProcess & { output: () => string };

/** A role as the Procfile runs it (`node api/main.ts`, `node worker/main.ts`) on the suite's database. */
function startRole(script: string, env: Record<string, string>): Process {
  return spawnRole(script, { DATABASE_URL: db.url, PUBLIC_BASE_URL: BASE_URL, SHUTDOWN_GRACE_MS: '2000', REFUSAL_DELAY_MS: '0', ...env }, children);
}

async function listening(url: string, child: Process): Promise<void> {
  await eventually(async () => {
    if (child.exitCode !== null) throw new Error(`web exited: ${child.output()}`);
    return fetch(`${url}/saude`).then((r) => r.status, () => 0);
  }, (status) => status === 401);
}

test.before(async () => {
  db = await createTestDatabase();
  receiver = await startReceiver();
  for (let i = 0; i < WEBS; i++) {
    const port = await freePort();
    const web = startRole('api/main.ts', { PORT: String(port), HOST: '127.0.0.1' });
    webUrls.push(`http://127.0.0.1:${port}/v1`);
    await listening(webUrls[i]!, web);
  }
  for (let i = 0; i < WORKERS; i++) startRole('worker/main.ts', {});
});
test.after(async () => {
  await Promise.all([...children].map(async (child) => {
    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    await exited;
  }));
  await receiver.close();
  await db.close();
});

/** `total` GET /saude with the key, `concurrency` at a time, spread evenly over the web processes: how many were admitted, refused, or neither. */
async function hammer(conta: TestAccount, total: number, concurrency: number): Promise<{ ok: number; refused: number; other: string[] }> {
  let next = 0;
  let ok = 0;
  let refused = 0;
  const other: string[] = [];
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < total) {
      const i = next++;
      const res = await fetch(`${webUrls[i % WEBS]}/saude`, { headers: { authorization: `Bearer ${conta.token}` } });
      const text = await res.text();
      if (res.status === 200) ok++;
      // Refused by a ceiling (429), or by the suspension that many refusals in a row bring (403).
      else if (res.status === 429 || (res.status === 403 && text.includes('suspensa'))) refused++;
      else other.push(`${res.status} ${text.slice(0, 200)}`);
    }
  }));
  return { ok, refused, other };
}

const Seconds = z.object({ s: z.number() });

test('a key\'s minute ceiling, hammered through four web processes at once, admits exactly the ceiling', async () => {
  const CEILING = 60;
  await createPlan(db.pool, 'multi_minuto', { leituras_por_minuto: CEILING, rajada: 1000, rajada_recarga_por_segundo: 1000, simultaneas_por_chave: 1000, simultaneas_por_conta: 1000 });
  const conta = await createAccount(db.pool, { plano: 'multi_minuto' });
  // The minute is the database's calendar minute, which no test can move: a burst that began in a
  // minute's last seconds could be counted in two. Start it at the top of the next one then.
  const into = await db.pool.oneFirst(sql.type(Seconds)`SELECT extract(second FROM clock_timestamp())::float8 AS s`);
  if (into > 50) await new Promise((resolve) => setTimeout(resolve, (60.5 - into) * 1000));
  const { ok, refused, other } = await hammer(conta, 4 * CEILING, 40);
  assert.equal(other, []);
  assert.equal({ ok, refused }, { ok: CEILING, refused: 3 * CEILING }, 'admitted exactly the ceiling');
});

test('a key\'s month ceiling, hammered through four web processes at once, admits exactly the ceiling', async () => {
  const CEILING = 150;
  await createPlan(db.pool, 'multi_mes', { chamadas_por_mes: CEILING, leituras_por_minuto: 100_000, rajada: 1000, rajada_recarga_por_segundo: 1000, simultaneas_por_chave: 1000, simultaneas_por_conta: 1000 });
  const conta = await createAccount(db.pool, { plano: 'multi_mes' });
  const { ok, refused, other } = await hammer(conta, 2 * CEILING, 40);
  assert.equal(other, []);
  assert.equal({ ok, refused }, { ok: CEILING, refused: CEILING }, 'admitted exactly the ceiling');
});

test('a burst of events delivered by two live workers: each arrives, once, with its id', async () => {
  const BURST = 300;
  const conta = await createAccount(db.pool);
  await addEndpoint(db.pool, receiver, { contaId: conta.contaId, usuarioId: conta.usuarioId, path: '/multi' });
  const ids = new Set<string>();
  for (let i = 0; i < BURST; i++) {
    ids.add(await emit(db.pool, conta.contaId, 'cotacao.criada', { objeto: 'cotacao', id: randomUUID(), codigo: `COT-${i}`, status: 'rascunho' }));
  }
  const arrived = () => receiver.received.filter((r) => r.path === '/multi');
  await eventually(async () => arrived().length, (n) => n >= BURST, 30_000);
  const byId = new Map<string, number>();
  for (const r of arrived()) byId.set(r.id, (byId.get(r.id) ?? 0) + 1);
  assert.ok(arrived().every((r) => r.verified), 'every request signed with the endpoint\'s secret');
  assert.equal([...byId.keys()].sort(), [...ids].sort(), 'every event arrived, with its webhook-id');
  assert.equal([...byId.values()].filter((n) => n > 1), [], 'none twice');
  const workers = await db.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    SELECT count(DISTINCT pid)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'worker'`);
  assert.ok(workers >= WORKERS, 'both workers were connected');
});

test.run();
