// GET /pedidos-producao/{id} exactly as contract §4.1 and §2.1: every field and its nullability,
// valor_centavos only for customer orders and creators holding custos.ver, the strong ETag and
// its 304 that costs 1 in the burst and nothing in the month, 404 across accounts; the list.
import { parseList } from 'structured-headers';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { comOrigem } from '#shared/db/origem.ts';
import { sql } from '#shared/db/pool.ts';
import { criarEtapa, mudarEtapaItem, mudarPagamento, mudarSituacaoItem, mudarSituacaoPedido, renomearEtapa } from '#shared/db/producao.ts';
import { PERMISSOES } from '#shared/domain/acesso.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { criarProdutoCompleto, semLimites } from './helpers/catalogo.ts';
import { cotacaoAprovada, novoPedido } from './helpers/cotacoes.ts';
import { addKey, createAccount, type TestAccount } from './helpers/fixtures.ts';
import { request } from './helpers/http.ts';
import { cobrado, lerUso, planoMedidor, settled } from './helpers/uso.ts';

const test = suite('production orders: reading');
let app: TestApp;
let conta: TestAccount;
let semCustos: { token: string };
let outra: TestAccount;

const get = (path: string, token = conta.token, headers: Record<string, string> = {}) => request(`${app.baseUrl}${path}`, { token, headers });

test.before(async () => {
  app = await startTestApp();
  await semLimites(app.db.pool);
  conta = await createAccount(app.db.pool);
  // A second user of the same account without custos.ver, with a key of their own.
  const usuario = String(await app.db.pool.oneFirst(sql.unsafe`
    INSERT INTO usuarios (conta_id, nome, email, permissoes)
    VALUES (${conta.contaId}, 'Sem custos', 'sem-custos@teste.invalid', ${sql.array(PERMISSOES.filter((p) => p !== 'custos.ver'), 'text')})
    RETURNING id`));
  semCustos = await addKey(app.db.pool, { contaId: conta.contaId, usuarioId: usuario });
  outra = await createAccount(app.db.pool);
});
test.after(async () => app.stop());

const CAMPOS = ['id', 'codigo', 'tipo', 'origem', 'cotacao_id', 'cliente_nome', 'prazo', 'prioridade', 'situacao',
  'pagamento_situacao', 'itens', 'criado_em', 'atualizado_em', 'finalizado_em', 'referencia_externa', 'metadados'];
const CAMPOS_ITEM = ['id', 'tipo', 'produto_id', 'variacao_id', 'nome', 'quantidade', 'situacao', 'etapa'].sort();

test('a customer order from a quotation shows every field of §2.1, valor_centavos to a creator holding custos.ver', async () => {
  const produto = await criarProdutoCompleto(app.db.pool, conta.contaId);
  const cotacaoId = await cotacaoAprovada(app.db.pool, conta.contaId, {
    clienteNome: 'Estúdio Prisma',
    itens: [
      { tipo: 'catalogo', variacaoId: produto.variacoes[0]?.id ?? '', quantidade: 4, precoUnitarioCentavos: 5900 },
      { tipo: 'avulso', nome: 'Peça sob medida', quantidade: 1, precoUnitarioCentavos: 12000 },
    ],
  });
  const id = await novoPedido(app.db.pool, conta.contaId, { origem: 'cotacao', cotacaoId, clienteNome: undefined, valorCentavos: undefined, itens: undefined, prazo: '2999-01-31', prioridade: 'urgente' });
  const etapa = await comOrigem(app.db.pool, 'tela', (tx) => criarEtapa(tx, conta.contaId, 'Impressão', null));
  const res = await get(`/pedidos-producao/${id}`);
  assert.is(res.status, 200);
  const p = res.body;
  assert.equal(Object.keys(p), [...CAMPOS, 'valor_centavos']);
  assert.match(p.codigo, /^OP-\d{6}$/);
  assert.equal([p.tipo, p.origem, p.cotacao_id, p.cliente_nome, p.prazo, p.prioridade, p.situacao, p.pagamento_situacao, p.finalizado_em],
    ['cliente', 'cotacao', cotacaoId, 'Estúdio Prisma', '2999-01-31', 'urgente', 'aberto', 'nao_pago', null]);
  assert.is(p.valor_centavos, 4 * 5900 + 12000, "the quotation's total");
  for (const item of p.itens) assert.equal(Object.keys(item).sort(), CAMPOS_ITEM);
  assert.equal(p.itens.map((i: any) => [i.tipo, i.produto_id, i.variacao_id, i.quantidade, i.situacao, i.etapa]), [
    ['cotacao', produto.produtoId, produto.variacoes[0]?.id, 4, 'ativo', null],
    ['cotacao', null, null, 1, 'ativo', null],
  ]);
  await comOrigem(app.db.pool, 'tela', (tx) => mudarEtapaItem(tx, conta.contaId, p.itens[0].id, etapa.id));
  assert.is((await get(`/pedidos-producao/${id}`)).body.itens[0].etapa, 'Impressão', 'the stage by name');

  const semValor = await get(`/pedidos-producao/${id}`, semCustos.token);
  assert.is(semValor.status, 200);
  assert.equal(Object.keys(semValor.body), CAMPOS, 'valor_centavos absent, not null, without custos.ver');
  assert.is.not(semValor.headers.get('etag'), (await get(`/pedidos-producao/${id}`)).headers.get('etag'), 'two representations, two tags');
});

