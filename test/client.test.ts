// A real client generated from the OpenAPI document: openapi-typescript types (test/generated,
// written by `npm run typecheck` from docs/openapi.json) and openapi-fetch, type-checked by tsc
// and run against the server.
import { randomUUID } from 'node:crypto';
import createClient from 'openapi-fetch';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { sql } from '../shared/db/pool.ts';
import { criarCanal } from '../shared/db/canais.ts';
import type { paths } from './generated/api.d.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { semLimites } from './helpers/catalogo.ts';
import { createAccount } from './helpers/fixtures.ts';
import { addEndpoint, emit, eventually, startReceiver } from './helpers/receiver.ts';

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

test('the event log, the attempts of an event and its redelivery, with a real worker and receiver', async () => {
  const receiver = await startReceiver();
  const comWorker = await startTestApp({ worker: true });
  try {
    const conta = await createAccount(comWorker.db.pool);
    const eventos = createClient<paths>({ baseUrl: comWorker.baseUrl, headers: { Authorization: `Bearer ${conta.token}` } });
    const endpoint = await addEndpoint(comWorker.db.pool, receiver, { contaId: conta.contaId, usuarioId: conta.usuarioId, path: '/cliente' });
    const id = await emit(comWorker.db.pool, conta.contaId, 'cotacao.aprovada', { objeto: 'cotacao', id: randomUUID(), codigo: 'COT-000001' });
    const [entregue] = await receiver.waitFor(1, (r) => r.id === id);
    const lista = await eventos.GET('/eventos', { params: { query: { tipo: 'cotacao.aprovada', limite: 10 } } });
    assert.equal(lista.data?.dados.map((e) => e.id), [id]);
    const evento = await eventos.GET('/eventos/{id}', { params: { path: { id } } });
    assert.equal(evento.data, entregue?.json);
    const tentativas = await eventually(
      () => eventos.GET('/eventos/{id}/entregas', { params: { path: { id } } }),
      // Listed when the request goes out; complete (and the delivery free to be replayed) once its outcome is recorded.
      (r) => r.data?.dados.length === 1 && r.data.dados[0]?.status_http !== null);
    assert.equal(tentativas.data?.dados.map((t) => [t.endpoint_id, t.tentativa, t.status_http]), [[endpoint.id, 1, 200]]);
    const reenvio = await eventos.POST('/eventos/{id}/reenviar', {
      params: { path: { id }, header: { 'Idempotency-Key': 'cliente-reenvio-1' } },
      body: { endpoint_id: endpoint.id },
    });
    assert.is(reenvio.response.status, 202);
    assert.equal(reenvio.data?.entregas.map((e) => [e.endpoint_id, e.situacao]), [[endpoint.id, 'pendente']]);
    const [, denovo] = await receiver.waitFor(2, (r) => r.id === id);
    assert.is(denovo?.body, entregue?.body);
    const alheio = await eventos.GET('/eventos/{id}', { params: { path: { id: randomUUID() } } });
    assert.is(alheio.response.status, 404);
    assert.is(alheio.error?.codigo, 'nao_encontrado');
  } finally {
    await comWorker.stop();
    await receiver.close();
  }
});

// Issue 19, items 3-5 through the generated client: the movement history, movements by SKU and in
// batches (with the typed refusal of each item), and external references on movements, quotations
// and production orders, found again by the lists' filter.
test('movement history, SKU and batches, and external references', async () => {
  await semLimites(app.db.pool); // a dozen writes and reads in a row: more than Farm's burst of 20 units
  const chave = (n: string) => ({ header: { 'Idempotency-Key': `cliente-gerado-19-${n}` } });
  const porSku = await client.POST('/estoque/movimentos', {
    params: chave('sku'),
    body: { tipo: 'entrada', sku: 'CLI-1-U', quantidade: 10, motivo: 'correcao', referencia_externa: 'MKT-77', metadados: { loja: 'Prisma' } },
  });
  assert.is(porSku.response.status, 201);
  assert.is(porSku.data?.variacao_id, variacaoId);
  assert.equal(porSku.data?.metadados, { loja: 'Prisma' });

  const lote = await client.POST('/estoque/movimentos/lote', {
    params: chave('lote'),
    body: { movimentos: [
      { tipo: 'saida', sku: 'CLI-1', quantidade: 2, motivo: 'venda_marketplace', referencia_externa: 'MKT-77' },
      { tipo: 'saida', variacao_id: variacaoId, quantidade: 3, motivo: 'venda_marketplace', referencia_externa: 'MKT-77' },
    ] },
  });
  assert.is(lote.response.status, 201);
  const saldo = porSku.data?.saldo_depois ?? 0;
  assert.equal(lote.data?.movimentos.map((m) => m.saldo_depois), [saldo - 2, saldo - 5]);
  const recusado = await client.POST('/estoque/movimentos/lote', {
    params: chave('lote-recusado'),
    body: { movimentos: [{ tipo: 'saida', variacao_id: variacaoId, quantidade: 1, motivo: 'perda' }, { tipo: 'saida', sku: 'CLI-1', quantidade: 99, motivo: 'perda' }] },
  });
  assert.is(recusado.response.status, 422);
  assert.is(recusado.error?.motivo, 'lote_recusado');
  assert.equal(recusado.error?.recusas?.map((r) => [r.indice, r.motivo]), [[1, 'saldo_insuficiente']]);

  const historico = await client.GET('/estoque/movimentos', { params: { query: { referencia_externa: 'MKT-77', tipo: 'saida' } } });
  assert.is(historico.response.status, 200, JSON.stringify(historico.error));
  assert.equal(historico.data?.dados.map((m) => m.id).sort(), lote.data?.movimentos.map((m) => m.id).sort());
  const um = await client.GET('/estoque/movimentos/{id}', { params: { path: { id: porSku.data?.id ?? '' } } });
  assert.equal(um.data, porSku.data);
  const alheio = await client.GET('/estoque/movimentos/{id}', { params: { path: { id: '00000000-0000-4000-8000-000000000000' } } });
  assert.is(alheio.error?.codigo, 'nao_encontrado');

  const cotacao = await client.POST('/cotacoes', {
    params: chave('cotacao'),
    body: { cliente_nome: 'Cliente', itens: [{ tipo: 'avulso', nome: 'Peça', quantidade: 1, preco_unitario_centavos: 100 }], referencia_externa: 'ERP-9', metadados: { a: 'b' } },
  });
  assert.equal([cotacao.data?.referencia_externa, cotacao.data?.metadados], ['ERP-9', { a: 'b' }]);
  const pedido = await client.POST('/pedidos-producao', {
    params: chave('pedido'),
    body: { tipo: 'estoque', itens: [{ tipo: 'catalogo', variacao_id: variacaoId, quantidade: 1 }], referencia_externa: 'ERP-9' },
  });
  assert.equal([pedido.data?.referencia_externa, pedido.data?.metadados], ['ERP-9', {}]);
  const cotacoes = await client.GET('/cotacoes', { params: { query: { referencia_externa: 'ERP-9' } } });
  const pedidos = await client.GET('/pedidos-producao', { params: { query: { referencia_externa: 'ERP-9' } } });
  assert.equal([cotacoes.data?.dados.map((c) => c.id), pedidos.data?.dados.map((p) => p.id)], [[cotacao.data?.id], [pedido.data?.id]]);
});

test.run();
