// GET/POST /cotacoes, GET /cotacoes/{id}: creation as a draft with prices from the channel's
// tiers, every field and its nullability, ETags, filters, tenant isolation, idempotent creation.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { alterarCanal } from '#shared/db/catalogo.ts';
import { sql } from '#shared/db/pool.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { criarCanalDeTeste, criarProdutoCompleto, semLimites, type ProdutoFixture } from './helpers/catalogo.ts';
import { eventos, levarA, novaCotacao, SEM_REFERENCIAS } from './helpers/cotacoes.ts';
import { addKey, createAccount, type TestAccount } from './helpers/fixtures.ts';
import { request } from './helpers/http.ts';
import { cobrado, lerUso, planoMedidor, settled } from './helpers/uso.ts';

const test = suite('quotations over the API');
let app: TestApp;
let conta: TestAccount;
let outra: TestAccount;
let canal: string;
let produto: ProdutoFixture;
let produtoDaOutra: ProdutoFixture;

const get = (path: string, token = conta.token, headers: Record<string, string> = {}) => request(`${app.baseUrl}${path}`, { token, headers });
// Every creating POST requires an Idempotency-Key: a new one per call unless a test gives its own.
const post = (path: string, body: unknown, token = conta.token, headers: Record<string, string> = {}) =>
  request(`${app.baseUrl}${path}`, { token, body, headers: { 'idempotency-key': crypto.randomUUID(), ...headers } });

test.before(async () => {
  app = await startTestApp();
  await semLimites(app.db.pool);
  conta = await createAccount(app.db.pool);
  outra = await createAccount(app.db.pool);
  canal = await criarCanalDeTeste(app.db.pool, conta.contaId, 'Loja');
  produto = await criarProdutoCompleto(app.db.pool, conta.contaId, {
    variacoes: [{}, {}],
    precos: [{ canalId: canal, faixas: [[1, 1000], [10, 900], [50, 800]] }],
  });
  produtoDaOutra = await criarProdutoCompleto(app.db.pool, outra.contaId, {});
});
test.after(async () => app.stop());

const CAMPOS = ['id', 'codigo', 'status', 'versao', 'cliente_nome', 'canal_id', 'validade', 'observacao', 'itens',
  'valor_total_centavos', 'enviada_em', 'criado_em', 'atualizado_em', 'referencia_externa', 'metadados'].sort();
const CAMPOS_ITEM = ['id', 'tipo', 'produto_id', 'variacao_id', 'nome', 'quantidade', 'preco_unitario_centavos'].sort();

test('creates a draft with every field, catalog items priced from the tier of their quantity and free items', async () => {
  const [v0, v1] = produto.variacoes;
  const res = await post('/cotacoes', {
    cliente_nome: '  Marina Souza ',
    canal_id: canal,
    validade: '2999-12-31',
    observacao: 'Entrega em mãos',
    itens: [
      { tipo: 'catalogo', variacao_id: v0?.id, quantidade: 9 },
      { tipo: 'catalogo', variacao_id: v0?.id, quantidade: 10 },
      { tipo: 'catalogo', variacao_id: v1?.id, quantidade: 60, preco_unitario_centavos: 500, nome: 'Sob encomenda' },
      { tipo: 'avulso', nome: 'Modelagem', quantidade: 1, preco_unitario_centavos: 20000 },
    ],
  });
  assert.is(res.status, 201, res.text);
  const c = res.body;
  assert.equal(Object.keys(c).sort(), CAMPOS);
  assert.match(c.codigo, /^COT-\d{6}$/);
  assert.is(c.status, 'rascunho');
  assert.is(c.versao, 1);
  assert.is(c.cliente_nome, 'Marina Souza', 'trimmed');
  assert.is(c.canal_id, canal);
  assert.is(c.validade, '2999-12-31');
  assert.is(c.observacao, 'Entrega em mãos');
  assert.is(c.enviada_em, null);
  assert.match(c.criado_em, /T.*(Z|[+-]\d{2}:\d{2})$/);
  for (const item of c.itens) assert.equal(Object.keys(item).sort(), CAMPOS_ITEM);
  assert.equal(c.itens.map((i: any) => [i.tipo, i.quantidade, i.preco_unitario_centavos]), [
    ['catalogo', 9, 1000], ['catalogo', 10, 900], ['catalogo', 60, 500], ['avulso', 1, 20000],
  ]);
  assert.is(c.itens[0].produto_id, produto.produtoId);
  assert.is(c.itens[0].variacao_id, v0?.id);
  assert.is(c.itens[0].nome, `Produto ${produto.sku} Variação 0`, 'product and variation names');
  assert.is(c.itens[2].nome, 'Sob encomenda');
  assert.is(c.itens[3].produto_id, null);
  assert.is(c.itens[3].variacao_id, null);
  assert.is(c.valor_total_centavos, 9 * 1000 + 10 * 900 + 60 * 500 + 20000);
  assert.equal(await eventos(app.db.pool, conta.contaId, 'cotacao.criada'), [
    { tipo: 'cotacao.criada', dados: { objeto: 'cotacao', id: c.id, codigo: c.codigo, status: 'rascunho' , ...SEM_REFERENCIAS} },
  ]);
  const lida = await get(`/cotacoes/${c.id}`);
  assert.equal(lida.body, c, 'GET shows what POST answered');
});