test('a stock order has cliente_nome and pagamento_situacao null and never valor_centavos; a finished one has finalizado_em', async () => {
  const id = await novoPedido(app.db.pool, conta.contaId, { tipo: 'estoque', origem: 'repor', clienteNome: null, valorCentavos: null });
  await comOrigem(app.db.pool, 'tela', async (tx) => {
    await mudarSituacaoPedido(tx, conta.contaId, id, 'em_producao');
    await mudarSituacaoPedido(tx, conta.contaId, id, 'finalizado');
  });
  const res = await get(`/pedidos-producao/${id}`);
  assert.equal(Object.keys(res.body), CAMPOS);
  assert.equal([res.body.tipo, res.body.origem, res.body.cotacao_id, res.body.cliente_nome, res.body.pagamento_situacao, res.body.prazo],
    ['estoque', 'repor', null, null, null, null]);
  assert.is(res.body.situacao, 'finalizado');
  assert.match(res.body.finalizado_em, /T.*(Z|[+-]\d{2}:\d{2})$/);
  const semValor = await novoPedido(app.db.pool, conta.contaId, { valorCentavos: null });
  assert.equal(Object.keys((await get(`/pedidos-producao/${semValor}`)).body), CAMPOS, 'a customer order without a value has none to show');
});

test('the ETag moves with every change of the order or its items, and only then', async () => {
  const id = await novoPedido(app.db.pool, conta.contaId, { itens: [{ tipo: 'avulso', nome: 'A', quantidade: 1 }, { tipo: 'avulso', nome: 'B', quantidade: 2 }] });
  const etapa = await comOrigem(app.db.pool, 'tela', (tx) => criarEtapa(tx, conta.contaId, `Etapa ${id.slice(0, 6)}`, null));
  const itens = (await get(`/pedidos-producao/${id}`)).body.itens as { id: string }[];
  const mudancas: [string, () => Promise<unknown>][] = [
    ['stage of an item', () => comOrigem(app.db.pool, 'tela', (tx) => mudarEtapaItem(tx, conta.contaId, itens[0]?.id ?? '', etapa.id))],
    ['stage renamed', () => comOrigem(app.db.pool, 'tela', (tx) => renomearEtapa(tx, conta.contaId, etapa.id, `${etapa.nome} 2`))],
    ['item finished', () => comOrigem(app.db.pool, 'tela', (tx) => mudarSituacaoItem(tx, conta.contaId, itens[1]?.id ?? '', 'finalizado'))],
    ['payment', () => comOrigem(app.db.pool, 'tela', (tx) => mudarPagamento(tx, conta.contaId, id, 'sinal_pago'))],
    ['situacao', () => comOrigem(app.db.pool, 'tela', (tx) => mudarSituacaoPedido(tx, conta.contaId, id, 'em_producao'))],
  ];
  for (const [what, change] of mudancas) {
    const antes = await get(`/pedidos-producao/${id}`);
    const etag = antes.headers.get('etag') ?? '';
    assert.is((await get(`/pedidos-producao/${id}`, conta.token, { 'if-none-match': etag })).status, 304, `before: ${what}`);
    await change();
    const depois = await get(`/pedidos-producao/${id}`, conta.token, { 'if-none-match': etag });
    assert.is(depois.status, 200, what);
    assert.ok(Date.parse(depois.body.atualizado_em) >= Date.parse(antes.body.atualizado_em), `${what}: atualizado_em`);
  }
  const final = (await get(`/pedidos-producao/${id}`)).body;
  assert.equal(final.itens.map((i: any) => [i.etapa, i.situacao]), [[`Etapa ${id.slice(0, 6)} 2`, 'ativo'], [null, 'finalizado']]);
});

