// A real client generated from the OpenAPI document: openapi-typescript types (test/generated,
// written by `npm run openapi:check` from docs/openapi.json) and openapi-fetch, type-checked by tsc
// and run against the server.
import createClient from 'openapi-fetch';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { sql } from '../shared/db/pool.ts';
import { criarCanal } from '../shared/db/canais.ts';
import type { paths } from './generated/api.d.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { createAccount } from './helpers/fixtures.ts';

const test = suite('generated client');
let app: TestApp;
let client: ReturnType<typeof createClient<paths>>;
let variacaoId: string;

test.before(async () => {
  app = await startTestApp();
  const account = await createAccount(app.db.pool, { plano: 'farm' });
  client = createClient<paths>({ baseUrl: app.baseUrl, headers: { Authorization: `Bearer ${account.token}` } });
  for (let i = 0; i < 3; i++) await criarCanal(app.db.pool, account.contaId, { nome: `Canal ${i}`, tipo: 'outro' });
  const Id = z.object({ id: z.string() });
  const produto = await app.db.pool.one(sql.type(Id)`
    INSERT INTO produtos (conta_id, sku, nome) VALUES (${account.contaId}, 'CLI-1', 'Peça do cliente') RETURNING id`);
  variacaoId = (await app.db.pool.one(sql.type(Id)`
    INSERT INTO variacoes (conta_id, produto_id, sku, nome) VALUES (${account.contaId}, ${produto.id}, 'CLI-1-U', 'Única') RETURNING id`)).id;
});
test.after(async () => app.stop());

test('saude and conta', async () => {
  const saude = await client.GET('/saude');
  assert.is(saude.response.status, 200);
  assert.is(saude.data?.situacao, 'ok');
  const conta = await client.GET('/conta');
  assert.is(conta.data?.plano, 'farm');
  assert.ok((conta.data?.limites.chamadas_por_mes ?? 0) > 0);
});

test('a list followed through its cursor', async () => {
  const first = await client.GET('/canais', { params: { query: { limite: 2 } } });
  assert.is(first.data?.dados.length, 2);
  const cursor = first.data?.proximo_cursor;
  assert.type(cursor, 'string');
  const second = await client.GET('/canais', { params: { query: { limite: 2, cursor: cursor ?? undefined } } });
  assert.is(second.data?.dados.length, 1);
  assert.is(second.data?.proximo_cursor, null);
});

test('a stock movement, and its error typed as a problem', async () => {
  const entrada = await client.POST('/estoque/movimentos', {
    params: { header: { 'Idempotency-Key': 'cliente-gerado-1' } },
    body: { tipo: 'entrada', variacao_id: variacaoId, quantidade: 5, motivo: 'devolucao' },
  });
  assert.is(entrada.response.status, 201);
  assert.is(entrada.data?.saldo_depois, 5);
  const saida = await client.POST('/estoque/movimentos', {
    params: { header: { 'Idempotency-Key': 'cliente-gerado-2' } },
    body: { tipo: 'saida', variacao_id: variacaoId, quantidade: 6, motivo: 'venda_loja' },
  });
  assert.is(saida.response.status, 422);
  assert.is(saida.error?.codigo, 'saldo_insuficiente');
});

test.run();
