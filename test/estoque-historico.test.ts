// GET /estoque/movimentos and GET /estoque/movimentos/{id} (issue 19, item 3): every item the
// movement of §2.2 as POST answered it, every filter, the cursor, the own location only, tenant
// isolation, scope and permission, costs, the ETag, and the indexes behind the filters.
import { randomUUID } from 'node:crypto';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { criarLocalConsignado, movimentar } from '#shared/db/estoque.ts';
import { sql } from '#shared/db/pool.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { criarProdutoCompleto, type ProdutoFixture } from './helpers/catalogo.ts';
import { createAccount, type TestAccount } from './helpers/fixtures.ts';
import { request } from './helpers/http.ts';
import { cobrado, custosDasLeituras, lerUso, planoMedidor, settled } from './helpers/uso.ts';

const test = suite('stock movement history');
let app: TestApp;
let conta: TestAccount;
let vaso: ProdutoFixture; // two variations
let lua: ProdutoFixture; // one variation
/** Every movement posted in before(), in the order posted, as POST answered it. */
const postados: Record<string, any>[] = [];

const get = (path: string, token = conta.token, headers: Record<string, string> = {}) =>
  request(`${app.baseUrl}${path}`, { token, headers });
const post = async (body: Record<string, unknown>, token = conta.token) => {
  const res = await request(`${app.baseUrl}/estoque/movimentos`, { token, body, headers: { 'idempotency-key': randomUUID() } });
  assert.is(res.status, 201, res.text);
  return res.body;
};
const ids = async (path: string) => (await get(path)).body.dados.map((m: { id: string }) => m.id);
const idsDe = (pick: (m: Record<string, any>) => boolean) => postados.filter(pick).map((m) => m.id);

test.before(async () => {
  app = await startTestApp();
  conta = await createAccount(app.db.pool, { plano: await planoMedidor(app.db.pool) });
  vaso = await criarProdutoCompleto(app.db.pool, conta.contaId, { variacoes: [{}, {}] });
  lua = await criarProdutoCompleto(app.db.pool, conta.contaId);
  const [v0, v1] = vaso.variacoes.map((v) => v.id);
  const l0 = lua.variacoes[0]?.id;
  for (const body of [
    { tipo: 'entrada', variacao_id: v0, quantidade: 10, motivo: 'correcao' },
    { tipo: 'saida', variacao_id: v0, quantidade: 2, motivo: 'venda_marketplace', referencia_externa: 'MKT-1001', metadados: { loja: 'Prisma' } },
    { tipo: 'entrada', variacao_id: v1, quantidade: 4, motivo: 'devolucao' },
    { tipo: 'saida', variacao_id: v1, quantidade: 1, motivo: 'venda_marketplace', referencia_externa: 'MKT-1001' },
    { tipo: 'entrada', variacao_id: l0, quantidade: 3, motivo: 'correcao' },
    { tipo: 'ajuste', variacao_id: l0, contado: 1, motivo: 'perda' },
  ]) postados.push(await post(body));
});
test.after(async () => app.stop());

test('each item is the movement of §2.2 exactly as POST answered it, oldest first; GET /{id} answers the same', async () => {
  const res = await get('/estoque/movimentos');
  assert.is(res.status, 200);
  assert.equal(res.body, { dados: postados, proximo_cursor: null });
  for (const m of postados) {
    const one = await get(`/estoque/movimentos/${m.id}`);
    assert.is(one.status, 200);
    assert.equal(one.body, m);
  }
  assert.equal(postados[1]?.referencia_externa, 'MKT-1001');
  assert.equal(postados[1]?.metadados, { loja: 'Prisma' });
});

test('the cursor pages every movement once, in order; a cursor of another filter is 400', async () => {
  const seen: string[] = [];
  let cursor: string | null = null;
  do {
    const res: { status: number; body: { dados: { id: string }[]; proximo_cursor: string | null } } =
      await get(`/estoque/movimentos?limite=4${cursor ? `&cursor=${cursor}` : ''}`);
    assert.is(res.status, 200);
    seen.push(...res.body.dados.map((m) => m.id));
    cursor = res.body.proximo_cursor;
    if (cursor) {
      const other = await get(`/estoque/movimentos?limite=4&tipo=saida&cursor=${cursor}`);
      assert.is(other.status, 400, 'bound to its list and filters');
      assert.is(other.body.erros[0].campo, 'cursor');
    }
  } while (cursor);
  assert.equal(seen, postados.map((m) => m.id));
});

