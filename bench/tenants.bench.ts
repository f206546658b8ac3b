// A bad neighbour (issue 17): two well-behaved accounts at a steady load, alone and then while a
// third hammers every ceiling of its Bancada plan with 20 connections, ignores Retry-After and sends
// malformed and hostile input (NUL bytes, broken JSON, forged cursors, oversized bodies, totals past
// the column, unknown keys, bad HTTP). What is reported: the 5xx answers the well-behaved accounts
// got (must be 0), their p99 beside the same load without the neighbour (goal ≤ 1.5×), and the web
// process's RSS over each run beside a bare restify server under the same load (goal: peak ≤ 256 MB).
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { text } from 'node:stream/consumers';
import autocannon from 'autocannon';
import { movimentar } from '#shared/db/estoque.ts';
import { createDatabasePool, sql } from '#shared/db/pool.ts';
import { criarProdutoCompleto } from '../test/helpers/catalogo.ts';
import { addKey, createAccount, createPlan } from '../test/helpers/fixtures.ts';
import { benchDatabase, countCpu, pinThisProcess, procfileNodeArgs, sampleRss, spawnServer, writeSection } from './lib.ts';
import { cannon, cpuText, statsOf, type Neighbour, type Req, type Stats } from './tenants-load.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 20);
/** Requests per second of each well-behaved account. */
const GOOD_RATE = Number(process.env.BENCH_GOOD_RATE ?? 50);
const HAMMER_CONNECTIONS = 20;
/** Of them, those sending hostile input: as many as its account may have in flight (every plan: 3). */
const HOSTILE_CONNECTIONS = 3;

// The web process gets a CPU of its own, as on its own dyno; PostgreSQL and the load generators
// share the other (with fewer than two CPUs, or no taskset, everything shares them all).
const pinned = os.cpus().length >= 2 && pinThisProcess('1');
const SERVER_CPU = pinned ? '0' : undefined;

const db = await benchDatabase('tenants');
const pool = await createDatabasePool(db.url, { size: 4, statementTimeoutMs: 120_000, applicationName: 'bench' });
// The well-behaved accounts' plan holds their steady load with room to spare: they are never refused.
await createPlan(pool, 'bench_bom', {
  leituras_por_minuto: 1_000_000, escritas_por_minuto: 1_000_000, chamadas_por_mes: 2_000_000_000,
  rajada: 10_000, rajada_recarga_por_segundo: 10_000, simultaneas_por_chave: 100, simultaneas_por_conta: 100,
});

type Good = { token: string; produto: string; variacoes: string[] };
const good: Good[] = [];
for (let i = 0; i < 2; i++) {
  const account = await createAccount(pool, { plano: 'bench_bom' });
  const produto = await criarProdutoCompleto(pool, account.contaId, { variacoes: Array.from({ length: 5 }, () => ({})) });
  for (const v of produto.variacoes) {
    await pool.transaction((tx) => movimentar(tx, account.contaId, { tipo: 'ajuste', variacao_id: v.id, contado: 10_000_000, motivo: 'correcao' }));
  }
  good.push({ token: account.token, produto: produto.produtoId, variacoes: produto.variacoes.map((v) => v.id) });
}
// The neighbour: an account on Bancada whose two keys hammer its ceilings (and get suspended), and
// an account on the well-behaved plan whose key sends hostile input, which so reaches validation
// rather than being refused at admission.
const bad = await createAccount(pool, { plano: 'bancada' });
const badTokens = [bad.token, (await addKey(pool, bad)).token];
const badProduto = await criarProdutoCompleto(pool, bad.contaId, { variacoes: [{}] });
// The hostile input comes from an account whose rates it fits in, and whose concurrency is every
// plan's: 3 requests in flight, so it can hold at most 3 of the process's database connections.
await createPlan(pool, 'bench_hostil', {
  leituras_por_minuto: 1_000_000, escritas_por_minuto: 1_000_000, chamadas_por_mes: 2_000_000_000,
  rajada: 10_000, rajada_recarga_por_segundo: 10_000, simultaneas_por_chave: 3, simultaneas_por_conta: 3,
});
const hostil = await createAccount(pool, { plano: 'bench_hostil' });
const hostilProduto = await criarProdutoCompleto(pool, hostil.contaId, { variacoes: [{}] });
const neighbour: Neighbour = {
  ceilingTokens: badTokens, ceilingProduto: badProduto.produtoId, ceilingVariacao: badProduto.variacoes[0]?.id ?? '',
  hostileToken: hostil.token, hostileVariacao: hostilProduto.variacoes[0]?.id ?? '',
};
await pool.query(sql.unsafe`ANALYZE`);

