// The official client (client/) over every area of the API, against a real service: the generated
// types (client/src/openapi.ts, from docs/openapi.json) checked by tsc, and each call made as an
// integrator makes it, its answer typed (and checked against the OpenAPI document), its refusal an
// ErroDaApi with codigo and motivo.
import { randomUUID } from 'node:crypto';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { ErroDaApi, type Printfarm } from '../../client/src/index.ts';
import { criarCanal } from '#shared/db/canais.ts';
import { sql } from '#shared/db/pool.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { semLimites } from '../helpers/catalogo.ts';
import { clienteDeTeste } from '../helpers/cliente.ts';
import { createAccount } from '../helpers/fixtures.ts';
import { addEndpoint, emit, eventually, startReceiver } from '../helpers/receiver.ts';

const test = suite('the official client over every area of the API');
let app: TestApp;
let cliente: Printfarm;
let variacaoId: string;

test.before(async () => {
  app = await startTestApp();
  const account = await createAccount(app.db.pool, { plano: 'farm' });
  cliente = clienteDeTeste(app.baseUrl, account.token);
  for (let i = 0; i < 3; i++) await criarCanal(app.db.pool, account.contaId, { nome: `Canal ${i}`, tipo: 'outro' });
  const Id = z.object({ id: z.string() });
  const produto = await app.db.pool.one(sql.type(Id)`
    INSERT INTO produtos (conta_id, sku, nome) VALUES (${account.contaId}, 'CLI-1', 'Peça do cliente') RETURNING id`);
  variacaoId = (await app.db.pool.one(sql.type(Id)`
    INSERT INTO variacoes (conta_id, produto_id, sku, nome) VALUES (${account.contaId}, ${produto.id}, 'CLI-1-U', 'Única') RETURNING id`)).id;
});
test.after(async () => app.stop());

/** The ErroDaApi a call throws. */
async function recusa(call: Promise<unknown>): Promise<ErroDaApi> {
  try {
    await call;
  } catch (error) {
    assert.instance(error, ErroDaApi);
    return error as ErroDaApi;
  }
  throw new Error('the call was expected to be refused');
}

test('saude and conta', async () => {
  assert.is((await cliente.GET('/saude')).situacao, 'ok');
  const conta = await cliente.GET('/conta');
  assert.is(conta.plano, 'farm');
  assert.ok(conta.limites.chamadas_por_mes > 0);
});

test('a list page by page through its cursor, and whole through listar', async () => {
  const first = await cliente.GET('/canais', { params: { query: { limite: 2 } } });
  assert.is(first.dados.length, 2);
  assert.type(first.proximo_cursor, 'string');
  const second = await cliente.GET('/canais', { params: { query: { limite: 2, cursor: first.proximo_cursor ?? undefined } } });
  assert.equal([second.dados.length, second.proximo_cursor], [1, null]);
  const nomes: string[] = [];
  for await (const canal of cliente.listar('/canais', { params: { query: { limite: 1 } } })) nomes.push(canal.nome);
  assert.equal(nomes, ['Canal 0', 'Canal 1', 'Canal 2']);
});

test('a stock movement, and its refusal typed with codigo, motivo and requisicao_id', async () => {
  const entrada = await cliente.POST('/estoque/movimentos', {
    params: { header: { 'Idempotency-Key': 'cliente-oficial-1' } },
    body: { tipo: 'entrada', variacao_id: variacaoId, quantidade: 5, motivo: 'devolucao' },
  });
  assert.is(entrada.saldo_depois, 5);
  const erro = await recusa(cliente.POST('/estoque/movimentos', { body: { tipo: 'saida', variacao_id: variacaoId, quantidade: 6, motivo: 'venda_loja' } }));
  assert.equal([erro.status, erro.codigo, erro.motivo], [422, 'saldo_insuficiente', 'saldo_insuficiente']);
  assert.is(erro.requisicao_id, erro.resposta.headers.get('x-request-id'));
  assert.match(erro.chaveDeIdempotencia ?? '', /^[0-9a-f-]{36}$/);
  const invalido = await recusa(cliente.POST('/estoque/movimentos', { body: { tipo: 'entrada', variacao_id: variacaoId, quantidade: 0, motivo: 'devolucao' } }));
  assert.equal([invalido.status, invalido.codigo, invalido.erros.map((e) => e.campo)], [400, 'dados_invalidos', ['quantidade']]);
});