test('filters: variacao_id, sku (a variation\'s, or a product\'s: all its variations), tipo, motivo, referencia_externa, combined', async () => {
  const [v0, v1] = vaso.variacoes;
  assert.equal(await ids(`/estoque/movimentos?variacao_id=${v0?.id}`), idsDe((m) => m.variacao_id === v0?.id));
  assert.equal(await ids(`/estoque/movimentos?sku=${v1?.sku}`), idsDe((m) => m.variacao_id === v1?.id));
  assert.equal(await ids(`/estoque/movimentos?sku=${vaso.sku}`), idsDe((m) => m.variacao_id === v0?.id || m.variacao_id === v1?.id));
  assert.equal(await ids(`/estoque/movimentos?sku=${lua.sku}`), idsDe((m) => m.variacao_id === lua.variacoes[0]?.id));
  assert.equal(await ids('/estoque/movimentos?sku=NAO-EXISTE'), []);
  assert.equal(await ids('/estoque/movimentos?tipo=saida'), idsDe((m) => m.tipo === 'saida'));
  assert.equal(await ids('/estoque/movimentos?tipo=ajuste'), idsDe((m) => m.tipo === 'ajuste'));
  assert.equal(await ids('/estoque/movimentos?motivo=venda_marketplace'), idsDe((m) => m.motivo === 'venda_marketplace'));
  assert.equal(await ids('/estoque/movimentos?referencia_externa=MKT-1001'), [postados[1]?.id, postados[3]?.id]);
  assert.equal(await ids('/estoque/movimentos?referencia_externa=mkt-1001'), [], 'letter by letter');
  assert.equal(await ids(`/estoque/movimentos?sku=${vaso.sku}&tipo=entrada&motivo=devolucao`), [postados[2]?.id]);
});

test('criado_desde is inclusive and criado_ate exclusive: consecutive windows share no movement', async () => {
  // The movements' instants moved to known ones (a movement never changes; only the test moves them).
  const instantes = ['2026-01-01T10:00:00Z', '2026-01-01T11:00:00Z', '2026-01-01T12:00:00Z', '2026-01-01T13:00:00Z', '2026-01-01T14:00:00Z', '2026-01-01T15:00:00Z'];
  for (const [i, m] of postados.entries()) {
    await app.db.pool.query(sql.unsafe`UPDATE estoque_movimentos SET criado_em = ${instantes[i] ?? ''}::timestamptz WHERE id = ${m.id}`);
  }
  const janela = (desde: string, ate: string) => ids(`/estoque/movimentos?criado_desde=${desde}&criado_ate=${ate}`);
  assert.equal(await janela('2026-01-01T10:00:00Z', '2026-01-01T12:00:00Z'), [postados[0]?.id, postados[1]?.id]);
  assert.equal(await janela('2026-01-01T12:00:00Z', '2026-01-01T14:00:00Z'), [postados[2]?.id, postados[3]?.id]);
  assert.equal(await janela('2026-01-01T14:00:00Z', '2026-01-02T00:00:00Z'), [postados[4]?.id, postados[5]?.id]);
  assert.equal(await ids('/estoque/movimentos?criado_desde=2026-01-01T12:00:00-01:00'), [postados[3]?.id, postados[4]?.id, postados[5]?.id], 'offsets are honoured (13:00 UTC)');
  assert.equal(await ids('/estoque/movimentos?criado_ate=2026-01-01T10:00:00Z'), []);
});

