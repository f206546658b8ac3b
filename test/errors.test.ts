import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { capturedLog } from './helpers/log-lines.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { createAccount, type TestAccount } from './helpers/fixtures.ts';
import { request, type TestResponse } from './helpers/http.ts';
import { probeRoutes, SECRET_IN_ERROR, SECRET_IN_REQUEST } from './helpers/probe-routes.ts';

const test = suite('errors as application/problem+json');
let app: TestApp;
let account: TestAccount;
const { log, lines: logLines } = capturedLog();

test.before(async () => {
  app = await startTestApp({ extraRoutes: probeRoutes, log });
  account = await createAccount(app.db.pool);
});
test.after(async () => app.stop());

function assertProblem(res: TestResponse, status: number, codigo: string) {
  assert.is(res.status, status);
  assert.is(res.headers.get('content-type'), 'application/problem+json; charset=utf-8');
  const body = res.body;
  assert.type(body.type, 'string');
  assert.ok(URL.canParse(body.type), 'type is an absolute URI');
  assert.type(body.title, 'string');
  assert.is(body.status, status);
  assert.type(body.detail, 'string');
  assert.ok(body.detail.length > 0);
  assert.is(body.codigo, codigo);
  assert.is(body.requisicao_id, res.headers.get('x-request-id'));
  assert.match(body.requisicao_id, /^[0-9a-f-]{36}$/);
}

const call = (path: string, init: Parameters<typeof request>[1] = {}) => request(`${app.baseUrl}${path}`, { token: account.token, ...init });

test('an unknown route is 404 nao_encontrado', async () => {
  assertProblem(await call('/nao-existe'), 404, 'nao_encontrado');
  assertProblem(await request(`${app.baseUrl.replace('/v1', '')}/v2/saude`), 404, 'nao_encontrado');
});

test('a wrong method is 405 with Allow', async () => {
  const res = await call('/saude', { method: 'DELETE' });
  assertProblem(res, 405, 'metodo_nao_permitido');
  assert.is(res.headers.get('allow'), 'GET, HEAD');
});

test('an unknown query parameter is 400 dados_invalidos naming it', async () => {
  const res = await call('/saude?foo=1');
  assertProblem(res, 400, 'dados_invalidos');
  assert.equal(res.body.erros, [{ campo: 'foo', mensagem: 'parâmetro desconhecido' }]);
});

test('a repeated query parameter is 400', async () => {
  const res = await call('/teste/eco?limite=1&limite=2', { body: { nome: 'a', quantidade: 1 } });
  assertProblem(res, 400, 'dados_invalidos');
  assert.ok(res.body.erros.some((e: { campo: string }) => e.campo === 'limite'));
});

test('malformed JSON is 400 dados_invalidos', async () => {
  const res = await call('/teste/eco', { rawBody: '{"nome": "a",', headers: { 'content-type': 'application/json' } });
  assertProblem(res, 400, 'dados_invalidos');
});

test('invalid fields are all listed in erros', async () => {
  const res = await call('/teste/eco', { body: { nome: '', quantidade: 0, extra: true } });
  assertProblem(res, 400, 'dados_invalidos');
  const campos = res.body.erros.map((e: { campo: string }) => e.campo).sort();
  assert.equal(campos, ['extra', 'nome', 'quantidade']);
});

test('a body that is not application/json is 415 tipo_nao_suportado', async () => {
  const res = await call('/teste/eco', { rawBody: 'nome=a', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
  assertProblem(res, 415, 'tipo_nao_suportado');
  const missing = await call('/teste/eco', { rawBody: '{}' });
  assertProblem(missing, 415, 'tipo_nao_suportado');
});

test('a body over 64 KB is 413 corpo_grande_demais', async () => {
  const big = JSON.stringify({ nome: 'x'.repeat(64 * 1024) });
  const res = await call('/teste/eco', { rawBody: big, headers: { 'content-type': 'application/json' } });
  assertProblem(res, 413, 'corpo_grande_demais');
});

test('a valid body reaches the handler', async () => {
  const res = await call('/teste/eco', { body: { nome: 'ok', quantidade: 2 } });
  assert.is(res.status, 201);
  assert.equal(res.body, { nome: 'ok', quantidade: 2 });
});

test('an unhandled exception is a 500 that leaks nothing, logged under its requisicao_id', async () => {
  const res = await call('/teste/falha');
  assertProblem(res, 500, 'erro_interno');
  assert.not.match(res.text, SECRET_IN_ERROR);
  assert.not.match(res.text, 'boom');
  assert.not.match(res.text, 'at ');
  const line = logLines.find((l) => l.requisicao_id === res.body.requisicao_id && l.msg === 'unhandled error');
  assert.ok(line, 'the error is in the log under the requisicao_id');
  assert.match(JSON.stringify(line), SECRET_IN_ERROR);
});

test('a failing statement is a 500 whose log names its class, SQLSTATE and route, but no value or body it carried', async () => {
  const res = await call(`/teste/falha-sql?filtro=${SECRET_IN_REQUEST}-q`, { body: { segredo: `${SECRET_IN_REQUEST}-corpo` } });
  assertProblem(res, 500, 'erro_interno');
  const lines = logLines.filter((l) => l.requisicao_id === res.body.requisicao_id);
  const line = lines.find((l) => l.msg === 'unhandled error') as { err?: Record<string, unknown>; route?: string } | undefined;
  assert.ok(line, 'the error is in the log under the requisicao_id');
  assert.is(line?.route, 'probeFailingSql');
  assert.is(line?.err?.sqlstate, '42883');
  assert.is(typeof line?.err?.type, 'string');
  assert.not.match(JSON.stringify(lines), SECRET_IN_REQUEST, 'neither the parameter value nor the body is logged');
  assert.not.match(JSON.stringify(lines), 'SELECT funcao_que_nao_existe', 'nor the statement');
});

test('every request writes one JSON log line with its id, route, status, cost and duration', async () => {
  const res = await call('/saude');
  const line = logLines.find((l) => l.requisicao_id === res.headers.get('x-request-id') && l.msg === 'request');
  assert.ok(line);
  assert.is(line?.route, 'getSaude');
  assert.is(line?.status, 200);
  assert.is(line?.cost, 1);
  assert.type(line?.duration_ms, 'number');
  assert.is(line?.conta_id, account.contaId);
});

test.run();
