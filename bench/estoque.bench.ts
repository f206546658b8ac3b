// Catalog and stock (issue 4): POST /v1/estoque/movimentos through the whole pipeline (admission,
// Idempotency-Key, body limits, validation, one transaction with the movement, its balance, its
// event and the key's completion) with a distinct key per request, spread over many accounts and
// variations; against a bare restify route doing one transaction with one UPDATE and one INSERT on
// the same database, in the same run. Then GET /v1/produtos?limite=100 (a full page of products
// with variations, parts and price tiers). Figures are reported, never asserted.
import { randomUUID } from 'node:crypto';
import { movimentar } from '../shared/db/estoque.ts';
import { createDatabasePool, sql } from '../shared/db/pool.ts';
import { criarCanalDeTeste, criarProdutoCompleto } from '../test/helpers/catalogo.ts';
import { createAccount } from '../test/helpers/fixtures.ts';
import { benchDatabase, load, spawnServer, writeSection, type LoadResult } from './lib.ts';

const ACCOUNTS = 50;
const VARIATIONS_PER_ACCOUNT = 20;
const CATALOG_PRODUCTS = 120;
const SECONDS = Number(process.env.BENCH_SECONDS ?? 15);

const db = await benchDatabase('estoque');
const pool = await createDatabasePool(db.url, { size: 4, statementTimeoutMs: 120_000, applicationName: 'bench' });
await pool.query(sql.unsafe`
  INSERT INTO planos (id, nome, chaves_ativas, webhook_endpoints, leituras_por_minuto, escritas_por_minuto, chamadas_por_mes,
                      rajada, rajada_recarga_por_segundo, simultaneas_por_chave, simultaneas_por_conta, entregas_webhook_por_hora)
  VALUES ('bench_estoque', 'Bench estoque', 10, 10, 100000000, 100000000, 2000000000, 1000000, 1000000, 1000, 1000, 1000)
  ON CONFLICT (id) DO NOTHING`);

// Accounts with variations holding a large balance, so exits never run out during the run.
type Alvo = { token: string; variacoes: string[] };
const alvos: Alvo[] = [];
for (let i = 0; i < ACCOUNTS; i++) {
  const account = await createAccount(pool, { plano: 'bench_estoque', escopos: ['estoque:escrever', 'catalogo:ler'] });
  const produto = await criarProdutoCompleto(pool, account.contaId, { variacoes: Array.from({ length: VARIATIONS_PER_ACCOUNT }, () => ({})) });
  for (const v of produto.variacoes) {
    await pool.transaction((tx) => movimentar(tx, account.contaId, { tipo: 'ajuste', variacao_id: v.id, contado: 10_000_000, motivo: 'correcao' }));
  }
  alvos.push({ token: account.token, variacoes: produto.variacoes.map((v) => v.id) });
}

// One catalog account: products with 3 variations, 2 parts each, tiers on 3 channels.
const catalogo = await createAccount(pool, { plano: 'bench_estoque', escopos: ['catalogo:ler'] });
const canais = [];
for (let i = 0; i < 3; i++) canais.push(await criarCanalDeTeste(pool, catalogo.contaId));
for (let i = 0; i < CATALOG_PRODUCTS; i++) {
  await criarProdutoCompleto(pool, catalogo.contaId, {
    variacoes: [{ partes: ['Base', 'Tampa'] }, { partes: ['Base', 'Tampa'] }, { partes: ['Base', 'Tampa'] }],
    precos: canais.map((canalId) => ({ canalId, faixas: [[1, 3900], [10, 3500], [50, 2900]] as [number, number][] })),
  });
}
await pool.query(sql.unsafe`ANALYZE`);

const api = await spawnServer('api/main.ts', { DATABASE_URL: db.url, DB_POOL_SIZE: '10' }, '/v1/openapi.json');
const bare = await spawnServer('bench/bare-server.ts', { DATABASE_URL: db.url }, '/hello');