test('only the own location: a consignment movement is neither listed nor read (404)', async () => {
  const consignado = await criarLocalConsignado(app.db.pool, conta.contaId, 'Loja parceira');
  const v0 = vaso.variacoes[0]?.id ?? '';
  const feito = await app.db.pool.transaction((tx) =>
    movimentar(tx, conta.contaId, { tipo: 'entrada', variacao_id: v0, quantidade: 7, motivo: 'outro' }, consignado.id));
  assert.ok(feito.ok);
  if (!feito.ok) return;
  assert.not.ok((await ids('/estoque/movimentos?limite=100')).includes(feito.movimento.id));
  assert.is((await get(`/estoque/movimentos/${feito.movimento.id}`)).status, 404);
  // The screen's movements of the own location are the history too.
  const tela = await app.db.pool.transaction((tx) => movimentar(tx, conta.contaId, { tipo: 'entrada', variacao_id: v0, quantidade: 1, motivo: 'outro' }));
  assert.ok(tela.ok && (await ids('/estoque/movimentos?limite=100')).includes(tela.movimento.id));
  const origem = await app.db.pool.one(sql.type(z.object({ via: z.string(), chave_id: z.string().nullable() }))`
    SELECT via, chave_id FROM estoque_movimentos WHERE conta_id = ${conta.contaId} AND id = ${tela.movimento.id}`);
  assert.equal(origem, { via: 'tela', chave_id: null }, 'a movement nobody declared came from the screen');
});

test('another account\'s movement is 404 by id, and never listed, even filtered by its variation, SKU or reference', async () => {
  const outra = await createAccount(app.db.pool);
  const alheio = await criarProdutoCompleto(app.db.pool, outra.contaId);
  const movimento = await post({ tipo: 'entrada', variacao_id: alheio.variacoes[0]?.id, quantidade: 5, motivo: 'outro', referencia_externa: 'ALHEIA' }, outra.token);
  const res = await get(`/estoque/movimentos/${movimento.id}`);
  assert.is(res.status, 404);
  assert.is(res.body.codigo, 'nao_encontrado');
  assert.is((await get(`/estoque/movimentos/${randomUUID()}`)).body.detail, res.body.detail, 'the same answer as a missing one');
  assert.equal(await ids(`/estoque/movimentos?variacao_id=${alheio.variacoes[0]?.id}`), []);
  assert.equal(await ids(`/estoque/movimentos?sku=${alheio.sku}`), []);
  assert.equal(await ids('/estoque/movimentos?referencia_externa=ALHEIA'), []);
  assert.is((await get(`/estoque/movimentos/${movimento.id}`, outra.token)).status, 200, 'its own account reads it');
});

test('scope estoque:ler and the creator\'s permission estoque_produtos.ver, for the list and for one movement', async () => {
  const id = postados[0]?.id;
  const soEscrever = await createAccount(app.db.pool, { escopos: ['estoque:escrever'] });
  const semPermissao = await createAccount(app.db.pool, { permissoes: ['estoque_produtos.movimentar', 'estoque_insumos.ver'] });
  const leitor = await createAccount(app.db.pool, { escopos: ['estoque:ler'], permissoes: ['estoque_produtos.ver'] });
  for (const path of ['/estoque/movimentos', `/estoque/movimentos/${id}`]) {
    for (const token of [soEscrever.token, semPermissao.token]) {
      const res = await get(path, token);
      assert.is(res.status, 403, path);
      assert.is(res.body.codigo, 'escopo_insuficiente');
    }
    assert.is((await get(path, leitor.token)).status, path.endsWith(String(id)) ? 404 : 200, 'another account with the right scope reads its own (none)');
  }
});

test('costs (§8.2): the list 1, or 3 with two filters or limite above 25; one movement 1', async () => {
  const medidos = await custosDasLeituras(app, conta, (path) => get(path), [
    ['/estoque/movimentos', 1],
    ['/estoque/movimentos?tipo=saida', 1],
    ['/estoque/movimentos?tipo=saida&motivo=venda_marketplace', 3],
    ['/estoque/movimentos?criado_desde=2026-01-01T00:00:00Z&criado_ate=2027-01-01T00:00:00Z', 3],
    ['/estoque/movimentos?limite=26', 3],
    [`/estoque/movimentos/${postados[0]?.id}`, 1],
  ]);
  assert.equal(medidos.map(([path, mes, rajada]) => [path, mes, rajada]), [
    ['/estoque/movimentos', 1, 1],
    ['/estoque/movimentos?tipo=saida', 1, 1],
    ['/estoque/movimentos?tipo=saida&motivo=venda_marketplace', 3, 3],
    ['/estoque/movimentos?criado_desde=2026-01-01T00:00:00Z&criado_ate=2027-01-01T00:00:00Z', 3, 3],
    ['/estoque/movimentos?limite=26', 3, 3],
    [`/estoque/movimentos/${postados[0]?.id}`, 1, 1],
  ]);
});

