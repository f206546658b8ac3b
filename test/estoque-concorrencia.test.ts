// POST /estoque/movimentos under concurrency and at the edges of the body: the balance never goes
// negative, one Idempotency-Key makes one movement, and bodies too slow, too large or not JSON
// are refused.
import { randomUUID } from 'node:crypto';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { sql } from '#shared/db/pool.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { criarProdutoCompleto, definirSaldo, saldoDe, semLimites } from './helpers/catalogo.ts';
import { createAccount, type TestAccount } from './helpers/fixtures.ts';
import { request } from './helpers/http.ts';
import { rawRequest } from './helpers/raw-http.ts';

const test = suite('stock movements: concurrency and body limits');
let app: TestApp;
let conta: TestAccount;

const post = (body: unknown, key: string = randomUUID()) =>
  request(`${app.baseUrl}/estoque/movimentos`, { token: conta.token, body, headers: { 'idempotency-key': key } });
const novaVariacao = async () => (await criarProdutoCompleto(app.db.pool, conta.contaId)).variacoes[0]?.id ?? '';

test.before(async () => {
  // The point here is the balance, not the circuit breaker: on a busy machine 50 requests queued
  // behind one row lock may wait for a connection longer than the default 2 s budget.
  app = await startTestApp({ env: { DB_POOL_SIZE: '20', DB_POOL_WAIT_MS: '20000' } });
  await semLimites(app.db.pool);
  conta = await createAccount(app.db.pool, { plano: 'farm' });
  // Open the pool's connections before the bursts, so they measure locking, not connecting.
  await Promise.all(Array.from({ length: 20 }, () => request(`${app.baseUrl}/saude`, { token: conta.token })));
});
test.after(async () => app.stop());

test('50 concurrent exits of 1 on a balance of 10: exactly 10 created, 40 refused with 422, final balance 0', async () => {
  const variacao = await novaVariacao();
  await definirSaldo(app.db.pool, conta.contaId, variacao, 10);
  const results = await Promise.all(Array.from({ length: 50 }, () =>
    post({ tipo: 'saida', variacao_id: variacao, quantidade: 1, motivo: 'venda_marketplace' })));
  const created = results.filter((r) => r.status === 201);
  const refused = results.filter((r) => r.status === 422);
  assert.is(created.length, 10, results.map((r) => r.status).join(','));
  assert.is(refused.length, 40);
  for (const r of refused) assert.is(r.body.motivo, 'saldo_insuficiente');
  assert.is(await saldoDe(app.db.pool, conta.contaId, variacao), 0);
  // Each exit saw the balance the previous one left: 10→9, 9→8, …, 1→0.
  assert.equal(created.map((r) => r.body.saldo_depois).sort((a, b) => a - b), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  const saidas = await app.db.pool.oneFirst(sql.unsafe`
    SELECT count(*)::int FROM estoque_movimentos WHERE variacao_id = ${variacao} AND tipo = 'saida'`);
  assert.is(saidas, 10);
});

test('concurrent first entries of a variation with no balance row yet all count', async () => {
  const variacao = await novaVariacao();
  const results = await Promise.all(Array.from({ length: 20 }, () =>
    post({ tipo: 'entrada', variacao_id: variacao, quantidade: 1, motivo: 'devolucao' })));
  assert.ok(results.every((r) => r.status === 201), results.map((r) => r.status).join(','));
  assert.is(await saldoDe(app.db.pool, conta.contaId, variacao), 20);
  const rows = await app.db.pool.oneFirst(sql.unsafe`SELECT count(*)::int FROM estoque_saldos WHERE variacao_id = ${variacao}`);
  assert.is(rows, 1, 'one balance row');
});

test('20 concurrent requests with one Idempotency-Key: exactly one movement; the others 409 or a replay of it', async () => {
  const variacao = await novaVariacao();
  const body = { tipo: 'entrada', variacao_id: variacao, quantidade: 3, motivo: 'outro' };
  const results = await Promise.all(Array.from({ length: 20 }, () => post(body, 'uma-chave-so')));
  const created = results.filter((r) => r.status === 201);
  assert.ok(created.length >= 1);
  assert.ok(results.every((r) => r.status === 201 || r.status === 409), results.map((r) => r.status).join(','));
  for (const r of results.filter((r) => r.status === 409)) assert.is(r.body.codigo, 'idempotencia_em_andamento');
  const ids = new Set(created.map((r) => r.body.id));
  assert.is(ids.size, 1, 'every 201 is the same movement');
  assert.is(created.filter((r) => r.headers.get('idempotent-replayed') !== 'true').length, 1, 'one original, the rest replays');
  const count = await app.db.pool.oneFirst(sql.unsafe`SELECT count(*)::int FROM estoque_movimentos WHERE variacao_id = ${variacao}`);
  assert.is(count, 1);
  assert.is(await saldoDe(app.db.pool, conta.contaId, variacao), 3);
});

test('a client that sends half a body and stalls gets 408 tempo_esgotado about 5 s after the request started', async () => {
  const variacao = await novaVariacao();
  const json = JSON.stringify({ tipo: 'entrada', variacao_id: variacao, quantidade: 1, motivo: 'outro' });
  const res = await rawRequest(app.baseUrl, {
    method: 'POST',
    path: '/estoque/movimentos',
    headers: {
      authorization: `Bearer ${conta.token}`,
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(json)),
      'idempotency-key': randomUUID(),
    },
  }, [json.slice(0, Math.floor(json.length / 2))]);
  assert.is(res.status, 408);
  assert.is(JSON.parse(res.body).codigo, 'tempo_esgotado');
  assert.ok(res.elapsedMs >= 4800 && res.elapsedMs < 7000, `answered after ${Math.round(res.elapsedMs)} ms`);
  assert.is(await saldoDe(app.db.pool, conta.contaId, variacao), 0);
});