test('codes are sequential per account, and a draft without channel, validity or notes has them null', async () => {
  const a = await post('/cotacoes', { cliente_nome: 'A', itens: [{ tipo: 'avulso', nome: 'x', quantidade: 1, preco_unitario_centavos: 0 }] });
  const b = await post('/cotacoes', { cliente_nome: 'B', itens: [{ tipo: 'avulso', nome: 'x', quantidade: 1, preco_unitario_centavos: 0 }] });
  assert.is(Number(b.body.codigo.slice(4)), Number(a.body.codigo.slice(4)) + 1);
  const deOutra = await post('/cotacoes', { cliente_nome: 'C', itens: [{ tipo: 'avulso', nome: 'x', quantidade: 1, preco_unitario_centavos: 0 }] }, outra.token);
  assert.is(deOutra.body.codigo, 'COT-000001', 'another account counts from 1');
  for (const campo of ['canal_id', 'validade', 'observacao', 'enviada_em']) assert.is(a.body[campo], null, campo);
  assert.is(a.body.valor_total_centavos, 0);
});

test('a catalog item without a price needs a channel with a tier for its quantity: 422 preco_indisponivel', async () => {
  const v0 = produto.variacoes[0]?.id;
  const semCanal = await post('/cotacoes', { cliente_nome: 'X', itens: [{ tipo: 'catalogo', variacao_id: v0, quantidade: 1 }] });
  assert.is(semCanal.status, 422);
  assert.is(semCanal.body.codigo, 'saldo_insuficiente');
  assert.is(semCanal.body.motivo, 'preco_indisponivel');
  const outroCanal = await criarCanalDeTeste(app.db.pool, conta.contaId, 'Atacado');
  await app.db.pool.query(sql.unsafe`
    INSERT INTO precos (conta_id, variacao_id, canal_id, a_partir_de, preco_centavos) VALUES (${conta.contaId}, ${v0 ?? ''}, ${outroCanal}, 20, 700)`);
  const abaixoDaFaixa = await post('/cotacoes', { cliente_nome: 'X', canal_id: outroCanal, itens: [{ tipo: 'catalogo', variacao_id: v0, quantidade: 19 }] });
  assert.is(abaixoDaFaixa.status, 422);
  assert.is(abaixoDaFaixa.body.motivo, 'preco_indisponivel');
  assert.match(abaixoDaFaixa.body.detail, 'itens[0]');
  const naFaixa = await post('/cotacoes', { cliente_nome: 'X', canal_id: outroCanal, itens: [{ tipo: 'catalogo', variacao_id: v0, quantidade: 20 }] });
  assert.is(naFaixa.status, 201);
  assert.is(naFaixa.body.itens[0].preco_unitario_centavos, 700);
});

