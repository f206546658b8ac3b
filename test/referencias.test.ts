// External references (issue 19, item 5): referencia_externa and metadados on stock movements,
// quotations and production orders — kept, returned on every read, filtered on the lists, not
// unique, checked to Stripe's limits (and by the database for every writer), carried in the dados of
// the events about those records, and cleared from quotations and orders by an anonymization.
import { randomUUID } from 'node:crypto';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { anonimizarCliente } from '#shared/db/anonimizacao.ts';
import { mudarSituacaoPedido } from '#shared/db/producao.ts';
import { sql } from '#shared/db/pool.ts';
import { comOrigem } from '#shared/db/origem.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { criarProdutoCompleto, definirSaldo, semLimites, type ProdutoFixture } from './helpers/catalogo.ts';
import { levarA } from './helpers/cotacoes.ts';
import { createAccount, type TestAccount } from './helpers/fixtures.ts';
import { request } from './helpers/http.ts';

const test = suite('external references');
let app: TestApp;
let conta: TestAccount;
let produto: ProdutoFixture;
let variacao: string;

const post = (path: string, body: unknown, token = conta.token) =>
  request(`${app.baseUrl}${path}`, { token, body, headers: { 'idempotency-key': randomUUID() } });
const get = (path: string, token = conta.token) => request(`${app.baseUrl}${path}`, { token });

const META = { pedido_marketplace: '2000004471', loja: 'Prisma 3D', 'chave com espaço': 'ção' };
const novoMovimento = (extra: Record<string, unknown> = {}) => ({ tipo: 'saida', variacao_id: variacao, quantidade: 1, motivo: 'venda_marketplace', ...extra });
const novaCotacao = (extra: Record<string, unknown> = {}) =>
  ({ cliente_nome: 'Estúdio Prisma', itens: [{ tipo: 'avulso', nome: 'Peça', quantidade: 1, preco_unitario_centavos: 1000 }], ...extra });
const novoPedido = (extra: Record<string, unknown> = {}) => ({ tipo: 'estoque', itens: [{ tipo: 'catalogo', variacao_id: variacao, quantidade: 2 }], ...extra });

/** The three kinds of record that take external references: how to create one, and where to read it. */
const TIPOS = [
  { nome: 'movimento', plural: 'movements', criar: '/estoque/movimentos', lista: '/estoque/movimentos', novo: novoMovimento },
  { nome: 'cotação', plural: 'quotations', criar: '/cotacoes', lista: '/cotacoes', novo: novaCotacao },
  { nome: 'pedido', plural: 'production orders', criar: '/pedidos-producao', lista: '/pedidos-producao', novo: novoPedido },
] as const;

test.before(async () => {
  app = await startTestApp();
  await semLimites(app.db.pool);
  conta = await createAccount(app.db.pool);
  produto = await criarProdutoCompleto(app.db.pool, conta.contaId, { variacoes: [{}, {}] });
  variacao = produto.variacoes[0]?.id ?? '';
  await definirSaldo(app.db.pool, conta.contaId, variacao, 1000);
});
test.after(async () => app.stop());

