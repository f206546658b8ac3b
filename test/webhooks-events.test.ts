import { randomUUID } from 'node:crypto';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { sql, type Db } from '#shared/db/pool.ts';
import { TIPOS_DE_EVENTO, tipoDeEvento } from '#shared/domain/eventos.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { createAccount, type TestAccount } from './helpers/fixtures.ts';
import { addEndpoint, closeGroupingWindows, emit, startReceiver, type Receiver } from './helpers/receiver.ts';

const test = suite('webhooks: every event type of contract §6.2, end to end');
let app: TestApp;
let receiver: Receiver;
let account: TestAccount;
let endpointId: string;

const Id = z.object({ id: z.string() });

test.before(async () => {
  receiver = await startReceiver();
  app = await startTestApp({ worker: true });
  account = await createAccount(app.db.pool, { plano: 'farm' });
  endpointId = (await addEndpoint(app.db.pool, receiver, { contaId: account.contaId, usuarioId: account.usuarioId, path: '/todos' })).id;
});
test.after(async () => {
  await app.stop();
  await receiver.close();
});

async function received(tipo: string, match: (dados: any) => boolean = () => true) {
  const [request] = await receiver.waitFor(1, (r) => r.json?.tipo === tipo && match(r.json.dados));
  assert.ok(request);
  return request;
}

function checkEnvelope(request: { id: string; json: any; verified: boolean }, tipo: string, url: string | null) {
  const e = request.json;
  assert.ok(request.verified, 'the signature verifies with the endpoint secret');
  assert.equal(Object.keys(e).sort(), ['conta_id', 'criado_em', 'dados', 'id', 'tipo', 'url', 'versao']);
  assert.is(e.id, request.id, 'webhook-id is the event id');
  assert.is(e.tipo, tipo);
  assert.is(e.versao, 'v1');
  assert.match(e.criado_em, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/);
  assert.is(e.conta_id, account.contaId);
  assert.is(e.dados.objeto, tipoDeEvento(tipo).objeto);
  for (const campo of tipoDeEvento(tipo).campos) assert.ok(campo in e.dados, `${tipo} carries ${campo}`);
  const parsed = tipoDeEvento(tipo).dados.safeParse(e.dados);
  assert.ok(parsed.success, `${tipo} dados match the catalog's schema: ${parsed.error?.message ?? ''}`);
  assert.is(e.url, url === null ? null : `${app.baseUrl}${url}`);
}

async function produto(db: Db, sku: string): Promise<{ produtoId: string; variacaoId: string }> {
  return db.transaction(async (tx) => {
    const p = await tx.one(sql.type(Id)`INSERT INTO produtos (conta_id, sku, nome) VALUES (${account.contaId}, ${sku}, 'Vaso') RETURNING id`);
    const v = await tx.one(sql.type(Id)`
      INSERT INTO variacoes (conta_id, produto_id, sku, nome) VALUES (${account.contaId}, ${p.id}, ${`${sku}-P`}, 'P') RETURNING id`);
    return { produtoId: p.id, variacaoId: v.id };
  });
}