let g = 0;
/** The well-behaved accounts: reads of a product and of stock, and movements, each with a new Idempotency-Key. */
function goodRequest(): Req {
  const n = g++;
  const account = good[n % good.length] as Good;
  const auth = { authorization: `Bearer ${account.token}` };
  switch (Math.floor(n / good.length) % 4) {
    case 0: return { method: 'GET', path: `/v1/produtos/${account.produto}`, headers: auth };
    case 1: return { method: 'GET', path: '/v1/estoque?limite=10', headers: auth };
    case 2: return { method: 'GET', path: '/v1/conta', headers: auth };
    default: return {
      method: 'POST', path: '/v1/estoque/movimentos',
      headers: { ...auth, 'content-type': 'application/json', 'idempotency-key': randomUUID() },
      body: JSON.stringify({ tipo: n % 8 < 4 ? 'entrada' : 'saida', variacao_id: account.variacoes[n % account.variacoes.length], quantidade: 1, motivo: 'correcao' }),
    };
  }
}

type Phase = { good: Stats; ceilings: Stats | null; hostile: Stats | null; rss: { peak: number; last: number }; cpu: Record<string, number> };

/** The neighbour's load, in a process of its own (bench/tenants-neighbour.ts). */
async function neighbourLoad(url: string): Promise<{ ceilings: Stats; hostile: Stats }> {
  // At the lowest priority: the neighbour's load generator stands for clients elsewhere, and on a
  // small machine it must not take the CPU that PostgreSQL and the other generator need.
  const child = spawn('nice', ['-n', '19', process.execPath, path.join(import.meta.dirname, 'tenants-neighbour.ts')], { stdio: ['pipe', 'pipe', 'inherit'] });
  child.stdin.end(JSON.stringify({ url, seconds: SECONDS, ceilingConnections: HAMMER_CONNECTIONS - HOSTILE_CONNECTIONS, hostileConnections: HOSTILE_CONNECTIONS, neighbour }));
  const [output] = await Promise.all([text(child.stdout), new Promise((resolve) => child.once('exit', resolve))]);
  return JSON.parse(output) as { ceilings: Stats; hostile: Stats };
}

async function phase(url: string, pid: number, withNeighbour: boolean): Promise<Phase> {
  const stopRss = sampleRss(pid);
  const cpu = countCpu();
  const [goodResult, bad] = await Promise.all([
    cannon(url, { connections: 10, seconds: SECONDS, overallRate: GOOD_RATE * good.length, next: goodRequest }),
    withNeighbour ? neighbourLoad(url) : Promise.resolve(null),
  ]);
  return { good: statsOf(goodResult), ceilings: bad?.ceilings ?? null, hostile: bad?.hostile ?? null, rss: await stopRss(), cpu: cpu() };
}