for (const tipo of TIPOS) {
  test(`${tipo.plural}: each keeps referencia_externa and metadados, shown by its POST, GET one and list; without them, null and {}`, async () => {
    const criado = await post(tipo.criar, tipo.novo({ referencia_externa: `REF-${tipo.nome}`, metadados: META }));
    assert.is(criado.status, 201, criado.text);
    assert.is(criado.body.referencia_externa, `REF-${tipo.nome}`);
    assert.equal(criado.body.metadados, META);
    const um = await get(`${tipo.lista}/${criado.body.id}`);
    assert.equal([um.body.referencia_externa, um.body.metadados], [`REF-${tipo.nome}`, META]);
    const lista = await get(`${tipo.lista}?referencia_externa=REF-${encodeURIComponent(tipo.nome)}`);
    assert.equal(lista.body.dados, [um.body]);
    const sem = await post(tipo.criar, tipo.novo());
    assert.equal([sem.body.referencia_externa, sem.body.metadados], [null, {}]);
    assert.equal([(await get(`${tipo.lista}/${sem.body.id}`)).body.referencia_externa, (await get(`${tipo.lista}/${sem.body.id}`)).body.metadados], [null, {}]);
  });

  test(`${tipo.plural}: referencia_externa is not unique; the list's filter finds every one, letter by letter, and never another account's`, async () => {
    const ref = `PEDIDO-${randomUUID()}`;
    const a = await post(tipo.criar, tipo.novo({ referencia_externa: ref }));
    const b = await post(tipo.criar, tipo.novo({ referencia_externa: ref, metadados: { parte: '2' } }));
    assert.equal([a.status, b.status], [201, 201]);
    const achados = await get(`${tipo.lista}?referencia_externa=${ref}`);
    assert.equal(achados.body.dados.map((r: { id: string }) => r.id), [a.body.id, b.body.id]);
    assert.equal((await get(`${tipo.lista}?referencia_externa=${ref.toLowerCase()}`)).body.dados, []);
    const outra = await createAccount(app.db.pool);
    assert.equal((await get(`${tipo.lista}?referencia_externa=${ref}`, outra.token)).body.dados, []);
  });

  test(`${tipo.plural}: referencia_externa of 1 to 100 characters; metadados of up to 20 keys of 1 to 40 characters and text values of up to 500, 8 KB in all`, async () => {
    const ok = [
      { referencia_externa: 'r'.repeat(100) },
      { metadados: Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`k${String(i).padStart(38, '0')}`, 'v'.repeat(300)])) },
      { metadados: { ['c'.repeat(40)]: 'é'.repeat(500), vazio: '' } },
    ];
    for (const extra of ok) assert.is((await post(tipo.criar, tipo.novo(extra))).status, 201, JSON.stringify(extra).slice(0, 80));
    const recusados: [Record<string, unknown>, string][] = [
      [{ referencia_externa: 'r'.repeat(101) }, 'referencia_externa'],
      [{ referencia_externa: '' }, 'referencia_externa'],
      [{ referencia_externa: 42 }, 'referencia_externa'],
      [{ metadados: Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`k${i}`, 'v'])) }, 'metadados'],
      [{ metadados: { ['c'.repeat(41)]: 'v' } }, 'metadados'],
      [{ metadados: { '': 'v' } }, 'metadados'],
      [{ metadados: { a: 'v'.repeat(501) } }, 'metadados.a'],
      [{ metadados: { a: 1 } }, 'metadados.a'],
      [{ metadados: { a: { b: 'c' } } }, 'metadados.a'],
      [{ metadados: { a: null } }, 'metadados.a'],
      [{ metadados: ['a'] }, 'metadados'],
      [{ metadados: 'a=b' }, 'metadados'],
      // 20 values of 500 three-byte characters: within every count, past 8 KB of JSON.
      [{ metadados: Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`k${i}`, 'ç'.repeat(500)])) }, 'metadados'],
    ];
    for (const [extra, campo] of recusados) {
      const res = await post(tipo.criar, tipo.novo(extra));
      assert.is(res.status, 400, JSON.stringify(extra).slice(0, 80));
      assert.ok(res.body.erros.some((e: { campo: string }) => e.campo === campo), `${campo}: ${res.text}`);
    }
  });
}