let n = 0;
const movimento = (req: Record<string, any>) => {
  const alvo = alvos[n % ACCOUNTS] as Alvo;
  const variacao = alvo.variacoes[Math.floor(n / ACCOUNTS) % VARIATIONS_PER_ACCOUNT];
  const tipo = n++ % 2 === 0 ? 'saida' : 'entrada';
  return {
    ...req,
    method: 'POST',
    headers: { authorization: `Bearer ${alvo.token}`, 'content-type': 'application/json', 'idempotency-key': randomUUID() },
    body: JSON.stringify({ tipo, variacao_id: variacao, quantidade: 1, motivo: tipo === 'saida' ? 'venda_loja' : 'devolucao' }),
  };
};
const comCatalogo = (req: Record<string, any>) => ({ ...req, headers: { authorization: `Bearer ${catalogo.token}` } });

try {
  const results: [string, LoadResult][] = [];
  const run = async (name: string, options: Parameters<typeof load>[0]) => {
    const r = await load(options);
    process.stdout.write(`${name}: ${r.rps} req/s, p50 ${r.p50} ms, p99 ${r.p99} ms (${r.non2xx} non-2xx, ${r.errors} errors)\n`);
    results.push([name, r]);
    return r;
  };
  const movimentosAntes = Number(await pool.oneFirst(sql.unsafe`SELECT count(*)::int FROM estoque_movimentos`));
  const bareTx = await run('bare restify, BEGIN; UPDATE; INSERT; COMMIT, 50 connections',
    { url: `${bare.url}/bare-tx`, method: 'POST', connections: 50, seconds: SECONDS });
  const mov = await run('POST /v1/estoque/movimentos, distinct keys, 50 connections',
    { url: `${api.url}/v1/estoque/movimentos`, method: 'POST', connections: 50, seconds: SECONDS, setupRequest: movimento });
  const produtos = await run('GET /v1/produtos?limite=100 (100 products × 3 variations, 2 parts, 3 channels × 3 tiers), 50 connections',
    { url: `${api.url}/v1/produtos?limite=100`, connections: 50, seconds: SECONDS, setupRequest: comCatalogo });
  const produtos1 = await run('GET /v1/produtos?limite=100, 1 connection',
    { url: `${api.url}/v1/produtos?limite=100`, connections: 1, seconds: SECONDS, setupRequest: comCatalogo });
  const criados = Number(await pool.oneFirst(sql.unsafe`SELECT count(*)::int FROM estoque_movimentos`)) - movimentosAntes;
  const negativos = Number(await pool.oneFirst(sql.unsafe`SELECT count(*)::int FROM estoque_saldos WHERE saldo < 0`));

  const ratio = mov.rps / bareTx.rps;
  const table = results.map(([name, r]) => `| ${name} | ${r.rps} | ${r.p50} | ${r.p99} | ${r.non2xx + r.errors} |`).join('\n');
  await writeSection('estoque', `## Stock movements and the catalog (issue 4)

${ACCOUNTS} accounts with one key each and ${VARIATIONS_PER_ACCOUNT} variations each, requests spread over
accounts and variations (alternating exits and entries of 1, a new Idempotency-Key each); plans raised
so nothing is refused; autocannon in this process, the API (DB_POOL_SIZE 10) and the baseline
(pg.Pool of 10) each in their own process, PostgreSQL ${process.env.DATABASE_URL ? 'from DATABASE_URL' : 'embedded (default settings, fsync on)'};
${SECONDS} s per run after 2 s of warm-up. The catalog page is one query (json_agg in lateral subqueries).

| run | req/s | p50 ms | p99 ms | non-2xx/errors |
| --- | ---: | ---: | ---: | ---: |
${table}

- Movements per second: **${mov.rps}** (p50 ${mov.p50} ms, p99 ${mov.p99} ms); ${criados} movements
  created over both autocannon passes, no balance below zero (${negativos}).
- Throughput ratio, POST /estoque/movimentos / bare transaction with one UPDATE and one INSERT:
  **${ratio.toFixed(2)}** (target ≥ 0.5).
- GET /v1/produtos?limite=100: **${produtos.rps} req/s**, p99 **${produtos.p99} ms** at 50 connections;
  p50 ${produtos1.p50} ms alone.`);
} finally {
  await api.stop();
  await bare.stop();
  await pool.end();
  await db.stop();
}