// The web role as the Procfile runs it, with its heap sizes.
const webFlags = await procfileNodeArgs('web');
const api = await spawnServer('api/main.ts', { DATABASE_URL: db.url, DB_POOL_SIZE: '10' }, '/v1/openapi.json', webFlags, SERVER_CPU);
const bare = await spawnServer('bench/bare-server.ts', { DATABASE_URL: db.url }, '/hello', [], SERVER_CPU);
try {
  const startRss = await sampleRss(api.child.pid ?? 0)();
  // Warm-up: the JIT and the pool, so the first phase is not charged for them.
  await autocannon({ url: api.url, connections: 4, duration: 3, requests: [{ setupRequest: (req: autocannon.Request) => ({ ...req, ...goodRequest() }) }] });
  const alone = await phase(api.url, api.child.pid ?? 0, false);
  const together = await phase(api.url, api.child.pid ?? 0, true);
  // The same load on a bare restify server (its routes answer whatever the path): what Node and
  // restify alone take in memory.
  const bareRss = sampleRss(bare.child.pid ?? 0);
  await Promise.all([
    autocannon({ url: `${bare.url}/bare`, connections: 10, overallRate: GOOD_RATE * good.length, duration: SECONDS }),
    autocannon({ url: `${bare.url}/hello`, connections: HAMMER_CONNECTIONS, duration: SECONDS }),
  ]);
  const bareMemory = await bareRss();

  const print = (name: string, s: Stats | null) => (s
    ? `| ${name} | ${s.requests} | ${s.p50} | ${s.p99} | ${s.s2xx} | ${s.s4xx} | **${s.s5xx}** | ${s.errors} |`
    : '');
  const ratio = together.good.p99 / Math.max(1, alone.good.p99);
  process.stdout.write(`${JSON.stringify({ startRss, alone, together, bareMemory }, null, 1)}\n`);
  const table = [
    print('well-behaved accounts alone', alone.good),
    print('well-behaved accounts beside the bad neighbour', together.good),
    print(`the neighbour past its ceilings (${HAMMER_CONNECTIONS - HOSTILE_CONNECTIONS} connections, no pause)`, together.ceilings),
    print(`the neighbour's hostile input (${HOSTILE_CONNECTIONS} connections, no pause)`, together.hostile),
  ].join('\n');
  await writeSection('tenants', `## A bad neighbour (issue 17)

Two well-behaved accounts at a steady ${GOOD_RATE} requests/s each (reads of a product, of stock and
of /conta, and stock movements with a new Idempotency-Key; a plan they never reach), first alone,
then while a neighbour hammers with ${HAMMER_CONNECTIONS} connections and no pause and ignores
Retry-After: ${HAMMER_CONNECTIONS - HOSTILE_CONNECTIONS} of them on an account of the Bancada plan, past every ceiling (limite=100 lists,
burst, minute, concurrency, then suspension), ${HOSTILE_CONNECTIONS} (its concurrency ceiling) on an account whose rates let its
input reach validation: NUL bytes, broken JSON, 70 KB bodies, numbers past the column, forged cursors,
year-0000 filters, quotation totals past the column, unknown keys; and 20 unparseable request lines
a second. autocannon drives the well-behaved accounts in this process and the neighbour in a process
of its own (each its own event loop), the API (one
web process as the Procfile runs it, \`${webFlags.join(' ')}\`, DB_POOL_SIZE 10) in its own, ${pinned ? 'alone on one CPU while PostgreSQL and the load generators share the other (taskset)' : 'sharing every CPU with PostgreSQL and the load generators'}; PostgreSQL ${process.env.DATABASE_URL ? 'from DATABASE_URL' : 'embedded (default settings, fsync on)'}; ${SECONDS} s per run.

| run | requests | p50 ms | p99 ms | 2xx | 4xx | 5xx | errors |
| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
${table}

- The neighbour's answers past its ceilings: ${together.ceilings?.statuses}; to its hostile input:
  ${together.hostile?.statuses}. Its latencies are not the service's speed: a refusal answered from
  memory (a suspended key) is held 1 s by design (REFUSAL_DELAY_MS), and a 413 closes its
  connection, which autocannon counts into the next request's time.
- CPU seconds over each run (of ${SECONDS} s on ${os.cpus().length} cores): alone ${cpuText(alone.cpu)}; beside the neighbour ${cpuText(together.cpu)}.
- 5xx answers to the well-behaved accounts beside the neighbour: **${together.good.s5xx}** (must be 0); alone: ${alone.good.s5xx}.
- Their p99 beside the neighbour / alone: **${ratio.toFixed(2)}×** (${together.good.p99} ms / ${alone.good.p99} ms; goal ≤ 1.5×).
- RSS of the web process: ${startRss.peak} MB after start; peak **${alone.rss.peak} MB** with the
  well-behaved load alone, **${together.rss.peak} MB** beside the neighbour (goal ≤ 256 MB). A bare
  restify server under the same load (the same rate on a route with one UPDATE and one SELECT, 20
  connections without pause on a route without database): peak ${bareMemory.peak} MB.`);
} finally {
  await api.stop();
  await bare.stop();
  await pool.end();
  await db.stop();
}