test('a marketplace integrator finds the movements it posted for its own order id, by the list\'s filter', async () => {
  const pedidoDaLoja = 'MKT-2000009999';
  const lote = await post('/estoque/movimentos/lote', {
    movimentos: produto.variacoes.map((v) => ({ tipo: 'saida', sku: v.sku, quantidade: 1, motivo: 'venda_marketplace', referencia_externa: pedidoDaLoja })),
  });
  await definirSaldo(app.db.pool, conta.contaId, produto.variacoes[1]?.id ?? '', 5);
  const again = await post('/estoque/movimentos/lote', {
    movimentos: produto.variacoes.map((v) => ({ tipo: 'saida', sku: v.sku, quantidade: 1, motivo: 'venda_marketplace', referencia_externa: pedidoDaLoja })),
  });
  assert.equal([lote.status, again.status], [422, 201], 'the first was refused whole (no stock of the second SKU), the second went');
  const achados = await get(`/estoque/movimentos?referencia_externa=${pedidoDaLoja}`);
  // (The list is in criado_em order; a batch makes its movements in the order of their balances.)
  const porId = (ms: { id: string }[]) => [...ms].sort((x, y) => x.id.localeCompare(y.id));
  assert.equal(porId(achados.body.dados), porId(again.body.movimentos));
  const devolucao = await post('/estoque/movimentos', { tipo: 'entrada', sku: produto.variacoes[0]?.sku, quantidade: 1, motivo: 'devolucao', referencia_externa: pedidoDaLoja });
  assert.equal((await get(`/estoque/movimentos?referencia_externa=${pedidoDaLoja}&tipo=entrada`)).body.dados, [devolucao.body]);
});

// Each event with the data it goes out with: a grouped one still pending, its group's latest.
const eventosDe = (id: string) => app.db.pool.any(sql.type(z.object({ tipo: z.string(), dados: z.record(z.string(), z.any()) }))`
  SELECT tipo, dados FROM (
    SELECT o.seq, o.tipo, coalesce(CASE WHEN o.relayed_at IS NULL AND o.group_key IS NOT NULL THEN g.dados END, o.dados) AS dados
      FROM outbox o, evento_agrupado_atual(o.conta_id, o.tipo, o.dados) g
     WHERE o.conta_id = ${conta.contaId}) e
   WHERE dados ->> 'id' = ${id} OR dados ->> 'cotacao_id' = ${id} OR dados ->> 'movimento_id' = ${id}
   ORDER BY seq`);

test('the events about a quotation carry its references in dados: created, sent, link opened, close-deal, status changes, approved', async () => {
  const criada = await post('/cotacoes', novaCotacao({ referencia_externa: 'ERP-ORC-1', metadados: { vendedor: 'Ana' } }));
  const id = criada.body.id;
  await post(`/cotacoes/${id}/status`, { status: 'enviada' });
  await app.db.pool.query(sql.unsafe`UPDATE cotacoes SET link_aberturas = link_aberturas + 1 WHERE id = ${id}`);
  await app.db.pool.query(sql.unsafe`INSERT INTO cotacao_fechamentos (conta_id, cotacao_id, versao) VALUES (${conta.contaId}, ${id}, 1)`);
  await post(`/cotacoes/${id}/status`, { status: 'recusada' });
  await post(`/cotacoes/${id}/status`, { status: 'rascunho' });
  await levarA(app.db.pool, conta.contaId, id, 'enviada', 'aprovada');
  const eventos = await eventosDe(id);
  assert.equal([...new Set(eventos.map((e) => e.tipo))].sort(), [
    'cotacao.aprovada', 'cotacao.criada', 'cotacao.enviada', 'cotacao.fechamento_pedido', 'cotacao.recusada', 'cotacao.status_mudou', 'link.aberto',
  ]);
  for (const e of eventos) assert.equal([e.dados.referencia_externa, e.dados.metadados], ['ERP-ORC-1', { vendedor: 'Ana' }], e.tipo);
});

test('the events about a production order carry its references in dados: created, situation changed, concluded', async () => {
  const criado = await post('/pedidos-producao', novoPedido({ referencia_externa: 'ERP-OP-1', metadados: { linha: '3' } }));
  const id = criado.body.id;
  for (const situacao of ['em_producao', 'finalizado'] as const) {
    await comOrigem(app.db.pool, 'tela', (tx) => mudarSituacaoPedido(tx, conta.contaId, id, situacao));
  }
  const eventos = await eventosDe(id);
  assert.equal(eventos.map((e) => e.tipo), ['pedido_producao.criado', 'pedido_producao.situacao_mudou', 'pedido_producao.situacao_mudou', 'pedido_producao.concluido']);
  for (const e of eventos) assert.equal([e.dados.referencia_externa, e.dados.metadados], ['ERP-OP-1', { linha: '3' }], e.tipo);
});

