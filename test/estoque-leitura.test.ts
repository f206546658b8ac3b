// GET /estoque and GET /estoque-insumos: every field, filters, isolation, permissions and cost.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { criarLocalConsignado, movimentar } from '#shared/db/estoque.ts';
import { criarInsumo, moverInsumo } from '#shared/db/insumos.ts';
import { criarCor, criarMaterial } from '#shared/db/materiais.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { criarProdutoCompleto, definirSaldo, type ProdutoFixture } from './helpers/catalogo.ts';
import { createAccount, type TestAccount } from './helpers/fixtures.ts';
import { request } from './helpers/http.ts';
import { custosDasLeituras, planoMedidor } from './helpers/uso.ts';

const test = suite('stock: balances of parts and supplies');
let app: TestApp;
let conta: TestAccount;
let lua: ProdutoFixture;
let vaso: ProdutoFixture;
let consignado: string;
let proprio: string;
let insumos: { preto: string; ima: string; caixa: string };

const get = (path: string, token = conta.token) => request(`${app.baseUrl}${path}`, { token });
const ids = async (path: string) => (await get(path)).body.dados.map((s: { id: string }) => s.id);

test.before(async () => {
  app = await startTestApp();
  conta = await createAccount(app.db.pool, { plano: await planoMedidor(app.db.pool) });
  lua = await criarProdutoCompleto(app.db.pool, conta.contaId, { variacoes: [{ partes: ['Base', 'Cúpula'] }] });
  vaso = await criarProdutoCompleto(app.db.pool, conta.contaId, { variacoes: [{}, {}] });
  const luaV = lua.variacoes[0];
  await definirSaldo(app.db.pool, conta.contaId, luaV?.id ?? '', 4);
  await definirSaldo(app.db.pool, conta.contaId, luaV?.id ?? '', 6, luaV?.parteIds[0]);
  await definirSaldo(app.db.pool, conta.contaId, vaso.variacoes[0]?.id ?? '', 10);
  await definirSaldo(app.db.pool, conta.contaId, vaso.variacoes[1]?.id ?? '', 0);
  consignado = (await criarLocalConsignado(app.db.pool, conta.contaId, 'Parceira')).id;
  await app.db.pool.transaction((tx) =>
    movimentar(tx, conta.contaId, { tipo: 'entrada', variacao_id: vaso.variacoes[0]?.id ?? '', quantidade: 3, motivo: 'outro' }, consignado));
  proprio = String((await get('/estoque')).body.dados[0].local_id);

  const pla = await criarMaterial(app.db.pool, conta.contaId, { nome: 'PLA', tipo: 'filamento' });
  const preto = await criarCor(app.db.pool, conta.contaId, { materialId: pla.id, nome: 'Preto', hex: '#000000', saldo: 4200, minimo: 1000 });
  const ima = await criarInsumo(app.db.pool, conta.contaId, { tipo: 'componente', nome: 'Ímã 6x2', unidade: 'un', saldo: 12, minimo: 20 });
  const caixa = await criarInsumo(app.db.pool, conta.contaId, { tipo: 'embalagem', nome: 'Caixa P', unidade: 'un', saldo: 150, minimo: 50 });
  insumos = { preto: preto?.id ?? '', ima: ima.id, caixa: caixa.id };
});
test.after(async () => app.stop());

test('a finished-part balance shows every field, per variation, part and location', async () => {
  const res = await get('/estoque?limite=100');
  assert.is(res.status, 200);
  assert.is(res.body.dados.length, 5);
  const [inteira, base] = res.body.dados;
  const { id, criado_em, atualizado_em, ...resto } = inteira;
  assert.equal(resto, {
    variacao_id: lua.variacoes[0]?.id, produto_id: lua.produtoId, parte_id: null, local_id: proprio, local_tipo: 'proprio', saldo: 4,
  });
  assert.match(id, /^[0-9a-f-]{36}$/);
  assert.match(criado_em, /^\d{4}-\d{2}-\d{2}T/);
  assert.ok(atualizado_em >= criado_em);
  assert.is(base.parte_id, lua.variacoes[0]?.parteIds[0]);
  assert.is(base.saldo, 6);
  const naParceira = res.body.dados.filter((s: { local_tipo: string }) => s.local_tipo === 'consignado');
  assert.equal(naParceira.map((s: { local_id: string; saldo: number }) => [s.local_id, s.saldo]), [[consignado, 3]]);
});

test('filters: variacao_id, produto_id, local_id, alone and combined', async () => {
  const vasoV0 = vaso.variacoes[0]?.id ?? '';
  const byVariacao = (await get(`/estoque?variacao_id=${vasoV0}`)).body.dados;
  assert.equal(byVariacao.map((s: { local_tipo: string }) => s.local_tipo).sort(), ['consignado', 'proprio']);
  assert.is((await ids(`/estoque?produto_id=${vaso.produtoId}`)).length, 3);
  assert.is((await ids(`/estoque?local_id=${consignado}`)).length, 1);
  const both = (await get(`/estoque?produto_id=${vaso.produtoId}&local_id=${proprio}`)).body.dados;
  assert.equal(both.map((s: { saldo: number }) => s.saldo).sort(), [0, 10]);
  assert.is((await get('/estoque?variacao_id=abc')).status, 400);
  assert.is((await get('/estoque?parte_id=abc')).status, 400, 'unknown parameter');
});

