// HTTP at its edges (issue 17): HEAD wherever GET is served, with the GET's status, headers and
// price and no body; and requests Node cannot parse answered as problem+json with a requisicao_id
// that the log carries too, not with Node's bare text.
import net from 'node:net';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { routes } from '../api/routes/index.ts';
import { capturedLog } from './helpers/log-lines.ts';
import { sql } from '#shared/db/pool.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { criarProdutoCompleto, definirSaldo, semLimites } from './helpers/catalogo.ts';
import { novaCotacao, novoPedido } from './helpers/cotacoes.ts';
import { createAccount, type TestAccount } from './helpers/fixtures.ts';
import { request } from './helpers/http.ts';
import { lerUso, settled } from './helpers/uso.ts';

const test = suite('HTTP edges: HEAD and malformed requests');
let app: TestApp;
let conta: TestAccount;
const ids: Record<string, string> = {};
const { log, lines: logLines } = capturedLog();

test.before(async () => {
  app = await startTestApp({ log });
  await semLimites(app.db.pool);
  conta = await createAccount(app.db.pool);
  const produto = await criarProdutoCompleto(app.db.pool, conta.contaId);
  ids['/produtos/{id}'] = produto.produtoId;
  ids['/cotacoes/{id}'] = await novaCotacao(app.db.pool, conta.contaId);
  ids['/pedidos-producao/{id}'] = await novoPedido(app.db.pool, conta.contaId);
  await definirSaldo(app.db.pool, conta.contaId, produto.variacoes[0]?.id ?? '', 5);
  ids['/estoque/movimentos/{id}'] = String(await app.db.pool.oneFirst(sql.unsafe`SELECT id FROM estoque_movimentos WHERE conta_id = ${conta.contaId} LIMIT 1`));
  // The quotation's event, as the relay leaves it (the event log shows relayed events only).
  ids['/eventos/{id}'] = String(await app.db.pool.oneFirst(sql.unsafe`
    UPDATE outbox SET relayed_at = now() WHERE conta_id = ${conta.contaId} AND tipo = 'cotacao.criada' RETURNING id`));
  ids['/eventos/{id}/entregas'] = ids['/eventos/{id}'];
});
test.after(async () => app.stop());

const path = (template: string) => template.replace('{id}', ids[template] ?? '');
const call = (p: string, method = 'GET', headers: Record<string, string> = {}) => request(`${app.baseUrl}${p}`, { method, token: conta.token, headers });

test('HEAD answers on every GET route with the GET\'s status and headers, and no body', async () => {
  const gets = routes.filter((r) => r.method === 'GET');
  assert.ok(gets.length >= 10);
  for (const route of gets) {
    const get = await call(path(route.path));
    // Compared on a real answer: every route's record exists.
    assert.is(get.status, 200, `${route.operationId}: ${get.text}`);
    if (route.conditional) assert.ok(get.headers.get('etag'), `${route.operationId}: an ETag`);
    const head = await call(path(route.path), 'HEAD');
    assert.is(head.status, get.status, route.operationId);
    assert.is(head.text, '', `${route.operationId}: no body`);
    assert.is(head.headers.get('content-length'), get.headers.get('content-length'), `${route.operationId}: Content-Length of the GET`);
    assert.is(head.headers.get('content-type'), get.headers.get('content-type'), route.operationId);
    assert.is(head.headers.get('etag'), get.headers.get('etag'), `${route.operationId}: ETag`);
    assert.ok(head.headers.get('ratelimit'), `${route.operationId}: RateLimit`);
    assert.ok(head.headers.get('ratelimit-policy'), `${route.operationId}: RateLimit-Policy`);
  }
});

test('HEAD costs what the GET costs, and a conditional HEAD whose ETag matches is a 304 at the 304 price', async () => {
  const produto = path('/produtos/{id}');
  await settled(app);
  const before = await lerUso(app.db.pool, conta.contaId, conta.chaveId);
  const head = await call('/canais?limite=50', 'HEAD');
  assert.is(head.status, 200);
  await settled(app);
  const after = await lerUso(app.db.pool, conta.contaId, conta.chaveId);
  assert.is(after.mes - before.mes, 3, 'a list of 26-100 costs 3 units, HEAD or GET');
  const etag = (await call(produto, 'HEAD')).headers.get('etag') ?? '';
  await settled(app);
  const beforeConditional = await lerUso(app.db.pool, conta.contaId, conta.chaveId);
  const conditional = await call(produto, 'HEAD', { 'if-none-match': etag });
  assert.is(conditional.status, 304);
  await settled(app);
  assert.is((await lerUso(app.db.pool, conta.contaId, conta.chaveId)).mes, beforeConditional.mes, 'nothing in the month');
  const logged = await app.db.pool.oneFirst(sql.unsafe`SELECT count(*)::int FROM request_log WHERE method = 'HEAD' AND route = 'getProduto'`);
  assert.ok(Number(logged) >= 2, 'HEAD requests are in the request log');
});

/** Bytes to the server over a bare socket; its whole answer. */
function rawExchange(bytes: string): Promise<string> {
  const url = new URL(app.baseUrl);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(url.port), url.hostname, () => socket.write(bytes));
    let received = '';
    socket.on('data', (d: Buffer) => (received += d.toString('utf8')));
    socket.on('end', () => resolve(received));
    socket.on('error', (error) => (received ? resolve(received) : reject(error)));
    setTimeout(() => socket.destroy(), 5_000).unref();
  });
}

function parseAnswer(text: string) {
  const [head = '', body = ''] = text.split('\r\n\r\n');
  const [statusLine = '', ...lines] = head.split('\r\n');
  const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
  return { status: Number(statusLine.split(' ')[1]), headers, body: JSON.parse(body) as Record<string, unknown> };
}

test('a request Node cannot parse is a problem+json 400 (431 for oversized headers) with a requisicao_id the log carries', async () => {
  const cases: [string, number][] = [
    ['GET /v1/saude HTTP/1.1\r\nHost: x\r\nUm cabeçalho sem dois pontos\r\n\r\n', 400],
    ['NÃO É HTTP\r\n\r\n', 400],
    [`GET /v1/saude HTTP/1.1\r\nHost: x\r\nX-Grande: ${'a'.repeat(20_000)}\r\n\r\n`, 431],
  ];
  for (const [bytes, status] of cases) {
    const answer = parseAnswer(await rawExchange(bytes));
    assert.is(answer.status, status);
    assert.is(answer.headers['content-type'], 'application/problem+json; charset=utf-8');
    assert.is(answer.body.status, status);
    assert.is(answer.body.codigo, 'dados_invalidos');
    assert.type(answer.body.detail, 'string');
    assert.is(answer.body.requisicao_id, answer.headers['x-request-id']);
    assert.ok(logLines.some((l) => l.requisicao_id === answer.body.requisicao_id && l.msg === 'malformed request'), 'logged under its id');
  }
});

test.run();