test('a 304 has no body and costs 1 in the burst and nothing in the month (monthly_usage and the RateLimit header)', async () => {
  await app.db.pool.query(sql.unsafe`UPDATE planos SET chamadas_por_mes = 1000 WHERE id = ${await planoMedidor(app.db.pool)}`);
  const medidor = await createAccount(app.db.pool, { plano: 'medidor' });
  const id = await novoPedido(app.db.pool, medidor.contaId);
  const mes = (res: Awaited<ReturnType<typeof get>>) => {
    const item = parseList(res.headers.get('ratelimit') ?? '').find(([name]) => String(name) === 'mes');
    assert.ok(item, `RateLimit names the month, the limit closest to exhaustion: ${res.headers.get('ratelimit')}`);
    return Number(item?.[1].get('r'));
  };
  const primeira = await get(`/pedidos-producao/${id}`, medidor.token);
  const etag = primeira.headers.get('etag') ?? '';
  await settled(app);
  const antes = await lerUso(app.db.pool, medidor.contaId, medidor.chaveId);
  const res = await get(`/pedidos-producao/${id}`, medidor.token, { 'if-none-match': etag });
  await settled(app);
  const custo = cobrado(antes, await lerUso(app.db.pool, medidor.contaId, medidor.chaveId));
  assert.is(res.status, 304);
  assert.is(res.text, '');
  assert.is(res.headers.get('etag'), etag);
  assert.ok(res.headers.get('ratelimit-policy'));
  assert.equal(custo, { mes: 0, rajada: 1 });
  const depois = await get(`/pedidos-producao/${id}`, medidor.token);
  assert.is(depois.status, 200);
  assert.is(mes(depois), mes(primeira) - 1, 'of three calls only the two 200s count in the month');
});

test('If-None-Match longer than 100 characters is 400; a list of tags or * matches; another account gets 404', async () => {
  const id = await novoPedido(app.db.pool, conta.contaId);
  const etag = (await get(`/pedidos-producao/${id}`)).headers.get('etag') ?? '';
  assert.is((await get(`/pedidos-producao/${id}`, conta.token, { 'if-none-match': `"x", ${etag}` })).status, 304);
  assert.is((await get(`/pedidos-producao/${id}`, conta.token, { 'if-none-match': '*' })).status, 304);
  const longo = await get(`/pedidos-producao/${id}`, conta.token, { 'if-none-match': `"${'a'.repeat(99)}"` });
  assert.is(longo.status, 400);
  assert.is(longo.body.codigo, 'dados_invalidos');
  const alheio = await get(`/pedidos-producao/${id}`, outra.token);
  assert.is(alheio.status, 404);
  assert.is(alheio.body.codigo, 'nao_encontrado');
  assert.is((await get(`/pedidos-producao/${id}`, outra.token, { 'if-none-match': etag })).status, 404, 'not even a 304');
  assert.is((await get(`/pedidos-producao/${crypto.randomUUID()}`)).status, 404);
});

test('a 304 admission confirmed is answered without reading the order; * and a tag of the other representation read it', async () => {
  const id = await novoPedido(app.db.pool, conta.contaId);
  const etag = (await get(`/pedidos-producao/${id}`)).headers.get('etag') ?? '';
  // With the order's read broken (a column it selects renamed), only what does not read it answers.
  await app.db.pool.query(sql.unsafe`ALTER TABLE pedidos_producao RENAME COLUMN cliente_nome TO cliente_nome_fora`);
  try {
    const confirmado = await get(`/pedidos-producao/${id}`, conta.token, { 'if-none-match': etag });
    assert.is(confirmado.status, 304);
    assert.is(confirmado.headers.get('etag'), etag);
    assert.is((await get(`/pedidos-producao/${id}`, conta.token, { 'if-none-match': `"x", ${etag}` })).status, 304);
    assert.is((await get(`/pedidos-producao/${id}`, conta.token, { 'if-none-match': '*' })).status, 500, '* reads the order');
    assert.is((await get(`/pedidos-producao/${id}`, semCustos.token, { 'if-none-match': etag })).status, 500,
      'a tag of the body with costs, from a caller who sees it without them, reads the order');
  } finally {
    await app.db.pool.query(sql.unsafe`ALTER TABLE pedidos_producao RENAME COLUMN cliente_nome_fora TO cliente_nome`);
  }
  const outroCorpo = await get(`/pedidos-producao/${id}`, semCustos.token, { 'if-none-match': etag });
  assert.is(outroCorpo.status, 200);
  assert.is.not(outroCorpo.headers.get('etag'), etag);
});

test('reading needs pedidos:ler and producao.ver', async () => {
  const id = await novoPedido(app.db.pool, conta.contaId);
  const chave = await addKey(app.db.pool, conta, { escopos: ['cotacoes:ler', 'pedidos:escrever'] });
  assert.is((await get(`/pedidos-producao/${id}`, chave.token)).status, 403);
  assert.is((await get('/pedidos-producao', chave.token)).status, 403);
  const semPermissao = await createAccount(app.db.pool, { permissoes: ['cotacoes.ver'] });
  const res = await get('/pedidos-producao', semPermissao.token);
  assert.is(res.status, 403);
  assert.is(res.body.codigo, 'escopo_insuficiente');
});