const cotacaoId = randomUUID();
const pedidoId = randomUUID();
const emitted: [string, Record<string, unknown>, string][] = [
  ['cotacao.criada', { objeto: 'cotacao', id: cotacaoId, codigo: 'COT-000001', status: 'rascunho', referencia_externa: 'MKT-1', metadados: { loja: 'Prisma' } }, `/cotacoes/${cotacaoId}`],
  ['cotacao.enviada', { objeto: 'cotacao', id: cotacaoId, codigo: 'COT-000001', versao: 1, referencia_externa: 'MKT-1', metadados: { loja: 'Prisma' } }, `/cotacoes/${cotacaoId}`],
  ['cotacao.fechamento_pedido', { objeto: 'cotacao', id: cotacaoId, codigo: 'COT-000001', cor_a_combinar: true, referencia_externa: 'MKT-1', metadados: { loja: 'Prisma' } }, `/cotacoes/${cotacaoId}`],
  ['cotacao.status_mudou', { objeto: 'cotacao', id: cotacaoId, codigo: 'COT-000001', de: 'enviada', para: 'aprovada', origem: { via: 'api', chave_id: null }, referencia_externa: 'MKT-1', metadados: { loja: 'Prisma' } }, `/cotacoes/${cotacaoId}`],
  ['cotacao.aprovada', { objeto: 'cotacao', id: cotacaoId, codigo: 'COT-000001', referencia_externa: 'MKT-1', metadados: { loja: 'Prisma' } }, `/cotacoes/${cotacaoId}`],
  ['cotacao.recusada', { objeto: 'cotacao', id: cotacaoId, codigo: 'COT-000001', referencia_externa: 'MKT-1', metadados: { loja: 'Prisma' } }, `/cotacoes/${cotacaoId}`],
  ['link.aberto', { objeto: 'link', cotacao_id: cotacaoId, codigo: 'COT-000001', abertura_n: 2, referencia_externa: 'MKT-1', metadados: { loja: 'Prisma' } }, `/cotacoes/${cotacaoId}`],
  ['pedido_producao.criado', { objeto: 'pedido_producao', id: pedidoId, codigo: 'OP-000001', tipo: 'cliente', referencia_externa: 'MKT-1', metadados: { loja: 'Prisma' } }, `/pedidos-producao/${pedidoId}`],
  ['pedido_producao.situacao_mudou', { objeto: 'pedido_producao', id: pedidoId, codigo: 'OP-000001', situacao_de: 'aberto', situacao_para: 'em_producao', referencia_externa: 'MKT-1', metadados: { loja: 'Prisma' } }, `/pedidos-producao/${pedidoId}`],
  ['pedido_producao.concluido', { objeto: 'pedido_producao', id: pedidoId, codigo: 'OP-000001', referencia_externa: 'MKT-1', metadados: { loja: 'Prisma' } }, `/pedidos-producao/${pedidoId}`],
];

for (const [tipo, dados, url] of emitted) {
  test(`delivers ${tipo} emitted with emit_event, with its dados and url ${url.split('/')[1]}/<id>`, async () => {
    const id = await emit(app.db.pool, account.contaId, tipo, dados);
    const request = await received(tipo);
    checkEnvelope(request, tipo, url);
    assert.is(request.id, id);
    assert.equal(request.json.dados, dados);
  });
}

test('delivers produto.criado when a product is inserted, with its id and sku', async () => {
  const { produtoId } = await produto(app.db.pool, 'VASO-1');
  const request = await received('produto.criado', (d) => d.id === produtoId);
  checkEnvelope(request, 'produto.criado', `/produtos/${produtoId}`);
  assert.equal(request.json.dados, { objeto: 'produto', id: produtoId, sku: 'VASO-1' });
});

test('delivers produto.atualizado when a price tier changes, once its grouping window ends', async () => {
  const { produtoId, variacaoId } = await produto(app.db.pool, 'VASO-2');
  const canal = await app.db.pool.one(sql.type(Id)`
    INSERT INTO canais (conta_id, nome, tipo) VALUES (${account.contaId}, 'Loja', 'loja_propria') RETURNING id`);
  await app.db.pool.query(sql.unsafe`
    INSERT INTO precos (conta_id, variacao_id, canal_id, a_partir_de, preco_centavos)
    VALUES (${account.contaId}, ${variacaoId}, ${canal.id}, 1, 2590)`);
  await closeGroupingWindows(app.db.pool);
  const request = await received('produto.atualizado', (d) => d.id === produtoId);
  checkEnvelope(request, 'produto.atualizado', `/produtos/${produtoId}`);
  assert.equal(request.json.dados, { objeto: 'produto', id: produtoId, sku: 'VASO-2' });
});

test('delivers catalogo.atualizado_em_massa for an import of 21 products, with quantidade and desde', async () => {
  await app.db.pool.query(sql.unsafe`
    INSERT INTO produtos (conta_id, sku, nome)
    SELECT ${account.contaId}, 'IMP-' || g, 'Importado' FROM generate_series(1, 21) g`);
  const request = await received('catalogo.atualizado_em_massa');
  checkEnvelope(request, 'catalogo.atualizado_em_massa', '/produtos?ordem=atualizado_em');
  assert.is(request.json.dados.quantidade, 21);
  const oldest = await app.db.pool.oneFirst(sql.type(z.object({ min: z.string() }))`
    SELECT min(atualizado_em) AS min FROM produtos WHERE conta_id = ${account.contaId} AND sku LIKE 'IMP-%'`);
  assert.ok(Date.parse(request.json.dados.desde) <= Date.parse(oldest), 'atualizado_desde=desde finds every product');
});