test('the event log, the attempts of an event and its redelivery, with a real worker and receiver', async () => {
  const receiver = await startReceiver();
  const comWorker = await startTestApp({ worker: true });
  try {
    const conta = await createAccount(comWorker.db.pool);
    const eventos = clienteDeTeste(comWorker.baseUrl, conta.token);
    const endpoint = await addEndpoint(comWorker.db.pool, receiver, { contaId: conta.contaId, usuarioId: conta.usuarioId, path: '/cliente' });
    const id = await emit(comWorker.db.pool, conta.contaId, 'cotacao.aprovada', { objeto: 'cotacao', id: randomUUID(), codigo: 'COT-000001' });
    const [entregue] = await receiver.waitFor(1, (r) => r.id === id);
    const lista = await eventos.GET('/eventos', { params: { query: { tipo: 'cotacao.aprovada', limite: 10 } } });
    assert.equal(lista.dados.map((e) => e.id), [id]);
    assert.equal(await eventos.GET('/eventos/{id}', { params: { path: { id } } }), entregue?.json);
    const tentativas = await eventually(
      () => eventos.GET('/eventos/{id}/entregas', { params: { path: { id } } }),
      // Listed when the request goes out; complete (and the delivery free to be replayed) once its outcome is recorded.
      (r) => r.dados.length === 1 && r.dados[0]?.status_http !== null);
    assert.equal(tentativas.dados.map((t) => [t.endpoint_id, t.tentativa, t.status_http]), [[endpoint.id, 1, 200]]);
    const reenvio = await eventos.POST('/eventos/{id}/reenviar', { params: { path: { id } }, body: { endpoint_id: endpoint.id } });
    assert.equal(reenvio.entregas.map((e) => [e.endpoint_id, e.situacao]), [[endpoint.id, 'pendente']]);
    const [, denovo] = await receiver.waitFor(2, (r) => r.id === id);
    assert.is(denovo?.body, entregue?.body);
    const alheio = await recusa(eventos.GET('/eventos/{id}', { params: { path: { id: randomUUID() } } }));
    assert.equal([alheio.status, alheio.codigo], [404, 'nao_encontrado']);
  } finally {
    await comWorker.stop();
    await receiver.close();
  }
});

// The movement history, movements by SKU and in batches (with the typed refusal of each item), and
// external references on movements, quotations and production orders, found again by the lists' filter.
test('movement history, SKU and batches, and external references', async () => {
  await semLimites(app.db.pool); // a dozen writes and reads in a row: more than Farm's burst of 20 units
  const porSku = await cliente.POST('/estoque/movimentos', {
    body: { tipo: 'entrada', sku: 'CLI-1-U', quantidade: 10, motivo: 'correcao', referencia_externa: 'MKT-77', metadados: { loja: 'Prisma' } },
  });
  assert.is(porSku.variacao_id, variacaoId);
  assert.equal(porSku.metadados, { loja: 'Prisma' });

  const lote = await cliente.POST('/estoque/movimentos/lote', {
    body: { movimentos: [
      { tipo: 'saida', sku: 'CLI-1', quantidade: 2, motivo: 'venda_marketplace', referencia_externa: 'MKT-77' },
      { tipo: 'saida', variacao_id: variacaoId, quantidade: 3, motivo: 'venda_marketplace', referencia_externa: 'MKT-77' },
    ] },
  });
  assert.equal(lote.movimentos.map((m) => m.saldo_depois), [porSku.saldo_depois - 2, porSku.saldo_depois - 5]);
  const recusado = await recusa(cliente.POST('/estoque/movimentos/lote', {
    body: { movimentos: [{ tipo: 'saida', variacao_id: variacaoId, quantidade: 1, motivo: 'perda' }, { tipo: 'saida', sku: 'CLI-1', quantidade: 99, motivo: 'perda' }] },
  }));
  assert.is(recusado.motivo, 'lote_recusado');
  assert.equal(recusado.recusas.map((r) => [r.indice, r.motivo]), [[1, 'saldo_insuficiente']]);

  const historico = await cliente.GET('/estoque/movimentos', { params: { query: { referencia_externa: 'MKT-77', tipo: 'saida' } } });
  assert.equal(historico.dados.map((m) => m.id).sort(), lote.movimentos.map((m) => m.id).sort());
  assert.equal(await cliente.GET('/estoque/movimentos/{id}', { params: { path: { id: porSku.id } } }), porSku);
  const alheio = await recusa(cliente.GET('/estoque/movimentos/{id}', { params: { path: { id: '00000000-0000-4000-8000-000000000000' } } }));
  assert.is(alheio.codigo, 'nao_encontrado');

  const cotacao = await cliente.POST('/cotacoes', {
    body: { cliente_nome: 'Cliente', itens: [{ tipo: 'avulso', nome: 'Peça', quantidade: 1, preco_unitario_centavos: 100 }], referencia_externa: 'ERP-9', metadados: { a: 'b' } },
  });
  assert.equal([cotacao.referencia_externa, cotacao.metadados], ['ERP-9', { a: 'b' }]);
  const pedido = await cliente.POST('/pedidos-producao', {
    body: { tipo: 'estoque', itens: [{ tipo: 'catalogo', variacao_id: variacaoId, quantidade: 1 }], referencia_externa: 'ERP-9' },
  });
  assert.equal([pedido.referencia_externa, pedido.metadados], ['ERP-9', {}]);
  const cotacoes = await cliente.GET('/cotacoes', { params: { query: { referencia_externa: 'ERP-9' } } });
  const pedidos = await cliente.GET('/pedidos-producao', { params: { query: { referencia_externa: 'ERP-9' } } });
  assert.equal([cotacoes.dados.map((c) => c.id), pedidos.dados.map((p) => p.id)], [[cotacao.id], [pedido.id]]);
});

test.run();
