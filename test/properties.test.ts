// Property-based tests of every route (issue 17), generated from the route table's schemas
// (test/helpers/arbitraries.ts): valid requests and hostile mutations of their path, query,
// headers and body. For each:
//   - no 5xx;
//   - every 4xx is problem+json with codigo, detail and the requisicao_id of X-Request-Id;
//   - a refused request changes no row of the account's data (a business refusal keeps its
//     Idempotency-Key, as the contract says), and the month counter moves by exactly the price the
//     request log shows for it, nothing more (docs/design.md, "The paths of a request": limits
//     come before validation, so an admitted request that fails validation is charged; a 401 or a
//     429 is charged nothing).
// Seeded and reproducible: a failure prints its seed, path and shrunk request; FUZZ_SEED and
// FUZZ_PATH replay it, FUZZ_RUNS sets the runs per route: 10 in npm test, 30 in CI (.ci/run runs
// npm run fuzz with FUZZ_RUNS=30), 1,000 in npm run fuzz (docs/decisions/0045-a-fast-test-loop.md).
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { routes } from '../api/routes/index.ts';
import { sql } from '#shared/db/pool.ts';
import { criarEndpoint } from '#shared/db/webhooks.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { mutated, validRequest, type GeneratedRequest } from './helpers/arbitraries.ts';
import { criarCanalDeTeste, criarProdutoCompleto, definirSaldo, semLimites } from './helpers/catalogo.ts';
import { novaCotacao, novoPedido } from './helpers/cotacoes.ts';
import { checkConformance } from './helpers/conformance.ts';
import { createAccount, type TestAccount } from './helpers/fixtures.ts';
import { emit } from './helpers/receiver.ts';
import { seededRuns } from './helpers/seeded.ts';

const test = suite('properties of every route');
const RUNS = seededRuns('FUZZ_RUNS', 10);
let app: TestApp;
let conta: TestAccount;
const knownIds: string[] = [];

test.before(async () => {
  app = await startTestApp();
  await semLimites(app.db.pool);
  conta = await createAccount(app.db.pool);
  const canal = await criarCanalDeTeste(app.db.pool, conta.contaId);
  const produto = await criarProdutoCompleto(app.db.pool, conta.contaId, { variacoes: [{ partes: ['corpo'] }], precos: [{ canalId: canal, faixas: [[1, 1000]] }] });
  const variacao = produto.variacoes[0];
  if (!variacao) throw new Error('no variation');
  await definirSaldo(app.db.pool, conta.contaId, variacao.id, 1_000_000);
  knownIds.push(canal, produto.produtoId, variacao.id, ...variacao.parteIds,
    await novaCotacao(app.db.pool, conta.contaId), await novoPedido(app.db.pool, conta.contaId));
  // The event log's records: an endpoint (never called: no worker runs here) and a relayed event.
  const endpoint = await criarEndpoint(app.db.pool, { contaId: conta.contaId, usuarioId: conta.usuarioId, url: 'https://erp.example.com/hooks', tipos: [], descricao: 'ERP' });
  const evento = await emit(app.db.pool, conta.contaId, 'cotacao.aprovada', { objeto: 'cotacao', id: randomUUID(), codigo: 'COT-000001' });
  await app.db.pool.query(sql.unsafe`UPDATE outbox SET relayed_at = now() WHERE conta_id = ${conta.contaId}`);
  knownIds.push(endpoint.id, evento);
});
test.after(async () => app.stop());

// The account's data: every table a request could change, but the counters of limits and logs.
const DOMAIN = ['canais', 'produtos', 'variacoes', 'partes', 'precos', 'materiais', 'cores', 'locais', 'estoque_saldos',
  'estoque_movimentos', 'insumos', 'insumo_movimentos', 'cotacoes', 'cotacao_itens', 'pedidos_producao', 'pedido_itens',
  'cotacao_fechamentos', 'outbox', 'webhook_endpoints', 'usuarios', 'contas'];

async function domainSnapshot(): Promise<{ domain: string; keys: number; month: number }> {
  const tables = sql.join(DOMAIN.map((t) => sql.fragment`(SELECT md5(coalesce(string_agg(x::text, '|' ORDER BY x::text), '')) FROM ${sql.identifier([t])} x)`), sql.fragment` || `);
  return app.db.pool.one(sql.type(z.object({ domain: z.string(), keys: z.number(), month: z.number() }))`
    SELECT ${tables} AS domain,
           (SELECT count(*)::int FROM idempotency_keys) AS keys,
           coalesce((SELECT calls FROM effective_monthly_usage WHERE conta_id = ${conta.contaId}), 0)::int AS month`);
}

async function send(req: GeneratedRequest): Promise<{ status: number; headers: Headers; text: string }> {
  const url = new URL(`${app.baseUrl}${req.path}`);
  for (const [k, v] of req.query) url.searchParams.append(k, v);
  const bytes = req.encoding === 'latin1' && req.body !== undefined ? Buffer.from(req.body, 'latin1') : req.body;
  const res = await fetch(url, { method: req.method, headers: req.headers, body: ['GET', 'HEAD'].includes(req.method) ? undefined : bytes });
  const text = await res.text();
  checkConformance(req.method, url.toString(), res.status, res.headers, text);
  return { status: res.status, headers: res.headers, text };
}

async function loggedCost(requestId: string | null): Promise<number> {
  await app.web.flush();
  return app.db.pool.oneFirst(sql.type(z.object({ cost: z.number() }))`
    SELECT coalesce((SELECT cost FROM request_log WHERE requisicao_id = ${requestId ?? randomUUID()}), -1) AS cost`);
}

async function holds(req: GeneratedRequest): Promise<void> {
  const before = await domainSnapshot();
  const res = await send(req);
  const what = `${req.method} ${req.path} (${req.mutation}) → ${res.status} ${res.text.slice(0, 300)}`;
  assert.ok(res.status < 500, `no 5xx: ${what}`);
  const requestId = res.headers.get('x-request-id');
  if (res.status >= 400 && req.method !== 'HEAD') {
    assert.is(res.headers.get('content-type'), 'application/problem+json; charset=utf-8', what);
    const problem = JSON.parse(res.text) as Record<string, unknown>;
    assert.type(problem.codigo, 'string', what);
    assert.ok(typeof problem.detail === 'string' && problem.detail.length > 0, what);
    assert.is(problem.requisicao_id, requestId, what);
  }
  const after = await domainSnapshot();
  if (res.status >= 400) {
    assert.is(after.domain, before.domain, `a refusal changed no row: ${what}`);
    // A business refusal is kept with its Idempotency-Key, to be replayed (contract §4.2); nothing else.
    const keptRefusal = 'idempotency-key' in req.headers ? 1 : 0;
    assert.ok(after.keys - before.keys <= keptRefusal, `a refusal keeps at most its own Idempotency-Key: ${what}`);
  }
  const cost = await loggedCost(requestId);
  const month = (await domainSnapshot()).month;
  assert.is(month - before.month, Math.max(0, cost), `the month moved by the price logged (${cost}): ${what}`);
  // Refused before it was admitted (its key, or a ceiling): charged nothing at all.
  if (res.status === 401 || res.status === 429) assert.is(month, before.month, `a refusal at admission costs nothing in the month: ${what}`);
}

for (const route of routes) {
  test(`${route.method} ${route.path}: no 5xx, every 4xx a problem, a refusal changes nothing beyond its price`, async () => {
    const valid = validRequest(route, knownIds, conta.token);
    await fc.assert(fc.asyncProperty(fc.oneof(valid, mutated(valid)), holds), RUNS.parameters);
  });
}

test.run();