test('balances page with cursors: every balance once', async () => {
  const seen: string[] = [];
  let cursor: string | null = null;
  do {
    const res: { body: { dados: { id: string }[]; proximo_cursor: string | null } } = await get(`/estoque?limite=2${cursor ? `&cursor=${cursor}` : ''}`);
    seen.push(...res.body.dados.map((s) => s.id));
    cursor = res.body.proximo_cursor;
  } while (cursor);
  assert.is(seen.length, 5);
  assert.is(new Set(seen).size, 5);
});

test('a supply balance shows every field, with insumo { tipo, id } and abaixo_do_minimo', async () => {
  const res = await get('/estoque-insumos');
  assert.is(res.status, 200);
  const [preto, ima, caixa] = res.body.dados;
  const { criado_em, atualizado_em, ...resto } = preto;
  assert.equal(resto, {
    id: insumos.preto, insumo: { tipo: 'material_cor', id: insumos.preto }, nome: 'PLA Preto', unidade: 'g',
    saldo: 4200, minimo: 1000, abaixo_do_minimo: false,
  });
  assert.match(criado_em, /^\d{4}-\d{2}-\d{2}T/);
  assert.ok(atualizado_em >= criado_em);
  assert.equal([ima.insumo, ima.saldo, ima.minimo, ima.abaixo_do_minimo], [{ tipo: 'componente', id: insumos.ima }, 12, 20, true]);
  assert.equal(caixa.insumo, { tipo: 'embalagem', id: insumos.caixa });
});

test('filters: abaixo_do_minimo=true, tipo, combined; consumption below the minimum shows up', async () => {
  assert.equal(await ids('/estoque-insumos?abaixo_do_minimo=true'), [insumos.ima]);
  assert.equal(await ids('/estoque-insumos?abaixo_do_minimo=false'), [insumos.preto, insumos.caixa]);
  assert.equal(await ids('/estoque-insumos?tipo=embalagem'), [insumos.caixa]);
  await moverInsumo(app.db.pool, conta.contaId, insumos.preto, { motivo: 'consumo', quantidade: 3500 });
  assert.equal(await ids('/estoque-insumos?abaixo_do_minimo=true&tipo=material_cor'), [insumos.preto]);
  for (const bad of ['abaixo_do_minimo=sim', 'tipo=filamento', 'minimo=1']) assert.is((await get(`/estoque-insumos?${bad}`)).status, 400, bad);
});

test('neither list shows another account\'s balances, even filtered by its ids', async () => {
  const outra = await createAccount(app.db.pool);
  const alheio = await criarProdutoCompleto(app.db.pool, outra.contaId);
  await definirSaldo(app.db.pool, outra.contaId, alheio.variacoes[0]?.id ?? '', 77);
  await criarInsumo(app.db.pool, outra.contaId, { tipo: 'componente', nome: 'Alheio', unidade: 'un', saldo: 1, minimo: 5 });
  assert.is((await ids('/estoque?limite=100')).length, 5);
  assert.equal(await ids(`/estoque?variacao_id=${alheio.variacoes[0]?.id}`), []);
  assert.equal(await ids(`/estoque?produto_id=${alheio.produtoId}`), []);
  const supplies = await get('/estoque-insumos?limite=100');
  assert.not.match(supplies.text, 'Alheio');
  assert.is(supplies.body.dados.length, 3);
  assert.is((await get('/estoque', outra.token)).body.dados.length, 1, 'and they see only theirs');
});

test('/estoque needs estoque_produtos.ver and /estoque-insumos estoque_insumos.ver, both with scope estoque:ler', async () => {
  const soProdutos = await createAccount(app.db.pool, { permissoes: ['estoque_produtos.ver'] });
  assert.is((await get('/estoque', soProdutos.token)).status, 200);
  assert.is((await get('/estoque-insumos', soProdutos.token)).status, 403);
  const soInsumos = await createAccount(app.db.pool, { permissoes: ['estoque_insumos.ver'] });
  assert.is((await get('/estoque', soInsumos.token)).status, 403);
  assert.is((await get('/estoque-insumos', soInsumos.token)).status, 200);
  const semEscopo = await createAccount(app.db.pool, { escopos: ['catalogo:ler', 'estoque:escrever'] });
  assert.is((await get('/estoque', semEscopo.token)).status, 403);
  assert.is((await get('/estoque-insumos', semEscopo.token)).status, 403);
});

test('cost: 1 with one filter, 3 with two filters or limite above 25', async () => {
  await get('/saude');
  const cases: [string, number][] = [
    ['/estoque', 1],
    [`/estoque?variacao_id=${lua.variacoes[0]?.id}`, 1],
    [`/estoque?produto_id=${vaso.produtoId}&local_id=${proprio}`, 3],
    ['/estoque?limite=26', 3],
    ['/estoque-insumos?abaixo_do_minimo=true', 1],
    ['/estoque-insumos?abaixo_do_minimo=true&tipo=componente', 3],
    ['/estoque-insumos?limite=100', 3],
  ];
  assert.equal(await custosDasLeituras(app, conta, get, cases), cases.map(([path, units]) => [path, units, units]));
});

test.run();
