// The operator CLI for the catalog and stock: what it makes is what the API then shows.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { sql } from '#shared/db/pool.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { createAccount, type TestAccount } from './helpers/fixtures.ts';
import { request } from './helpers/http.ts';
import { runOps, spawnOps, type OpsResult } from './helpers/ops.ts';

const test = suite('operator CLI: catalog and stock');
let app: TestApp;
let conta: TestAccount;
// Made by one test, used by the next ones (the suite runs in order).
const ids = { canal: '', produto: '', variacao: '', parte: '', material: '', cor: '', ima: '' };

test.before(async () => {
  app = await startTestApp();
  conta = await createAccount(app.db.pool, { plano: 'farm' });
});
test.after(async () => app.stop());

const ops = (...args: string[]) => runOps(app.db.url, args);

async function ok(...args: string[]): Promise<any> {
  return succeeded(args, await ops(...args));
}

/** The smoke test of the real process: one command of each family (catalog, stock) runs as an operator runs it. */
async function okSpawned(...args: string[]): Promise<any> {
  return succeeded(args, await spawnOps(app.db.url, args));
}

function succeeded(args: string[], result: OpsResult): any {
  assert.is(result.code, 0, `${args.join(' ')}: ${result.stderr}`);
  return result.json;
}

const get = (path: string) => request(`${app.baseUrl}${path}`, { token: conta.token });

test('creates and edits channels, a product, variations, parts and price tiers; the API shows them', async () => {
  const c = conta.contaId;
  ids.canal = (await okSpawned('canais', 'create', '--conta', c, '--nome', 'Marketplace X', '--tipo', 'marketplace', '--taxa-percentual-bps', '1600')).id;
  const canal = await ok('canais', 'set', '--conta', c, '--canal', ids.canal, '--nome', 'Marketplace Y', '--ativo', 'false');
  assert.equal([canal.nome, canal.ativo, canal.taxa_percentual_bps], ['Marketplace Y', false, 1600]);
  ids.produto = (await ok('produtos', 'create', '--conta', c, '--sku', 'CHAV-DRAG', '--nome', 'Chaveiro dragão')).id;
  await ok('produtos', 'set', '--conta', c, '--produto', ids.produto, '--descricao', 'Articulado');
  ids.variacao = (await ok('variacoes', 'create', '--conta', c, '--produto', ids.produto, '--sku', 'CHAV-DRAG-UN', '--nome', 'Unidade',
    '--quantidade-minima', '5', '--multiplo', '5')).id;
  const v = await ok('variacoes', 'set', '--conta', c, '--variacao', ids.variacao, '--multiplo', '10');
  assert.equal([v.quantidade_minima, v.multiplo], [5, 10]);
  ids.parte = (await ok('partes', 'create', '--conta', c, '--variacao', ids.variacao, '--nome', 'Corpo')).id;
  await ok('partes', 'set', '--conta', c, '--parte', ids.parte, '--quantidade', '2');
  const precos = await ok('precos', 'set', '--conta', c, '--variacao', ids.variacao, '--canal', ids.canal, '--faixas', '1:1500,20:1200');
  assert.equal(precos.faixas, [{ a_partir_de: 1, preco_centavos: 1500 }, { a_partir_de: 20, preco_centavos: 1200 }]);

  const api = await get(`/produtos/${ids.produto}`);
  assert.is(api.status, 200);
  assert.is(api.body.descricao, 'Articulado');
  assert.equal(api.body.variacoes[0].partes, [{ id: ids.parte, nome: 'Corpo', quantidade: 2 }]);
  assert.equal(api.body.variacoes[0].precos, [{ canal_id: ids.canal, faixas: precos.faixas }]);
  assert.equal(await ok('produtos', 'show', '--conta', c, '--produto', ids.produto), api.body, 'the CLI shows what the API shows');

  await ok('precos', 'set', '--conta', c, '--variacao', ids.variacao, '--canal', ids.canal, '--faixas', '');
  assert.equal((await get(`/produtos/${ids.produto}`)).body.variacoes[0].precos, [], 'empty tiers remove the channel');
});

test('catalog changes made by the CLI emit their events, as the screen\'s would', async () => {
  const tipos = await app.db.pool.anyFirst(sql.type(z.object({ tipo: z.string() }))`
    SELECT tipo FROM outbox WHERE conta_id = ${conta.contaId} AND dados ->> 'id' = ${ids.produto} ORDER BY criado_em`);
  assert.ok(tipos.includes('produto.criado'), String(tipos));
  assert.ok(tipos.includes('produto.atualizado'), String(tipos));
});

test('creates materials and colors with their supply balances; edits them', async () => {
  const c = conta.contaId;
  ids.material = (await ok('materiais', 'create', '--conta', c, '--nome', 'PETG', '--tipo', 'filamento', '--custo-por-kg-centavos', '15000')).id;
  assert.is((await ok('materiais', 'set', '--conta', c, '--material', ids.material, '--custo-por-kg-centavos', '16000')).custo_por_kg_centavos, 16000);
  ids.cor = (await ok('cores', 'create', '--conta', c, '--material', ids.material, '--nome', 'Azul', '--hex', '#1565C0', '--saldo', '1200', '--minimo', '500')).id;
  assert.is((await ok('cores', 'set', '--conta', c, '--cor', ids.cor, '--hex', '#0D47A1')).hex, '#0D47A1');
  const materiais = await get('/insumos/materiais');
  assert.equal(materiais.body.dados[0].cores, [{ id: ids.cor, nome: 'Azul', hex: '#0D47A1', ativa: true }]);
  assert.is(materiais.body.dados[0].custo_por_kg_centavos, 16000);
  const insumos = await get('/estoque-insumos');
  assert.equal(insumos.body.dados[0].insumo, { tipo: 'material_cor', id: ids.cor });
  assert.equal([insumos.body.dados[0].unidade, insumos.body.dados[0].saldo, insumos.body.dados[0].minimo], ['g', 1200, 500]);
});

