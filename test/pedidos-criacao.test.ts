// POST /pedidos-producao: customer and stock orders with origem api, from an approved quotation
// or not, items of kind catalogo, cotacao and avulso checked against the account, the refusals,
// valor_centavos as cost data, the pedido_producao.criado event and idempotent creation.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { sql } from '#shared/db/pool.ts';
import { PERMISSOES } from '#shared/domain/acesso.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { criarProdutoCompleto, semLimites, type ProdutoFixture } from './helpers/catalogo.ts';
import { cotacaoAprovada, eventos, eventosDe, levarA, novaCotacao, SEM_REFERENCIAS } from './helpers/cotacoes.ts';
import { addKey, createAccount, type TestAccount } from './helpers/fixtures.ts';
import { request } from './helpers/http.ts';
import { cobrado, lerUso, planoMedidor, settled } from './helpers/uso.ts';

const test = suite('production orders: creation');
let app: TestApp;
let conta: TestAccount;
let outra: TestAccount;
let produto: ProdutoFixture;

const post = (body: unknown, token = conta.token, headers: Record<string, string> = {}) =>
  request(`${app.baseUrl}/pedidos-producao`, { token, body, headers: { 'idempotency-key': crypto.randomUUID(), ...headers } });
const cotacaoApi = async (id: string) => (await request(`${app.baseUrl}/cotacoes/${id}`, { token: conta.token })).body;

test.before(async () => {
  app = await startTestApp();
  await semLimites(app.db.pool);
  conta = await createAccount(app.db.pool);
  outra = await createAccount(app.db.pool);
  produto = await criarProdutoCompleto(app.db.pool, conta.contaId);
});
test.after(async () => app.stop());

test('a customer order with catalog and free items: origem api, aberto, nao_pago, the event pedido_producao.criado once', async () => {
  const res = await post({
    tipo: 'cliente',
    cliente_nome: 'Carlos Lima',
    prazo: '2999-06-30',
    prioridade: 'urgente',
    valor_centavos: 45000,
    itens: [
      { tipo: 'catalogo', variacao_id: produto.variacoes[0]?.id, quantidade: 3 },
      { tipo: 'avulso', nome: 'Suporte sob medida', quantidade: 2 },
    ],
  });
  assert.is(res.status, 201, res.text);
  const p = res.body;
  assert.equal([p.tipo, p.origem, p.situacao, p.pagamento_situacao, p.cliente_nome, p.prazo, p.prioridade, p.valor_centavos, p.cotacao_id, p.finalizado_em],
    ['cliente', 'api', 'aberto', 'nao_pago', 'Carlos Lima', '2999-06-30', 'urgente', 45000, null, null]);
  assert.equal(p.itens.map((i: any) => [i.tipo, i.produto_id, i.variacao_id, i.nome, i.quantidade, i.situacao, i.etapa]), [
    ['catalogo', produto.produtoId, produto.variacoes[0]?.id, `Produto ${produto.sku} Variação 0`, 3, 'ativo', null],
    ['avulso', null, null, 'Suporte sob medida', 2, 'ativo', null],
  ]);
  assert.equal(await eventosDe(app.db.pool, conta.contaId, p.id), [
    { tipo: 'pedido_producao.criado', dados: { objeto: 'pedido_producao', id: p.id, codigo: p.codigo, tipo: 'cliente' , ...SEM_REFERENCIAS} },
  ]);
  assert.equal((await request(`${app.baseUrl}/pedidos-producao/${p.id}`, { token: conta.token })).body, p);
});

test('a stock order has no customer, payment or value; codes are sequential per account', async () => {
  const a = await post({ tipo: 'estoque', itens: [{ tipo: 'catalogo', variacao_id: produto.variacoes[0]?.id, quantidade: 20 }] });
  const b = await post({ tipo: 'estoque', prioridade: 'normal', itens: [{ tipo: 'avulso', nome: 'Reposição', quantidade: 5 }] });
  assert.is(a.status, 201);
  assert.equal([a.body.cliente_nome, a.body.pagamento_situacao, 'valor_centavos' in a.body], [null, null, false]);
  assert.is(Number(b.body.codigo.slice(3)), Number(a.body.codigo.slice(3)) + 1);
  const deOutra = await post({ tipo: 'estoque', itens: [{ tipo: 'avulso', nome: 'x', quantidade: 1 }] }, outra.token);
  assert.is(deOutra.body.codigo, 'OP-000001');
  assert.equal((await eventosDe(app.db.pool, conta.contaId, a.body.id)).map((e) => e.dados.tipo), ['estoque']);
});

