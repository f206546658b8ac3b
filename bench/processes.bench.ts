// Many web processes on one PostgreSQL (issue 21, item 3): a mixed load, 4 reads of an order for
// each stock movement, served by 1, 2 and 4 web processes side by side (each with its own pool of
// 10, as the Procfile runs them), the same 50 connections in all split evenly among them. Figures
// are reported, never asserted: requests per second, latency, and CPU per request by process, which
// says where the time goes as processes are added on the same machine.
import { randomUUID } from 'node:crypto';
import autocannon from 'autocannon';
import { createDatabasePool, sql } from '#shared/db/pool.ts';
import { criarProdutoCompleto, definirSaldo } from '../test/helpers/catalogo.ts';
import { novoPedido } from '../test/helpers/cotacoes.ts';
import { createAccount, createPlan } from '../test/helpers/fixtures.ts';
import { benchDatabase, countCpu, procfileNodeArgs, spawnServer, writeSection } from './lib.ts';

const ACCOUNTS = 50;
const CONNECTIONS = 48;
const SECONDS = Number(process.env.BENCH_SECONDS ?? 12);
const PROCESSES = [1, 2, 4];

const db = await benchDatabase('processes');
const pool = await createDatabasePool(db.url, { size: 4, statementTimeoutMs: 120_000, applicationName: 'bench' });
await createPlan(pool, 'bench_processes', {
  chaves_ativas: 10, leituras_por_minuto: 100_000_000, escritas_por_minuto: 100_000_000, chamadas_por_mes: 2_000_000_000,
  rajada: 1_000_000, rajada_recarga_por_segundo: 1_000_000, simultaneas_por_chave: 1000, simultaneas_por_conta: 1000,
});

type Account = { token: string; pedido: string; variacao: string };
const accounts: Account[] = [];
for (let i = 0; i < ACCOUNTS; i++) {
  const account = await createAccount(pool, { plano: 'bench_processes' });
  const produto = await criarProdutoCompleto(pool, account.contaId, { variacoes: [{}] });
  const variacao = produto.variacoes[0]?.id ?? '';
  await definirSaldo(pool, account.contaId, variacao, 10_000_000);
  accounts.push({ token: account.token, pedido: await novoPedido(pool, account.contaId), variacao });
}
await pool.query(sql.unsafe`ANALYZE`);

/** Every fifth request a movement (exits and entries of 1 in turn, a new key each), the others a read of an order. */
function mixed() {
  let n = 0;
  return (req: Record<string, any>) => {
    const i = n++;
    const account = accounts[i % ACCOUNTS] as Account;
    const auth = { authorization: `Bearer ${account.token}` };
    if (i % 5 !== 4) return { ...req, method: 'GET', path: `/v1/pedidos-producao/${account.pedido}`, headers: auth };
    return {
      ...req, method: 'POST', path: '/v1/estoque/movimentos',
      headers: { ...auth, 'content-type': 'application/json', 'idempotency-key': randomUUID() },
      body: JSON.stringify({ tipo: i % 10 === 4 ? 'saida' : 'entrada', variacao_id: account.variacao, quantidade: 1, motivo: 'correcao' }),
    };
  };
}

type Row = { processes: number; rps: number; p50: number; p99: number; bad: number; cpu: Record<string, number> };

async function run(urls: string[], seconds: number): Promise<Omit<Row, 'processes'>> {
  const per = Math.floor(CONNECTIONS / urls.length);
  const one = (url: string, duration: number) => autocannon({ url, connections: per, duration, requests: [{ setupRequest: mixed() }] } as autocannon.Options);
  await Promise.all(urls.map((url) => one(url, 2)));
  const cpu = countCpu();
  const results = await Promise.all(urls.map((url) => one(url, seconds)));
  const seconds_ = cpu();
  const total = results.reduce((sum, r) => sum + r.requests.total, 0);
  // Latency: the slowest process's percentile (each served the same share of connections).
  return {
    rps: Math.round(total / seconds),
    p50: Math.max(...results.map((r) => r.latency.p50)),
    p99: Math.max(...results.map((r) => r.latency.p99)),
    bad: results.reduce((sum, r) => sum + r.non2xx + r.errors + r.timeouts, 0),
    cpu: Object.fromEntries(Object.entries(seconds_).map(([label, s]) => [label, Math.round((s * 1e6) / Math.max(1, total))])),
  };
}

const webFlags = await procfileNodeArgs('web');
const rows: Row[] = [];
try {
  for (const n of PROCESSES) {
    const servers = [];
    for (let i = 0; i < n; i++) servers.push(await spawnServer('api/main.ts', { DATABASE_URL: db.url, DB_POOL_SIZE: '10' }, '/v1/openapi.json', webFlags));
    try {
      const row = { processes: n, ...(await run(servers.map((s) => s.url), SECONDS)) };
      rows.push(row);
      process.stdout.write(`${n} web process(es): ${row.rps} req/s, p50 ${row.p50} ms, p99 ${row.p99} ms, ${row.bad} non-2xx/errors; CPU µs/request ${JSON.stringify(row.cpu)}\n`);
    } finally {
      for (const s of servers) await s.stop();
    }
  }
} finally {
  await pool.end();
  await db.stop();
}

const cell = (cpu: Record<string, number>) =>
  Object.entries(cpu).filter(([, us]) => us > 0).sort((a, b) => b[1] - a[1]).map(([label, us]) => `${label.replace(/ \(.*\)$/, '').replace(/^server$/, 'web (all)')} ${us}`).join(', ');
const pgOf = (r: Row) => r.cpu.PostgreSQL ?? 0;
const base = rows[0];

await writeSection('processes', `## Web processes side by side on one PostgreSQL (issue 21)

A mixed load, 4 reads of an order (GET /v1/pedidos-producao/{id}) for each stock movement (POST
/v1/estoque/movimentos with its Idempotency-Key), from ${ACCOUNTS} accounts, ${CONNECTIONS} connections in all, split
evenly among 1, 2 and 4 web processes as the Procfile runs them (DB_POOL_SIZE 10 each, so 10, 20 and
40 connections to PostgreSQL), ${SECONDS} s per run after 2 s of warm-up; PostgreSQL embedded on the same
machine. CPU µs per request by process: the web processes together, PostgreSQL, the load generator.

| web processes | req/s | p50 ms (slowest process) | p99 ms (slowest process) | non-2xx/errors | CPU µs per request |
| --- | ---: | ---: | ---: | ---: | --- |
${rows.map((r) => `| ${r.processes} | ${r.rps} | ${r.p50} | ${r.p99} | ${r.bad} | ${cell(r.cpu)} |`).join('\n')}

- PostgreSQL CPU per request: ${rows.map((r) => `${r.processes} process${r.processes > 1 ? 'es' : ''} ${pgOf(r)} µs`).join(', ')}; one PostgreSQL core
  carries about ${base ? Math.round(1e6 / Math.max(1, pgOf(base))) : '?'} requests/s of this mix at one process's figure.
- On this 2-core machine every process shares the same two cores with PostgreSQL and the load
  generator: adding processes adds no CPU, so the rows show what more processes cost (more
  connections, more admission batches of fewer requests each), not what they would add on more
  machines. docs/scaling.md turns these figures into a sizing rule.`);