test('supplies: create, set the minimum, buy, correct, and consume below the minimum (estoque.baixo once)', async () => {
  const c = conta.contaId;
  ids.ima = (await ok('insumos', 'create', '--conta', c, '--tipo', 'componente', '--nome', 'Ímã', '--unidade', 'un', '--saldo', '30', '--minimo', '10')).id;
  assert.is((await ok('insumos', 'set', '--conta', c, '--insumo', ids.ima, '--minimo', '20')).minimo, 20);
  assert.is((await ok('insumos', 'move', '--conta', c, '--insumo', ids.ima, '--motivo', 'compra', '--quantidade', '5')).saldo, 35);
  assert.is((await ok('insumos', 'move', '--conta', c, '--insumo', ids.ima, '--motivo', 'correcao', '--contado', '25')).saldo, 25);
  const consumed = await ok('insumos', 'consume', '--conta', c, '--insumo', ids.ima, '--quantidade', '10');
  assert.equal([consumed.saldo, consumed.abaixo_do_minimo, consumed.movido], [15, true, -10]);
  await ok('insumos', 'consume', '--conta', c, '--insumo', ids.ima, '--quantidade', '1');
  const tooMuch = await ops('insumos', 'consume', '--conta', c, '--insumo', ids.ima, '--quantidade', '100');
  assert.is(tooMuch.code, 1);
  assert.match(tooMuch.stderr, 'cannot go below zero');
  const avisos = await app.db.pool.oneFirst(sql.unsafe`
    SELECT count(*)::int FROM outbox WHERE conta_id = ${c} AND tipo = 'estoque.baixo' AND dados -> 'insumo' ->> 'id' = ${ids.ima}`);
  assert.is(avisos, 1, 'one warning a day');
  const movimentos = await app.db.pool.anyFirst(sql.type(z.object({ q: z.number() }))`
    SELECT quantidade AS q FROM insumo_movimentos WHERE insumo_id = ${ids.ima} ORDER BY criado_em`);
  assert.equal([...movimentos], [5, -10, -10, -1]);
  assert.equal((await ok('insumos', 'list', '--conta', c, '--abaixo-do-minimo', 'true')).map((i: { id: string }) => i.id), [ids.ima]);
});

test('stock: moves finished parts in the own or a consignment location; refusals exit 1 and move nothing', async () => {
  const c = conta.contaId;
  const entrada = await okSpawned('estoque', 'move', '--conta', c, '--variacao', ids.variacao, '--tipo', 'entrada', '--quantidade', '20', '--motivo', 'outro');
  assert.equal([entrada.saldo_antes, entrada.saldo_depois], [0, 20]);
  const fora = await ops('estoque', 'move', '--conta', c, '--variacao', ids.variacao, '--tipo', 'saida', '--quantidade', '5', '--motivo', 'venda_loja');
  assert.is(fora.code, 1);
  assert.match(fora.stderr, 'fora_do_multiplo');
  const local = await ok('locais', 'create', '--conta', c, '--nome', 'Loja parceira');
  assert.is(local.tipo, 'consignado');
  await ok('estoque', 'move', '--conta', c, '--variacao', ids.variacao, '--tipo', 'entrada', '--quantidade', '10', '--motivo', 'outro', '--local', local.id);
  assert.is((await ok('locais', 'list', '--conta', c)).length, 2);
  const saldos = await ok('estoque', 'list', '--conta', c);
  assert.equal(saldos.map((s: { local_tipo: string; saldo: number }) => [s.local_tipo, s.saldo]), [['proprio', 20], ['consignado', 10]]);
  const via = await app.db.pool.anyFirst(sql.type(z.object({ via: z.string() }))`
    SELECT DISTINCT via FROM estoque_movimentos WHERE conta_id = ${c}`);
  assert.equal([...via], ['tela']);

  const outra = await createAccount(app.db.pool);
  const alheia = await ops('estoque', 'move', '--conta', outra.contaId, '--variacao', ids.variacao, '--tipo', 'entrada', '--quantidade', '10', '--motivo', 'outro');
  assert.is(alheia.code, 1);
  assert.match(alheia.stderr, 'referencia_invalida');
  const bad = await ops('estoque', 'move', '--conta', c, '--variacao', ids.variacao, '--tipo', 'ajuste', '--quantidade', '3', '--motivo', 'correcao');
  assert.is(bad.code, 64);
  assert.match(bad.stderr, '--quantidade');
});

test('an id of another account is "not found" for every edit', async () => {
  const outra = (await ops('contas', 'create', '--nome', 'Outra', '--plano', 'farm')).json;
  for (const args of [
    ['canais', 'set', '--canal', ids.canal], ['produtos', 'set', '--produto', ids.produto], ['variacoes', 'set', '--variacao', ids.variacao],
    ['partes', 'set', '--parte', ids.parte], ['materiais', 'set', '--material', ids.material], ['cores', 'set', '--cor', ids.cor],
    ['insumos', 'set', '--insumo', ids.ima],
  ]) {
    const [resource = '', verb = '', flag = '', id = ''] = args;
    const res = await ops(resource, verb, '--conta', outra.id, flag, id, '--nome', 'x');
    assert.is(res.code, 64, args.join(' '));
    assert.match(res.stderr, 'not found in this account');
  }
});

test.run();