test("from an approved quotation: its items (all by default, or chosen), its customer and its total", async () => {
  const cotacaoId = await cotacaoAprovada(app.db.pool, conta.contaId, {
    clienteNome: 'Estúdio Prisma',
    itens: [
      { tipo: 'catalogo', variacaoId: produto.variacoes[0]?.id ?? '', quantidade: 4, precoUnitarioCentavos: 5900, nome: 'Vaso M' },
      { tipo: 'avulso', nome: 'Peça sob medida', quantidade: 1, precoUnitarioCentavos: 12000 },
    ],
  });
  const cotacao = await cotacaoApi(cotacaoId);
  const todos = await post({ tipo: 'cliente', cotacao_id: cotacaoId });
  assert.is(todos.status, 201, todos.text);
  assert.equal([todos.body.origem, todos.body.cotacao_id, todos.body.cliente_nome, todos.body.valor_centavos], ['api', cotacaoId, 'Estúdio Prisma', 35600]);
  assert.equal(todos.body.itens.map((i: any) => [i.tipo, i.nome, i.quantidade, i.produto_id]), [
    ['cotacao', 'Vaso M', 4, produto.produtoId], ['cotacao', 'Peça sob medida', 1, null],
  ]);
  const parcial = await post({
    tipo: 'cliente', cotacao_id: cotacaoId, cliente_nome: 'Prisma (filial)', valor_centavos: 100,
    itens: [{ tipo: 'cotacao', cotacao_item_id: cotacao.itens[0].id, quantidade: 2 }, { tipo: 'avulso', nome: 'Brinde', quantidade: 1 }],
  });
  assert.is(parcial.status, 201, parcial.text);
  assert.equal(parcial.body.itens.map((i: any) => [i.tipo, i.nome, i.quantidade]), [['cotacao', 'Vaso M', 2], ['avulso', 'Brinde', 1]]);
  assert.equal([parcial.body.cliente_nome, parcial.body.valor_centavos], ['Prisma (filial)', 100]);
  const lista = await request(`${app.baseUrl}/pedidos-producao?cotacao_id=${cotacaoId}`, { token: conta.token });
  assert.equal(lista.body.dados.map((p: { id: string }) => p.id), [todos.body.id, parcial.body.id]);
});

test('a quotation that is not approved is 422 cotacao_nao_aprovada; one of another account is 422 referencia_invalida', async () => {
  for (const passos of [[], ['enviada'], ['enviada', 'recusada'], ['cancelada']] as const) {
    const id = await novaCotacao(app.db.pool, conta.contaId);
    await levarA(app.db.pool, conta.contaId, id, ...passos);
    const res = await post({ tipo: 'cliente', cotacao_id: id });
    assert.is(res.status, 422, passos.join());
    assert.is(res.body.codigo, 'saldo_insuficiente');
    assert.is(res.body.motivo, 'cotacao_nao_aprovada');
  }
  const alheia = await cotacaoAprovada(app.db.pool, outra.contaId);
  for (const id of [alheia, crypto.randomUUID()]) {
    const res = await post({ tipo: 'cliente', cotacao_id: id });
    assert.is(res.status, 422);
    assert.is(res.body.motivo, 'referencia_invalida');
  }
});

