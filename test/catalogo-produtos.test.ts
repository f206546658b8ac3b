// GET /produtos and GET /produtos/{id}: every field, filters, ETags, tenant isolation and cost.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { alterarProduto, alterarVariacao, definirPrecos } from '#shared/db/catalogo.ts';
import { sql } from '#shared/db/pool.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { criarCanalDeTeste, criarProdutoCompleto, type ProdutoFixture } from './helpers/catalogo.ts';
import { createAccount, type TestAccount } from './helpers/fixtures.ts';
import { request } from './helpers/http.ts';
import { cobrado, lerUso, planoMedidor, settled } from './helpers/uso.ts';

const test = suite('catalog: products');
let app: TestApp;
let conta: TestAccount;
let outra: TestAccount;
let loja: string;
let marketplace: string;
let completo: ProdutoFixture;

const get = (path: string, token = conta.token, headers: Record<string, string> = {}) =>
  request(`${app.baseUrl}${path}`, { token, headers });

test.before(async () => {
  app = await startTestApp();
  conta = await createAccount(app.db.pool, { plano: await planoMedidor(app.db.pool) });
  outra = await createAccount(app.db.pool, { plano: 'medidor' });
  loja = await criarCanalDeTeste(app.db.pool, conta.contaId, 'Loja');
  marketplace = await criarCanalDeTeste(app.db.pool, conta.contaId, 'Marketplace');
  completo = await criarProdutoCompleto(app.db.pool, conta.contaId, {
    sku: 'LUA',
    variacoes: [{}, { quantidadeMinima: 5, multiplo: 5, partes: ['Base', 'Cúpula'] }],
    precos: [{ canalId: loja, faixas: [[1, 12900], [10, 11600]] }, { canalId: marketplace, faixas: [[1, 15500]] }],
  });
});
test.after(async () => app.stop());

test('a product shows every field: variations with minimum, multiple, parts and price tiers per channel', async () => {
  const res = await get(`/produtos/${completo.produtoId}`);
  assert.is(res.status, 200);
  const [v0, v1] = completo.variacoes;
  const precos = [
    { canal_id: loja, faixas: [{ a_partir_de: 1, preco_centavos: 12900 }, { a_partir_de: 10, preco_centavos: 11600 }] },
    { canal_id: marketplace, faixas: [{ a_partir_de: 1, preco_centavos: 15500 }] },
  ];
  const { criado_em, atualizado_em, ...resto } = res.body;
  assert.equal(resto, {
    id: completo.produtoId,
    sku: 'LUA',
    nome: 'Produto LUA',
    descricao: 'Descrição de LUA',
    ativo: true,
    variacoes: [
      { id: v0?.id, sku: 'LUA-V0', nome: 'Variação 0', ativa: true, quantidade_minima: 1, multiplo: 1, partes: [], precos },
      {
        id: v1?.id, sku: 'LUA-V1', nome: 'Variação 1', ativa: true, quantidade_minima: 5, multiplo: 5,
        partes: [{ id: v1?.parteIds[0], nome: 'Base', quantidade: 1 }, { id: v1?.parteIds[1], nome: 'Cúpula', quantidade: 1 }],
        precos,
      },
    ],
  });
  assert.match(criado_em, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/);
  assert.ok(atualizado_em >= criado_em);
  const list = await get('/produtos');
  assert.equal(list.body.dados.find((p: { id: string }) => p.id === completo.produtoId), res.body, 'the list shows the same representation');
});

test('a product without variations, or a variation without prices, shows empty arrays; descricao may be null', async () => {
  const { id } = await app.db.pool.one(sql.typeAlias('id')`
    INSERT INTO produtos (conta_id, sku, nome) VALUES (${conta.contaId}, 'VAZIO', 'Sem variações') RETURNING id`);
  const res = await get(`/produtos/${id}`);
  assert.is(res.status, 200);
  assert.equal(res.body.variacoes, []);
  assert.is(res.body.descricao, null);
});