test("references to another account's or unknown records, or inactive ones, are 422 referencia_invalida and create nothing", async () => {
  const antes = (await eventos(app.db.pool, conta.contaId, 'cotacao.criada')).length;
  const canalDaOutra = await criarCanalDeTeste(app.db.pool, outra.contaId);
  const inativo = await criarCanalDeTeste(app.db.pool, conta.contaId, 'Inativo');
  await alterarCanal(app.db.pool, conta.contaId, inativo, { ativo: false });
  const produtoInativo = await criarProdutoCompleto(app.db.pool, conta.contaId, { ativo: false, precos: [{ canalId: canal, faixas: [[1, 100]] }] });
  const avulso = { tipo: 'avulso', nome: 'x', quantidade: 1, preco_unitario_centavos: 1 };
  const casos = [
    { cliente_nome: 'X', canal_id: canalDaOutra, itens: [avulso] },
    { cliente_nome: 'X', canal_id: crypto.randomUUID(), itens: [avulso] },
    { cliente_nome: 'X', canal_id: inativo, itens: [avulso] },
    { cliente_nome: 'X', itens: [avulso, { tipo: 'catalogo', variacao_id: produtoDaOutra.variacoes[0]?.id, quantidade: 1, preco_unitario_centavos: 1 }] },
    { cliente_nome: 'X', itens: [{ tipo: 'catalogo', variacao_id: crypto.randomUUID(), quantidade: 1, preco_unitario_centavos: 1 }] },
    { cliente_nome: 'X', canal_id: canal, itens: [{ tipo: 'catalogo', variacao_id: produtoInativo.variacoes[0]?.id, quantidade: 1 }] },
  ];
  for (const body of casos) {
    const res = await post('/cotacoes', body);
    assert.is(res.status, 422, JSON.stringify(body));
    assert.is(res.body.motivo, 'referencia_invalida', JSON.stringify(body));
  }
  assert.is((await eventos(app.db.pool, conta.contaId, 'cotacao.criada')).length, antes, 'nothing created');
});

test('invalid bodies are 400 naming each field', async () => {
  const casos: [unknown, string][] = [
    [{ itens: [{ tipo: 'avulso', nome: 'x', quantidade: 1, preco_unitario_centavos: 1 }] }, 'cliente_nome'],
    [{ cliente_nome: 'X', itens: [] }, 'itens'],
    [{ cliente_nome: 'X', itens: [{ tipo: 'avulso', nome: 'x', quantidade: 0, preco_unitario_centavos: 1 }] }, 'itens[0].quantidade'],
    [{ cliente_nome: 'X', itens: [{ tipo: 'avulso', nome: 'x', quantidade: 1 }] }, 'itens[0].preco_unitario_centavos'],
    [{ cliente_nome: 'X', itens: [{ tipo: 'brinde', nome: 'x', quantidade: 1 }] }, 'itens[0].tipo'],
    [{ cliente_nome: 'X', validade: '31/12/2999', itens: [{ tipo: 'avulso', nome: 'x', quantidade: 1, preco_unitario_centavos: 1 }] }, 'validade'],
    [{ cliente_nome: 'X', validade: '2000-01-01', itens: [{ tipo: 'avulso', nome: 'x', quantidade: 1, preco_unitario_centavos: 1 }] }, 'validade'],
    [{ cliente_nome: 'X', status: 'aprovada', itens: [{ tipo: 'avulso', nome: 'x', quantidade: 1, preco_unitario_centavos: 1 }] }, 'status'],
  ];
  for (const [body, campo] of casos) {
    const res = await post('/cotacoes', body);
    assert.is(res.status, 400, JSON.stringify(body));
    assert.ok(res.body.erros.some((e: { campo: string }) => e.campo === campo), `${campo}: ${JSON.stringify(res.body.erros)}`);
  }
});

test('GET /cotacoes/{id} has a strong ETag; 304 while unchanged, 200 after a change; another account gets 404', async () => {
  const id = await novaCotacao(app.db.pool, conta.contaId);
  const first = await get(`/cotacoes/${id}`);
  assert.is(first.status, 200);
  const etag = first.headers.get('etag') ?? '';
  assert.match(etag, /^"[A-Za-z0-9_-]+"$/);
  const again = await get(`/cotacoes/${id}`, conta.token, { 'if-none-match': etag });
  assert.is(again.status, 304);
  assert.is(again.text, '');
  await levarA(app.db.pool, conta.contaId, id, 'enviada');
  const changed = await get(`/cotacoes/${id}`, conta.token, { 'if-none-match': etag });
  assert.is(changed.status, 200);
  assert.is(changed.body.status, 'enviada');
  assert.is.not(changed.headers.get('etag'), etag);
  assert.is((await get(`/cotacoes/${id}`, conta.token, { 'if-none-match': `"${'a'.repeat(99)}"` })).status, 400);
  const alheia = await get(`/cotacoes/${id}`, outra.token);
  assert.is(alheia.status, 404);
  assert.is(alheia.body.codigo, 'nao_encontrado');
  assert.is((await get(`/cotacoes/${crypto.randomUUID()}`)).status, 404);
  assert.is((await get('/cotacoes/nao-e-uuid')).status, 400);
});