test('a body of 64 KB + 1 is 413 corpo_grande_demais; 64 KB exactly is read (and judged on its fields)', async () => {
  const variacao = await novaVariacao();
  const sized = (bytes: number) => {
    const base = { tipo: 'entrada', variacao_id: variacao, quantidade: 1, motivo: 'outro', observacao: '' };
    const fill = bytes - Buffer.byteLength(JSON.stringify(base));
    return JSON.stringify({ ...base, observacao: 'x'.repeat(fill) });
  };
  const send = (text: string) => request(`${app.baseUrl}/estoque/movimentos`, {
    token: conta.token, rawBody: text, headers: { 'content-type': 'application/json', 'idempotency-key': randomUUID() },
  });
  assert.is(Buffer.byteLength(sized(64 * 1024 + 1)), 64 * 1024 + 1);
  const tooBig = await send(sized(64 * 1024 + 1));
  assert.is(tooBig.status, 413);
  assert.is(tooBig.body.codigo, 'corpo_grande_demais');
  const limit = await send(sized(64 * 1024));
  assert.is(limit.status, 400, 'read, then refused for observacao over 200 characters');
  assert.is(limit.body.erros[0].campo, 'observacao');
});

test('a streamed body over 64 KB is refused with 413 without waiting for its end', async () => {
  const head = { method: 'POST', path: '/estoque/movimentos', headers: {
    authorization: `Bearer ${conta.token}`, 'content-type': 'application/json', 'transfer-encoding': 'chunked', 'idempotency-key': randomUUID(),
  } };
  const chunk = `{"observacao":"${'x'.repeat(70 * 1024)}`;
  // The chunked body never ends: the answer can only come from the size limit.
  const res = await rawRequest(app.baseUrl, head, [`${Buffer.byteLength(chunk).toString(16)}\r\n${chunk}\r\n`]);
  assert.is(res.status, 413);
  assert.ok(res.elapsedMs < 4000, `refused at once (${Math.round(res.elapsedMs)} ms), not by the 5 s deadline`);
});

test('a body that is not application/json is 415 tipo_nao_suportado', async () => {
  const variacao = await novaVariacao();
  for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/json; charset=latin1']) {
    const res = await request(`${app.baseUrl}/estoque/movimentos`, {
      token: conta.token,
      rawBody: JSON.stringify({ tipo: 'entrada', variacao_id: variacao, quantidade: 1, motivo: 'outro' }),
      headers: { 'content-type': type, 'idempotency-key': randomUUID() },
    });
    assert.is(res.status, 415, type);
    assert.is(res.body.codigo, 'tipo_nao_suportado');
  }
  assert.is(await saldoDe(app.db.pool, conta.contaId, variacao), 0);
  const ok = await request(`${app.baseUrl}/estoque/movimentos`, {
    token: conta.token,
    rawBody: JSON.stringify({ tipo: 'entrada', variacao_id: variacao, quantidade: 1, motivo: 'outro' }),
    headers: { 'content-type': 'application/json; charset=utf-8', 'idempotency-key': randomUUID() },
  });
  assert.is(ok.status, 201);
});

test('after all of it, every balance is the sum of its movements and movements chain in criado_em order', async () => {
  const Count = z.object({ n: z.number() });
  const unbalanced = await app.db.pool.oneFirst(sql.type(Count)`
    SELECT count(*)::int AS n FROM estoque_saldos s
     WHERE s.conta_id = ${conta.contaId}
       AND s.saldo <> (SELECT coalesce(sum(CASE WHEN m.tipo = 'saida' THEN -m.quantidade ELSE m.quantidade END), 0)
                         FROM estoque_movimentos m
                        WHERE m.conta_id = s.conta_id AND m.variacao_id = s.variacao_id AND m.local_id = s.local_id
                          AND m.parte_id IS NOT DISTINCT FROM s.parte_id)`);
  assert.is(unbalanced, 0);
  const broken = await app.db.pool.oneFirst(sql.type(Count)`
    SELECT count(*)::int AS n FROM (
      SELECT saldo_antes, lag(saldo_depois) OVER (PARTITION BY variacao_id, local_id, parte_id ORDER BY criado_em, id) AS anterior
        FROM estoque_movimentos WHERE conta_id = ${conta.contaId}) x
     WHERE anterior IS NOT NULL AND anterior <> saldo_antes`);
  assert.is(broken, 0, 'each movement starts from the balance the previous one left');
});

test.run();