test('GET /produtos/{id} answers 304 to its ETag and a new ETag once a price tier, a variation or the product changes', async () => {
  const path = `/produtos/${completo.produtoId}`;
  const first = await get(path);
  let etag = first.headers.get('etag') ?? '';
  assert.match(etag, /^"[A-Za-z0-9_-]+"$/);
  const notModified = await get(path, conta.token, { 'if-none-match': etag });
  assert.is(notModified.status, 304);
  assert.is(notModified.text, '');
  assert.is(notModified.headers.get('etag'), etag);

  const changes = [
    () => definirPrecos(app.db.pool, conta.contaId, { variacaoId: completo.variacoes[0]?.id ?? '', canalId: marketplace, faixas: [{ aPartirDe: 1, precoCentavos: 15900 }] }),
    () => alterarVariacao(app.db.pool, conta.contaId, completo.variacoes[1]?.id ?? '', { multiplo: 10 }),
    () => alterarProduto(app.db.pool, conta.contaId, completo.produtoId, { nome: 'Luminária lua' }),
  ];
  for (const change of changes) {
    await change();
    const res = await get(path, conta.token, { 'if-none-match': etag });
    assert.is(res.status, 200);
    assert.is.not(res.headers.get('etag'), etag);
    etag = res.headers.get('etag') ?? '';
  }
  const last = await get(path);
  assert.is(last.body.nome, 'Luminária lua');
  assert.is(last.body.variacoes[1].multiplo, 10);
  assert.equal(last.body.variacoes[0].precos[1].faixas, [{ a_partir_de: 1, preco_centavos: 15900 }]);
});

test('a product of another account, or one that does not exist, is 404 nao_encontrado; a bad id is 400', async () => {
  const alheio = await criarProdutoCompleto(app.db.pool, outra.contaId, { sku: 'SEGREDO' });
  const res = await get(`/produtos/${alheio.produtoId}`);
  assert.is(res.status, 404);
  assert.is(res.body.codigo, 'nao_encontrado');
  assert.not.match(res.text, 'SEGREDO');
  assert.is((await get('/produtos/00000000-0000-4000-8000-000000000000')).status, 404);
  assert.is((await get('/produtos/nao-e-uuid')).status, 400);
});

test('the list never shows another account\'s products, not even through its channel', async () => {
  const canalAlheio = await criarCanalDeTeste(app.db.pool, outra.contaId);
  await criarProdutoCompleto(app.db.pool, outra.contaId, { sku: 'ALHEIO', precos: [{ canalId: canalAlheio, faixas: [[1, 100]] }] });
  const all = await get('/produtos?limite=100');
  assert.ok(all.body.dados.length > 0);
  assert.not.match(all.text, 'ALHEIO');
  const viaCanal = await get(`/produtos?canal_id=${canalAlheio}`);
  assert.equal(viaCanal.body.dados, []);
  const viaSku = await get('/produtos?sku=ALHEIO');
  assert.equal(viaSku.body.dados, []);
  const deles = await get('/produtos?limite=100', outra.token);
  assert.not.match(deles.text, completo.produtoId);
});

test('filters: sku matches the product or a variation, ativo, canal_id', async () => {
  const inativo = await criarProdutoCompleto(app.db.pool, conta.contaId, { sku: 'INATIVO', ativo: false });
  const soLoja = await criarProdutoCompleto(app.db.pool, conta.contaId, { sku: 'SO-LOJA', precos: [{ canalId: loja, faixas: [[1, 500]] }] });
  const ids = async (query: string) => (await get(`/produtos?limite=100&${query}`)).body.dados.map((p: { id: string }) => p.id);

  assert.equal(await ids('sku=LUA'), [completo.produtoId]);
  assert.equal(await ids('sku=LUA-V1'), [completo.produtoId], 'a variation sku finds its product');
  assert.equal(await ids('sku=NADA'), []);
  assert.equal(await ids('ativo=false'), [inativo.produtoId]);
  assert.not.ok((await ids('ativo=true')).includes(inativo.produtoId));
  const naLoja = await ids(`canal_id=${loja}`);
  assert.ok(naLoja.includes(soLoja.produtoId) && naLoja.includes(completo.produtoId));
  assert.not.ok((await ids(`canal_id=${marketplace}`)).includes(soLoja.produtoId));
  assert.equal(await ids(`canal_id=${loja}&sku=SO-LOJA&ativo=true`), [soLoja.produtoId], 'filters combine');
  for (const bad of ['ativo=sim', 'canal_id=123', 'ordem=nome', 'sku=', 'preco=1']) {
    const res = await get(`/produtos?${bad}`);
    assert.is(res.status, 400, bad);
    assert.is(res.body.codigo, 'dados_invalidos', bad);
  }
});

