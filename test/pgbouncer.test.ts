// The web behind Debian's PgBouncer in transaction mode (issue 21, item 2): with
// DATABASE_CONNECTION_POOL_URL set, its statements go unnamed, its startup packet carries no setting
// PgBouncer refuses, and the timeouts it needs come from the role's defaults in the database. Every
// route answers through the pooler, and a short concurrent load too, with a server pool smaller than
// the web's own pool, so consecutive transactions of one client land on different server sessions.
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import pg from 'pg';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { routes } from '../api/routes/index.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { validRequest } from './helpers/arbitraries.ts';
import { criarCanalDeTeste, criarProdutoCompleto, definirSaldo, semLimites } from './helpers/catalogo.ts';
import { checkConformance } from './helpers/conformance.ts';
import { novaCotacao, novoPedido } from './helpers/cotacoes.ts';
import { createAccount, type TestAccount } from './helpers/fixtures.ts';
import { pgbouncerBinary, startPgBouncer, type PgBouncer } from './helpers/pgbouncer.ts';
import { cannotRun } from './helpers/skip.ts';

const test = suite('the web behind PgBouncer in transaction mode');
const binary = pgbouncerBinary();
let bouncer: PgBouncer;
let app: TestApp;
let conta: TestAccount;
let variacaoId = '';
let pedidoId = '';
const knownIds: string[] = [];

if (!binary) {
  cannotRun(test, 'behind PgBouncer', 'pgbouncer is not installed', 'apt-get install pgbouncer');
} else {
  test.before(async () => {
    bouncer = await startPgBouncer(binary, process.env.TEST_ADMIN_URL ?? '', { serverPoolSize: 3 });
    app = await startTestApp({ pooledUrl: (database) => bouncer.urlFor(database), env: { DB_POOL_SIZE: '8' } });
    await semLimites(app.db.pool);
    conta = await createAccount(app.db.pool);
    const canal = await criarCanalDeTeste(app.db.pool, conta.contaId);
    const produto = await criarProdutoCompleto(app.db.pool, conta.contaId, { variacoes: [{ partes: ['corpo'] }], precos: [{ canalId: canal, faixas: [[1, 1000]] }] });
    const variacao = produto.variacoes[0];
    if (!variacao) throw new Error('no variation');
    variacaoId = variacao.id;
    await definirSaldo(app.db.pool, conta.contaId, variacaoId, 1_000_000);
    pedidoId = await novoPedido(app.db.pool, conta.contaId);
    knownIds.push(canal, produto.produtoId, variacaoId, ...variacao.parteIds, await novaCotacao(app.db.pool, conta.contaId), pedidoId);
  });
  test.after(async () => {
    await app?.stop();
    await bouncer?.stop();
  });

  test('a pooled session gets the web\'s timeouts from the role\'s defaults, not from its startup packet', async () => {
    const client = new pg.Client({ connectionString: bouncer.urlFor(app.db.name) });
    await client.connect();
    try {
      const { rows } = await client.query<{ s: string; i: string }>(
        `SELECT current_setting('statement_timeout') AS s, current_setting('idle_in_transaction_session_timeout') AS i`);
      assert.equal(rows[0], { s: '15s', i: '1min' });
    } finally {
      await client.end();
    }
    const res = await fetch(`${app.baseUrl}/saude`, { headers: { authorization: `Bearer ${conta.token}` } });
    assert.is(res.status, 200);
    assert.not.match(await bouncer.log(), /unsupported startup parameter/, 'PgBouncer refused nothing the web sent');
  });

  test('every route answers through the pooler: generated valid requests, no 5xx, each as the OpenAPI document says', async () => {
    const failures: string[] = [];
    for (const route of routes) {
      for (const req of fc.sample(validRequest(route, knownIds, conta.token), { numRuns: 3, seed: 2021 })) {
        const url = new URL(`${app.baseUrl}${req.path}`);
        for (const [k, v] of req.query) url.searchParams.append(k, v);
        const res = await fetch(url, { method: req.method, headers: req.headers, body: ['GET', 'HEAD'].includes(req.method) ? undefined : req.body });
        const text = await res.text();
        checkConformance(req.method, url.toString(), res.status, res.headers, text);
        if (res.status >= 500) failures.push(`${req.method} ${url.pathname}${url.search} → ${res.status} ${text.slice(0, 200)}`);
      }
    }
    assert.equal(failures, []);
  });

  test('a short concurrent load of reads, conditional reads and writes through the pooler: every answer as expected', async () => {
    const get = (path: string, headers: Record<string, string> = {}) =>
      fetch(`${app.baseUrl}${path}`, { headers: { authorization: `Bearer ${conta.token}`, ...headers } });
    const etag = (await get(`/pedidos-producao/${pedidoId}`)).headers.get('etag') ?? '';
    const kinds = [
      async () => [200, (await get(`/pedidos-producao/${pedidoId}`)).status],
      async () => [304, (await get(`/pedidos-producao/${pedidoId}`, { 'if-none-match': etag })).status],
      async () => [200, (await get('/produtos?limite=10')).status],
      async () => [201, (await fetch(`${app.baseUrl}/estoque/movimentos`, {
        method: 'POST',
        headers: { authorization: `Bearer ${conta.token}`, 'content-type': 'application/json', 'idempotency-key': randomUUID() },
        body: JSON.stringify({ tipo: 'saida', variacao_id: variacaoId, quantidade: 1, motivo: 'venda_loja' }),
      })).status],
    ] as const;
    const unexpected: string[] = [];
    let next = 0;
    const TOTAL = 800;
    await Promise.all(Array.from({ length: 40 }, async () => {
      while (next < TOTAL) {
        const i = next++;
        const [expected, got] = await kinds[i % kinds.length]!();
        if (got !== expected) unexpected.push(`request ${i}: ${got} (expected ${expected})`);
      }
    }));
    assert.equal(unexpected, []);
  });
}

test.run();