test('the customer opening the link does not change the ETag; an item change does', async () => {
  const id = await novaCotacao(app.db.pool, conta.contaId);
  const etag = (await get(`/cotacoes/${id}`)).headers.get('etag') ?? '';
  await app.db.pool.query(sql.unsafe`UPDATE cotacoes SET link_aberturas = link_aberturas + 1 WHERE id = ${id}`);
  assert.is((await get(`/cotacoes/${id}`, conta.token, { 'if-none-match': etag })).status, 304);
  await app.db.pool.query(sql.unsafe`UPDATE cotacao_itens SET nome = 'Outro nome' WHERE cotacao_id = ${id}`);
  const changed = await get(`/cotacoes/${id}`, conta.token, { 'if-none-match': etag });
  assert.is(changed.status, 200);
  assert.is(changed.body.itens[0].nome, 'Outro nome');
});

test('the list pages through the account only, filters by status, criado_desde and atualizado_desde', async () => {
  const nova = await createAccount(app.db.pool);
  const ids: string[] = [];
  for (let i = 0; i < 7; i++) ids.push(await novaCotacao(app.db.pool, nova.contaId, { clienteNome: `Cliente ${i}` }));
  await novaCotacao(app.db.pool, outra.contaId);
  const vistos: string[] = [];
  let cursor: string | null = null;
  do {
    const res = await get(`/cotacoes?limite=3${cursor ? `&cursor=${cursor}` : ''}`, nova.token);
    assert.is(res.status, 200);
    vistos.push(...res.body.dados.map((c: { id: string }) => c.id));
    cursor = res.body.proximo_cursor;
  } while (cursor);
  assert.equal(vistos, ids, 'every quotation of the account once, oldest first');

  await levarA(app.db.pool, nova.contaId, ids[1] ?? '', 'enviada');
  await levarA(app.db.pool, nova.contaId, ids[4] ?? '', 'enviada', 'aprovada');
  const enviadas = await get('/cotacoes?status=enviada', nova.token);
  assert.equal(enviadas.body.dados.map((c: { id: string }) => c.id), [ids[1]]);
  const marca = new Date().toISOString();
  await new Promise((r) => setTimeout(r, 5));
  const nova8 = await novaCotacao(app.db.pool, nova.contaId);
  assert.equal((await get(`/cotacoes?criado_desde=${marca}`, nova.token)).body.dados.map((c: { id: string }) => c.id), [nova8]);
  await levarA(app.db.pool, nova.contaId, ids[0] ?? '', 'cancelada');
  const mudadas = await get(`/cotacoes?atualizado_desde=${marca}`, nova.token);
  assert.equal(mudadas.body.dados.map((c: { id: string }) => c.id), [ids[0], nova8]);
  const rascunhosNovos = await get(`/cotacoes?status=rascunho&criado_desde=${marca}`, nova.token);
  assert.equal(rascunhosNovos.body.dados.map((c: { id: string }) => c.id), [nova8]);
  for (const q of ['status=vendida', 'criado_desde=ontem', 'cliente=Ana', 'limite=101']) {
    assert.is((await get(`/cotacoes?${q}`, nova.token)).status, 400, q);
  }
});

test('each route needs its scope and its creator permission: 403 otherwise', async () => {
  const leitor = await addKey(app.db.pool, conta, { escopos: ['cotacoes:ler'] });
  const id = await novaCotacao(app.db.pool, conta.contaId);
  assert.is((await get(`/cotacoes/${id}`, leitor.token)).status, 200);
  const body = { cliente_nome: 'X', itens: [{ tipo: 'avulso', nome: 'x', quantidade: 1, preco_unitario_centavos: 1 }] };
  assert.is((await post('/cotacoes', body, leitor.token)).status, 403);
  assert.is((await post(`/cotacoes/${id}/status`, { status: 'enviada' }, leitor.token)).status, 403);
  const semPermissao = await createAccount(app.db.pool, { permissoes: ['cotacoes.ver'] });
  assert.is((await get('/cotacoes', semPermissao.token)).status, 200);
  assert.is((await post('/cotacoes', body, semPermissao.token)).status, 403);
  const semLeitura = await createAccount(app.db.pool, { permissoes: ['producao.ver'] });
  assert.is((await get('/cotacoes', semLeitura.token)).status, 403);
});