test('ordem=atualizado_em with atualizado_desde returns only what changed, oldest change first', async () => {
  const a = await criarProdutoCompleto(app.db.pool, conta.contaId);
  const b = await criarProdutoCompleto(app.db.pool, conta.contaId);
  const marker = String(await app.db.pool.oneFirst(sql.unsafe`SELECT to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`));
  await alterarVariacao(app.db.pool, conta.contaId, b.variacoes[0]?.id ?? '', { nome: 'Mudou primeiro' });
  await alterarProduto(app.db.pool, conta.contaId, a.produtoId, { nome: 'Mudou depois' });
  const res = await get(`/produtos?ordem=atualizado_em&atualizado_desde=${encodeURIComponent(marker)}`);
  assert.is(res.status, 200);
  assert.equal(res.body.dados.map((p: { id: string }) => p.id), [b.produtoId, a.produtoId]);
});

test('GET /produtos costs 1 plus 1 per 25 products returned; GET /produtos/{id} 1; a 304 costs 0 in the month', async () => {
  const medidor = await createAccount(app.db.pool, { plano: 'medidor' });
  for (let i = 0; i < 30; i++) await criarProdutoCompleto(app.db.pool, medidor.contaId);
  const first = (await get('/produtos?limite=1', medidor.token)).body.dados[0].id;
  const charged = async (path: string, headers: Record<string, string> = {}) => {
    await settled(app);
    const antes = await lerUso(app.db.pool, medidor.contaId, medidor.chaveId);
    const res = await get(path, medidor.token, headers);
    await settled(app);
    return { res, ...cobrado(antes, await lerUso(app.db.pool, medidor.contaId, medidor.chaveId)) };
  };
  const cases: [string, number, number][] = [
    ['/produtos?limite=10', 10, 1],
    ['/produtos', 25, 2],
    ['/produtos?limite=100', 30, 2],
    ['/produtos?limite=24', 24, 1],
  ];
  for (const [path, n, units] of cases) {
    const { res, mes, rajada } = await charged(path);
    assert.is(res.body.dados.length, n, path);
    assert.is(mes, units, `${path}: month`);
    assert.is(rajada, units, `${path}: burst`);
  }
  const um = await charged(`/produtos/${first}`);
  assert.is(um.mes, 1);
  const etag = um.res.headers.get('etag') ?? '';
  const naoMudou = await charged(`/produtos/${first}`, { 'if-none-match': etag });
  assert.is(naoMudou.res.status, 304);
  assert.is(naoMudou.mes, 0, '304: nothing in the month');
  assert.is(naoMudou.rajada, 1, '304: 1 in the burst');
});

test('admission charges /produtos from limite before the page is known (RateLimit shows it), then settles', async () => {
  const pobre = await createAccount(app.db.pool, { plano: 'bancada' });
  // Bancada's burst is 5: limite=100 takes all 5 at admission, whatever the page holds.
  const res = await get('/produtos?limite=100', pobre.token);
  assert.is(res.status, 200);
  assert.equal(res.body.dados, []);
  assert.match(res.headers.get('ratelimit') ?? '', /^"rajada";r=0;/);
  await settled(app);
  const mes = await app.db.pool.oneFirst(sql.unsafe`SELECT calls FROM effective_monthly_usage WHERE conta_id = ${pobre.contaId}`);
  assert.is(mes, 1, 'an empty page is settled to 1 unit');
});

test('the catalog needs scope catalogo:ler and the creator\'s permission produtos.ver', async () => {
  const semEscopo = await createAccount(app.db.pool, { escopos: ['estoque:ler'] });
  const semPermissao = await createAccount(app.db.pool, { permissoes: ['estoque_produtos.ver'] });
  for (const path of ['/produtos', `/produtos/${completo.produtoId}`, '/canais', '/insumos/materiais']) {
    assert.is((await get(path, semEscopo.token)).status, 403, path);
    assert.is((await get(path, semPermissao.token)).status, 403, path);
  }
});

test.run();