test("items referring to another account's or unknown records are 422 referencia_invalida and nothing is created", async () => {
  const antes = (await eventos(app.db.pool, conta.contaId, 'pedido_producao.criado')).length;
  const daOutra = await criarProdutoCompleto(app.db.pool, outra.contaId);
  const inativo = await criarProdutoCompleto(app.db.pool, conta.contaId, { ativo: false });
  const minha = await cotacaoAprovada(app.db.pool, conta.contaId);
  const outraMinha = await cotacaoAprovada(app.db.pool, conta.contaId);
  const itemDeOutraCotacao = (await cotacaoApi(outraMinha)).itens[0].id;
  const alheia = await cotacaoAprovada(app.db.pool, outra.contaId);
  const itemAlheio = String(await app.db.pool.oneFirst(sql.unsafe`SELECT id FROM cotacao_itens WHERE cotacao_id = ${alheia} LIMIT 1`));
  const casos = [
    { tipo: 'estoque', itens: [{ tipo: 'catalogo', variacao_id: daOutra.variacoes[0]?.id, quantidade: 1 }] },
    { tipo: 'estoque', itens: [{ tipo: 'catalogo', variacao_id: crypto.randomUUID(), quantidade: 1 }] },
    { tipo: 'estoque', itens: [{ tipo: 'catalogo', variacao_id: inativo.variacoes[0]?.id, quantidade: 1 }] },
    { tipo: 'cliente', cotacao_id: minha, itens: [{ tipo: 'cotacao', cotacao_item_id: itemDeOutraCotacao }] },
    { tipo: 'cliente', cotacao_id: minha, itens: [{ tipo: 'cotacao', cotacao_item_id: itemAlheio }] },
  ];
  for (const body of casos) {
    const res = await post(body);
    assert.is(res.status, 422, JSON.stringify(body));
    assert.is(res.body.motivo, 'referencia_invalida', JSON.stringify(body));
  }
  assert.is((await eventos(app.db.pool, conta.contaId, 'pedido_producao.criado')).length, antes);
});

test('invalid combinations are 400 naming the field', async () => {
  const avulso = [{ tipo: 'avulso', nome: 'x', quantidade: 1 }];
  const cotacaoId = await cotacaoAprovada(app.db.pool, conta.contaId);
  const casos: [unknown, string][] = [
    [{ tipo: 'estoque', cliente_nome: 'Ana', itens: avulso }, 'cliente_nome'],
    [{ tipo: 'estoque', pagamento_situacao: 'pago', itens: avulso }, 'pagamento_situacao'],
    [{ tipo: 'estoque', valor_centavos: 1, itens: avulso }, 'valor_centavos'],
    [{ tipo: 'estoque', cotacao_id: cotacaoId }, 'cotacao_id'],
    [{ tipo: 'cliente', itens: avulso }, 'cliente_nome'],
    [{ tipo: 'cliente', cliente_nome: 'Ana' }, 'itens'],
    [{ tipo: 'cliente', cliente_nome: 'Ana', itens: [] }, 'itens'],
    [{ tipo: 'cliente', cliente_nome: 'Ana', itens: [{ tipo: 'cotacao', cotacao_item_id: crypto.randomUUID() }] }, 'itens[0].tipo'],
    [{ tipo: 'cliente', cliente_nome: 'Ana', origem: 'manual', itens: avulso }, 'origem'],
    [{ tipo: 'cliente', cliente_nome: 'Ana', situacao: 'em_producao', itens: avulso }, 'situacao'],
    [{ tipo: 'cliente', cliente_nome: 'Ana', valor_centavos: -1, itens: avulso }, 'valor_centavos'],
    [{ tipo: 'cliente', cliente_nome: 'Ana', prazo: 'amanhã', itens: avulso }, 'prazo'],
    [{ tipo: 'cliente', cliente_nome: 'Ana', itens: [{ tipo: 'avulso', nome: 'x', quantidade: 100000 }] }, 'itens[0].quantidade'],
    [{ tipo: 'revenda', itens: avulso }, 'tipo'],
  ];
  for (const [body, campo] of casos) {
    const res = await post(body);
    assert.is(res.status, 400, JSON.stringify(body));
    assert.ok(res.body.erros.some((e: { campo: string }) => e.campo === campo), `${campo}: ${JSON.stringify(res.body.erros)}`);
  }
});