test('estoque.movimentado carries the movement it describes, with its references', async () => {
  const movimento = await post('/estoque/movimentos', novoMovimento({ variacao_id: produto.variacoes[1]?.id, tipo: 'entrada', referencia_externa: 'MKT-EVT', metadados: { a: 'b' } }));
  const [evento] = await eventosDe(movimento.body.id);
  assert.is(evento?.tipo, 'estoque.movimentado');
  assert.equal([evento?.dados.movimento_id, evento?.dados.referencia_externa, evento?.dados.metadados], [movimento.body.id, 'MKT-EVT', { a: 'b' }]);
});

test('the database refuses, from any writer, what the API refuses: a second line behind validation', async () => {
  const local = await app.db.pool.oneFirst(sql.unsafe`SELECT id FROM locais WHERE conta_id = ${conta.contaId} AND tipo = 'proprio'`);
  const tentar = async (referencia: string | null, metadados: unknown) => {
    try {
      await app.db.pool.query(sql.unsafe`
        INSERT INTO estoque_movimentos (conta_id, local_id, variacao_id, tipo, quantidade, saldo_antes, saldo_depois, motivo, referencia_externa, metadados)
        VALUES (${conta.contaId}, ${String(local)}, ${variacao}, 'entrada', 1, 0, 1, 'outro', ${referencia}, ${JSON.stringify(metadados)}::jsonb)`);
      return 'gravou';
    } catch (error) {
      return /check constraint/.test(String((error as Error).cause ?? error)) ? 'recusou' : String(error);
    }
  };
  assert.is(await tentar('r'.repeat(100), { ['c'.repeat(40)]: 'v'.repeat(500) }), 'gravou');
  for (const [referencia, metadados] of [
    ['r'.repeat(101), {}], ['', {}], [null, Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`k${i}`, 'v']))],
    [null, { ['c'.repeat(41)]: 'v' }], [null, { a: 'v'.repeat(501) }], [null, { a: 1 }], [null, ['a']], [null, 'texto'], [null, null],
  ] as [string | null, unknown][]) {
    assert.is(await tentar(referencia, metadados), 'recusou', JSON.stringify([referencia, metadados]).slice(0, 80));
  }
  for (const tabela of ['cotacoes', 'pedidos_producao']) {
    const erro = await app.db.pool.query(sql.unsafe`UPDATE ${sql.identifier([tabela])} SET metadados = '{"a": 1}' WHERE conta_id = ${conta.contaId}`)
      .then(() => null, (error: Error) => String(error.cause ?? error));
    assert.match(erro ?? 'gravou', /check constraint/, tabela);
  }
});

test('an anonymization (LGPD) clears the metadados of the quotations and orders it anonymizes, keeps their referencia_externa, and they stay cleared', async () => {
  const cotacao = await post('/cotacoes', novaCotacao({ cliente_nome: 'Beatriz Sigilo', referencia_externa: 'ERP-ANON', metadados: { email: 'bia@cliente.invalid' } }));
  await levarA(app.db.pool, conta.contaId, cotacao.body.id, 'enviada', 'aprovada');
  const pedido = await post('/pedidos-producao', { tipo: 'cliente', cotacao_id: cotacao.body.id, metadados: { telefone: '11 9999-0000' } });
  assert.is(pedido.status, 201, pedido.text);
  await comOrigem(app.db.pool, 'tela', (tx) => anonimizarCliente(tx, conta.contaId, { cotacaoId: cotacao.body.id }));
  const depois = [await get(`/cotacoes/${cotacao.body.id}`), await get(`/pedidos-producao/${pedido.body.id}`)];
  assert.equal(depois.map((r) => [r.body.referencia_externa, r.body.metadados]), [['ERP-ANON', {}], [null, {}]]);
  const erro = await app.db.pool.query(sql.unsafe`UPDATE cotacoes SET metadados = '{"email": "de novo"}' WHERE id = ${cotacao.body.id}`)
    .then(() => null, (error: Error) => String(error.cause ?? error));
  assert.match(erro ?? 'gravou', /check constraint/);
});

test.run();