test('one movement has a strong ETag that never moves; If-None-Match answers 304 for 1 in the burst and 0 in the month', async () => {
  const id = postados[2]?.id;
  const first = await get(`/estoque/movimentos/${id}`);
  const etag = first.headers.get('etag') ?? '';
  assert.match(etag, /^"1-[\w-]+"$/);
  assert.is((await get(`/estoque/movimentos/${id}`)).headers.get('etag'), etag);
  await settled(app);
  const antes = await lerUso(app.db.pool, conta.contaId, conta.chaveId);
  const res = await get(`/estoque/movimentos/${id}`, conta.token, { 'if-none-match': etag });
  assert.is(res.status, 304);
  assert.is(res.text, '');
  assert.is(res.headers.get('etag'), etag);
  await settled(app);
  assert.equal(cobrado(antes, await lerUso(app.db.pool, conta.contaId, conta.chaveId)), { mes: 0, rajada: 1 });
  const outro = await get(`/estoque/movimentos/${postados[3]?.id}`, conta.token, { 'if-none-match': etag });
  assert.is(outro.status, 200, 'a tag of another movement');
  assert.is((await get(`/estoque/movimentos/${id}`, conta.token, { 'if-none-match': '"1-inventado"' })).status, 200);
});

test('bad parameters are 400 naming them; movements have no atualizado_desde', async () => {
  for (const [query, campo] of [
    ['variacao_id=abc', 'variacao_id'], ['tipo=transferencia', 'tipo'], ['motivo=presente', 'motivo'], ['sku=tem espaço', 'sku'],
    ['criado_desde=2026-02-30T00:00:00Z', 'criado_desde'], ['criado_ate=ontem', 'criado_ate'],
    [`referencia_externa=${'r'.repeat(101)}`, 'referencia_externa'], ['referencia_externa=', 'referencia_externa'],
    ['atualizado_desde=2026-01-01T00:00:00Z', 'atualizado_desde'], ['limite=101', 'limite'],
  ]) {
    const res = await get(`/estoque/movimentos?${query}`);
    assert.is(res.status, 400, query);
    assert.ok(res.body.erros.some((e: { campo: string }) => e.campo === campo), `${query}: ${res.text}`);
  }
  assert.is((await get(`/estoque/movimentos?referencia_externa=${'r'.repeat(100)}`)).status, 200);
  assert.is((await get('/estoque/movimentos/nao-e-uuid')).status, 400);
});

test('every filter has an index that starts with the account (tenant first), in the list\'s order', async () => {
  const indexes = await app.db.pool.anyFirst(sql.type(z.object({ def: z.string() }))`
    SELECT pg_get_indexdef(indexrelid) AS def FROM pg_index
     WHERE indrelid IN ('estoque_movimentos'::regclass, 'cotacoes'::regclass, 'pedidos_producao'::regclass)`);
  const columns = (def: string) => /\((.*?)\)/.exec(def)?.[1] ?? '';
  const has = (table: string, cols: string) => indexes.some((d) => d.includes(` ON public.${table} `) && columns(d) === cols);
  for (const filtro of ['variacao_id', 'tipo', 'motivo', 'referencia_externa']) {
    assert.ok(has('estoque_movimentos', `conta_id, ${filtro}, criado_em, id`), filtro);
  }
  assert.ok(has('estoque_movimentos', 'conta_id, criado_em, id'), 'criado_desde, criado_ate and the order');
  assert.ok(has('cotacoes', 'conta_id, referencia_externa, criado_em, id'));
  assert.ok(has('pedidos_producao', 'conta_id, referencia_externa, criado_em, id'));
});

test.run();