test('the list pages through the account only, with every filter, and valor_centavos by the same rule', async () => {
  const nova = await createAccount(app.db.pool);
  const cotacaoId = await cotacaoAprovada(app.db.pool, nova.contaId);
  const a = await novoPedido(app.db.pool, nova.contaId, { origem: 'cotacao', cotacaoId, itens: undefined });
  const b = await novoPedido(app.db.pool, nova.contaId, { tipo: 'estoque', origem: 'repor', clienteNome: null, valorCentavos: null, prioridade: 'urgente' });
  const c = await novoPedido(app.db.pool, nova.contaId, { prioridade: 'urgente' });
  await comOrigem(app.db.pool, 'tela', (tx) => mudarSituacaoPedido(tx, nova.contaId, c, 'em_producao'));
  await novoPedido(app.db.pool, outra.contaId);
  const ids = async (q: string) => {
    const res = await get(`/pedidos-producao${q}`, nova.token);
    assert.is(res.status, 200, q);
    return res.body.dados.map((p: { id: string }) => p.id);
  };
  assert.equal(await ids(''), [a, b, c]);
  assert.equal(await ids('?limite=1'), [a]);
  const pagina = await get('/pedidos-producao?limite=2', nova.token);
  assert.equal(await ids(`?limite=2&cursor=${pagina.body.proximo_cursor}`), [c]);
  assert.equal(await ids('?situacao=em_producao'), [c]);
  assert.equal(await ids('?tipo=estoque'), [b]);
  assert.equal(await ids('?prioridade=urgente'), [b, c]);
  assert.equal(await ids(`?cotacao_id=${cotacaoId}`), [a]);
  assert.equal(await ids('?prioridade=urgente&tipo=cliente'), [c]);
  const desde = new Date(Date.now() - 1).toISOString();
  await new Promise((r) => setTimeout(r, 5));
  await comOrigem(app.db.pool, 'tela', (tx) => mudarPagamento(tx, nova.contaId, a, 'pago'));
  assert.equal(await ids(`?atualizado_desde=${desde}`), [a]);
  const lista = (await get('/pedidos-producao', nova.token)).body.dados;
  assert.equal(lista.map((p: Record<string, unknown>) => 'valor_centavos' in p), [true, false, true]);
  for (const q of ['situacao=pronto', 'tipo=x', 'cotacao_id=abc', 'cliente_nome=Ana']) {
    assert.is((await get(`/pedidos-producao?${q}`, nova.token)).status, 400, q);
  }
  const usuario = String(await app.db.pool.oneFirst(sql.unsafe`
    INSERT INTO usuarios (conta_id, nome, email, permissoes) VALUES (${nova.contaId}, 'Leitor', 'leitor@lista.invalid', '{producao.ver}') RETURNING id`));
  const leitor = await addKey(app.db.pool, { contaId: nova.contaId, usuarioId: usuario }, { escopos: ['pedidos:ler'] });
  const semValor = (await get('/pedidos-producao', leitor.token)).body.dados;
  assert.ok(semValor.every((p: Record<string, unknown>) => !('valor_centavos' in p)));
});

test('text of every kind comes back exactly as it was stored, alone and in the list (PostgreSQL writes the JSON)', async () => {
  const hostil = 'Zé "aspas" \\ barra / \u0001\u001f\ttab\nlinha \u2028 ç 🚀 </script>';
  const metadados = { 'chave "com" aspas': hostil, 'ç\\': 'a|b', vazio: '' };
  const id = await novoPedido(app.db.pool, conta.contaId, {
    clienteNome: hostil, referenciaExterna: `ERP|${hostil}`.slice(0, 100), metadados,
    itens: [{ tipo: 'avulso', nome: hostil.slice(0, 100), quantidade: 7 }],
  });
  const { status, body } = await get(`/pedidos-producao/${id}`);
  assert.is(status, 200);
  assert.is(body.cliente_nome, hostil);
  assert.is(body.referencia_externa, `ERP|${hostil}`.slice(0, 100));
  assert.equal(body.metadados, metadados);
  assert.is(body.itens[0].nome, hostil.slice(0, 100));
  assert.is(body.valor_centavos, 12345);
  const lista = (await get(`/pedidos-producao?referencia_externa=${encodeURIComponent(body.referencia_externa)}`)).body.dados;
  assert.equal(lista, [body]);
});

test.run();