test('Idempotency-Key: a repeated creation returns the same quotation, replayed, and creates once; another body conflicts', async () => {
  const body = { cliente_nome: 'Idempotente', itens: [{ tipo: 'avulso', nome: 'x', quantidade: 2, preco_unitario_centavos: 300 }] };
  const first = await post('/cotacoes', body, conta.token, { 'idempotency-key': 'cot-1' });
  assert.is(first.status, 201);
  const again = await post('/cotacoes', body, conta.token, { 'idempotency-key': 'cot-1' });
  assert.is(again.status, 201);
  assert.is(again.headers.get('idempotent-replayed'), 'true');
  assert.equal(again.body, first.body);
  const criadas = (await eventos(app.db.pool, conta.contaId, 'cotacao.criada')).filter((e) => e.dados.id === first.body.id);
  assert.is(criadas.length, 1, 'one quotation, one event');
  const count = await app.db.pool.oneFirst(sql.unsafe`SELECT count(*)::int FROM cotacoes WHERE conta_id = ${conta.contaId} AND cliente_nome = 'Idempotente'`);
  assert.is(count, 1);
  const conflict = await post('/cotacoes', { ...body, cliente_nome: 'Outro' }, conta.token, { 'idempotency-key': 'cot-1' });
  assert.is(conflict.status, 422);
  assert.is(conflict.body.codigo, 'idempotencia_conflito');
  const recusado = { cliente_nome: 'X', canal_id: crypto.randomUUID(), itens: body.itens };
  assert.is((await post('/cotacoes', recusado, conta.token, { 'idempotency-key': 'cot-2' })).status, 422);
  const refusedAgain = await post('/cotacoes', recusado, conta.token, { 'idempotency-key': 'cot-2' });
  assert.is(refusedAgain.status, 422);
  assert.is(refusedAgain.body.motivo, 'referencia_invalida');
  assert.is(refusedAgain.headers.get('idempotent-replayed'), 'true');
  const without = await post('/cotacoes', body);
  const without2 = await post('/cotacoes', body);
  assert.is.not(without.body.id, without2.body.id, 'without a key every call creates');
});

test('costs: a creation 5, a status change 2, a read 1, a list with two filters 3, a repetition or a 304 nothing in the month', async () => {
  const medidor = await createAccount(app.db.pool, { plano: await planoMedidor(app.db.pool) });
  const medir = async (call: () => Promise<{ status: number; headers: Headers }>) => {
    await settled(app);
    const antes = await lerUso(app.db.pool, medidor.contaId, medidor.chaveId);
    const res = await call();
    await settled(app);
    return { status: res.status, etag: res.headers.get('etag'), ...cobrado(antes, await lerUso(app.db.pool, medidor.contaId, medidor.chaveId)) };
  };
  await get('/saude', medidor.token);
  const body = { cliente_nome: 'Custo', itens: [{ tipo: 'avulso', nome: 'x', quantidade: 1, preco_unitario_centavos: 1 }] };
  let id = '';
  const criar = await medir(async () => {
    const res = await post('/cotacoes', body, medidor.token, { 'idempotency-key': 'custo-1' });
    id = res.body.id;
    return res;
  });
  assert.equal([criar.status, criar.mes, criar.rajada], [201, 5, 5]);
  assert.equal((await medir(() => post('/cotacoes', body, medidor.token, { 'idempotency-key': 'custo-1' }))).mes, 0);
  assert.equal([(await medir(() => post(`/cotacoes/${id}/status`, { status: 'enviada' }, medidor.token))).mes], [2]);
  const ler = await medir(() => get(`/cotacoes/${id}`, medidor.token));
  assert.equal([ler.status, ler.mes], [200, 1]);
  const naoMudou = await medir(() => get(`/cotacoes/${id}`, medidor.token, { 'if-none-match': ler.etag ?? '' }));
  assert.equal([naoMudou.status, naoMudou.mes, naoMudou.rajada], [304, 0, 1]);
  assert.is((await medir(() => get('/cotacoes?status=enviada', medidor.token))).mes, 1);
  assert.is((await medir(() => get('/cotacoes?status=enviada&criado_desde=2020-01-01T00:00:00Z', medidor.token))).mes, 3);
  assert.is((await medir(() => get('/cotacoes?limite=26', medidor.token))).mes, 3);
});

test.run();