test('delivers estoque.movimentado for a stock movement, with variacao_id, local_id, tipo, the movement and its references', async () => {
  const { variacaoId } = await produto(app.db.pool, 'VASO-3');
  const local = await app.db.pool.one(sql.type(Id)`SELECT id FROM locais WHERE conta_id = ${account.contaId} AND tipo = 'proprio'`);
  await app.db.pool.query(sql.unsafe`
    INSERT INTO estoque_movimentos (conta_id, local_id, variacao_id, tipo, quantidade, saldo_antes, saldo_depois, motivo)
    VALUES (${account.contaId}, ${local.id}, ${variacaoId}, 'entrada', 5, 0, 5, 'correcao')`);
  const movimento = await app.db.pool.one(sql.type(Id)`SELECT id FROM estoque_movimentos WHERE conta_id = ${account.contaId} AND variacao_id = ${variacaoId}`);
  await closeGroupingWindows(app.db.pool);
  const request = await received('estoque.movimentado', (d) => d.variacao_id === variacaoId);
  checkEnvelope(request, 'estoque.movimentado', `/estoque?variacao_id=${variacaoId}`);
  assert.equal(request.json.dados, {
    objeto: 'estoque', variacao_id: variacaoId, local_id: local.id, tipo: 'entrada', movimento_id: movimento.id, referencia_externa: null, metadados: {},
  });
});

test('delivers estoque.baixo when a supply balance falls below its minimum', async () => {
  const insumo = await app.db.pool.one(sql.type(Id)`
    INSERT INTO insumos (conta_id, tipo, nome, unidade, saldo, minimo)
    VALUES (${account.contaId}, 'embalagem', 'Caixa P', 'un', 50, 20) RETURNING id`);
  await app.db.pool.query(sql.unsafe`UPDATE insumos SET saldo = 12 WHERE conta_id = ${account.contaId} AND id = ${insumo.id}`);
  const request = await received('estoque.baixo', (d) => d.insumo?.id === insumo.id);
  checkEnvelope(request, 'estoque.baixo', '/estoque-insumos?abaixo_do_minimo=true');
  assert.equal(request.json.dados, { objeto: 'insumo', insumo: { tipo: 'embalagem', id: insumo.id }, abaixo_do_minimo: true });
});

test('delivers webhook.teste to its endpoint with a null url', async () => {
  const id = await emit(app.db.pool, account.contaId, 'webhook.teste', { objeto: 'teste', mensagem: 'olá' }, endpointId);
  const request = await received('webhook.teste');
  checkEnvelope(request, 'webhook.teste', null);
  assert.is(request.id, id);
  assert.equal(request.json.dados, { objeto: 'teste', mensagem: 'olá' });
});

test('covered every type of the catalog, each delivered once and every signature verified', async () => {
  const tipos = new Set(receiver.received.map((r) => r.json?.tipo));
  for (const t of TIPOS_DE_EVENTO) assert.ok(tipos.has(t.tipo), `${t.tipo} was delivered`);
  assert.equal(receiver.unverified(), []);
  const ids = receiver.received.map((r) => r.id);
  assert.is(new Set(ids).size, ids.length, 'no event was delivered twice');
});

test('the grouped types of the catalog are exactly those the database groups', async () => {
  const grouped = await app.db.pool.anyFirst(sql.type(z.object({ tipo: z.string() }))`
    SELECT tipo FROM unnest(tipos_de_evento()) AS tipo WHERE agrupamento_do_evento(tipo, '{"id": "x", "variacao_id": "x"}') IS NOT NULL`);
  assert.equal([...grouped].sort(), TIPOS_DE_EVENTO.filter((t) => t.agrupado).map((t) => t.tipo).sort());
});

test.run();