test('valor_centavos is cost data: writing it needs custos.ver (403); without it the order is created and shown without it', async () => {
  const usuario = String(await app.db.pool.oneFirst(sql.unsafe`
    INSERT INTO usuarios (conta_id, nome, email, permissoes)
    VALUES (${conta.contaId}, 'Produção', 'producao@teste.invalid', ${sql.array(PERMISSOES.filter((p) => p !== 'custos.ver'), 'text')})
    RETURNING id`));
  const chave = await addKey(app.db.pool, { contaId: conta.contaId, usuarioId: usuario });
  const comValor = await post({ tipo: 'cliente', cliente_nome: 'Ana', valor_centavos: 100, itens: [{ tipo: 'avulso', nome: 'x', quantidade: 1 }] }, chave.token);
  assert.is(comValor.status, 403);
  assert.is(comValor.body.codigo, 'escopo_insuficiente');
  const cotacaoId = await cotacaoAprovada(app.db.pool, conta.contaId);
  const semValor = await post({ tipo: 'cliente', cotacao_id: cotacaoId }, chave.token);
  assert.is(semValor.status, 201);
  assert.not.ok('valor_centavos' in semValor.body);
  const visto = await request(`${app.baseUrl}/pedidos-producao/${semValor.body.id}`, { token: conta.token });
  assert.is(visto.body.valor_centavos, 3000, "the quotation's total was kept, for those who may see it");
});

test('creating needs pedidos:escrever and producao.editar', async () => {
  const body = { tipo: 'estoque', itens: [{ tipo: 'avulso', nome: 'x', quantidade: 1 }] };
  const leitor = await addKey(app.db.pool, conta, { escopos: ['pedidos:ler'] });
  assert.is((await post(body, leitor.token)).status, 403);
  const semPermissao = await createAccount(app.db.pool, { permissoes: ['producao.ver'] });
  assert.is((await post(body, semPermissao.token)).status, 403);
});

test('Idempotency-Key: the repetition answers the same order, replayed, and creates once', async () => {
  const body = { tipo: 'estoque', itens: [{ tipo: 'avulso', nome: 'Lote idempotente', quantidade: 7 }] };
  const first = await post(body, conta.token, { 'idempotency-key': 'op-1' });
  assert.is(first.status, 201);
  const again = await post(body, conta.token, { 'idempotency-key': 'op-1' });
  assert.is(again.status, 201);
  assert.is(again.headers.get('idempotent-replayed'), 'true');
  assert.equal(again.body, first.body);
  const count = await app.db.pool.oneFirst(sql.unsafe`SELECT count(*)::int FROM pedido_itens WHERE conta_id = ${conta.contaId} AND nome = 'Lote idempotente'`);
  assert.is(count, 1);
  assert.is((await eventosDe(app.db.pool, conta.contaId, first.body.id)).length, 1, 'one pedido_producao.criado');
  const conflict = await post({ ...body, prioridade: 'urgente' }, conta.token, { 'idempotency-key': 'op-1' });
  assert.is(conflict.status, 422);
  assert.is(conflict.body.codigo, 'idempotencia_conflito');
  const concorrentes = await Promise.all(Array.from({ length: 8 }, () => post({ tipo: 'estoque', itens: [{ tipo: 'avulso', nome: 'Concorrente', quantidade: 1 }] }, conta.token, { 'idempotency-key': 'op-2' })));
  assert.ok(concorrentes.every((r) => r.status === 201 || r.status === 409), concorrentes.map((r) => r.status).join());
  const criados = await app.db.pool.oneFirst(sql.unsafe`SELECT count(*)::int FROM pedido_itens WHERE conta_id = ${conta.contaId} AND nome = 'Concorrente'`);
  assert.is(criados, 1);
});

test('a creation costs 5 units, its idempotent repetition nothing in the month', async () => {
  const medidor = await createAccount(app.db.pool, { plano: await planoMedidor(app.db.pool) });
  await request(`${app.baseUrl}/saude`, { token: medidor.token });
  const body = { tipo: 'estoque', itens: [{ tipo: 'avulso', nome: 'x', quantidade: 1 }] };
  for (const [esperado, mes] of [[201, 5], [201, 0]] as const) {
    await settled(app);
    const antes = await lerUso(app.db.pool, medidor.contaId, medidor.chaveId);
    const res = await post(body, medidor.token, { 'idempotency-key': 'custo-op' });
    await settled(app);
    const custo = cobrado(antes, await lerUso(app.db.pool, medidor.contaId, medidor.chaveId));
    assert.equal([res.status, custo.mes, custo.rajada], [esperado, mes, mes === 5 ? 5 : 1]);
  }
});

test.run();
