// Movements by SKU and in batches (issue 19, item 4): POST /estoque/movimentos with sku instead of
// variacao_id (exactly one; a product's SKU with several variations is ambiguous), and
// POST /estoque/movimentos/lote: up to 100 movements under one Idempotency-Key, all or none, the
// index and reason of every refused item, priced 2 units a movement.
import { randomUUID } from 'node:crypto';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { criarProduto, criarVariacao } from '#shared/db/catalogo.ts';
import { sql } from '#shared/db/pool.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { criarProdutoCompleto, definirSaldo, saldoDe, type ProdutoFixture } from './helpers/catalogo.ts';
import { createAccount, createPlan, type TestAccount } from './helpers/fixtures.ts';
import { request } from './helpers/http.ts';
import { awayFromMinuteBoundary, cobrado, lerUso, minuteUsed, planoMedidor, settled } from './helpers/uso.ts';

const test = suite('stock movements by SKU and in batches');
let app: TestApp;
let conta: TestAccount;
let vaso: ProdutoFixture; // two variations: its product SKU is ambiguous
let lua: ProdutoFixture; // one variation: its product SKU names it
let pacote: ProdutoFixture; // minimum 5, multiple 5

const post = (path: string, body: unknown, options: { key?: string; token?: string } = {}) =>
  request(`${app.baseUrl}/estoque${path}`, { token: options.token ?? conta.token, body, headers: { 'idempotency-key': options.key ?? randomUUID() } });
const mover = (body: unknown, options?: { key?: string; token?: string }) => post('/movimentos', body, options);
const lote = (movimentos: unknown[], options?: { key?: string; token?: string }) => post('/movimentos/lote', { movimentos }, options);

/** Everything a refused batch must leave as it was: balances, movements and the outbox. */
const estado = () => app.db.pool.one(sql.type(z.object({ saldos: z.string(), movimentos: z.number(), eventos: z.string() }))`
  SELECT (SELECT string_agg(id || ':' || saldo, ',' ORDER BY id) FROM estoque_saldos WHERE conta_id = ${conta.contaId}) AS saldos,
         (SELECT count(*)::int FROM estoque_movimentos WHERE conta_id = ${conta.contaId}) AS movimentos,
         (SELECT coalesce(string_agg(id || ':' || dados::text, ',' ORDER BY seq), '') FROM outbox WHERE conta_id = ${conta.contaId}) AS eventos`);

test.before(async () => {
  app = await startTestApp();
  conta = await createAccount(app.db.pool, { plano: await planoMedidor(app.db.pool) });
  vaso = await criarProdutoCompleto(app.db.pool, conta.contaId, { variacoes: [{}, {}] });
  lua = await criarProdutoCompleto(app.db.pool, conta.contaId);
  pacote = await criarProdutoCompleto(app.db.pool, conta.contaId, { variacoes: [{ quantidadeMinima: 5, multiplo: 5 }] });
  for (const v of [...vaso.variacoes, ...lua.variacoes]) await definirSaldo(app.db.pool, conta.contaId, v.id, 10);
});
test.after(async () => app.stop());

const v = (p: ProdutoFixture, i = 0) => p.variacoes[i]?.id ?? '';
const skuDe = (p: ProdutoFixture, i = 0) => p.variacoes[i]?.sku ?? '';

test('sku names the variation: the movement is that variation\'s, answered with its variacao_id', async () => {
  const res = await mover({ tipo: 'saida', sku: skuDe(vaso, 1), quantidade: 2, motivo: 'venda_marketplace' });
  assert.is(res.status, 201, res.text);
  assert.is(res.body.variacao_id, v(vaso, 1));
  assert.equal([res.body.saldo_antes, res.body.saldo_depois], [10, 8]);
  assert.is(await saldoDe(app.db.pool, conta.contaId, v(vaso, 1)), 8);
  assert.is(await saldoDe(app.db.pool, conta.contaId, v(vaso, 0)), 10, 'the other variation untouched');
  await mover({ tipo: 'entrada', sku: skuDe(vaso, 1), quantidade: 2, motivo: 'correcao' });
});

test('the SKU of a product with one variation names that variation', async () => {
  const res = await mover({ tipo: 'entrada', sku: lua.sku, quantidade: 1, motivo: 'devolucao' });
  assert.is(res.status, 201, res.text);
  assert.is(res.body.variacao_id, v(lua));
  assert.equal([res.body.saldo_antes, res.body.saldo_depois], [10, 11]);
  await mover({ tipo: 'saida', sku: lua.sku, quantidade: 1, motivo: 'correcao' });
});

test('the SKU of a product with several variations is ambiguous: 422 sku_ambiguo saying how many, nothing written', async () => {
  const antes = await estado();
  const res = await mover({ tipo: 'saida', sku: vaso.sku, quantidade: 1, motivo: 'venda_loja' });
  assert.is(res.status, 422);
  assert.is(res.body.codigo, 'saldo_insuficiente');
  assert.is(res.body.motivo, 'sku_ambiguo');
  assert.match(res.body.detail, '2 variações');
  assert.equal(await estado(), antes);
});

test('a variation\'s SKU wins over the same SKU of another product', async () => {
  const duplo = await app.db.pool.transaction(async (tx) => {
    const p = await criarProduto(tx, conta.contaId, { sku: 'DUPLO', nome: 'Produto de SKU repetido' });
    await criarVariacao(tx, conta.contaId, { produtoId: p.id, sku: 'DUPLO-A', nome: 'A' });
    await criarVariacao(tx, conta.contaId, { produtoId: p.id, sku: 'DUPLO-B', nome: 'B' });
    const outro = await criarProduto(tx, conta.contaId, { sku: 'OUTRO', nome: 'Outro' });
    return criarVariacao(tx, conta.contaId, { produtoId: outro.id, sku: 'DUPLO', nome: 'Variação chamada DUPLO' });
  });
  const res = await mover({ tipo: 'entrada', sku: 'DUPLO', quantidade: 1, motivo: 'outro' });
  assert.is(res.status, 201, res.text);
  assert.is(res.body.variacao_id, duplo?.id);
});

test('an unknown SKU, or another account\'s, is 422 referencia_invalida, answered like an unknown variacao_id', async () => {
  const outra = await createAccount(app.db.pool);
  const alheio = await criarProdutoCompleto(app.db.pool, outra.contaId, { sku: 'SO-DA-OUTRA' });
  await definirSaldo(app.db.pool, outra.contaId, v(alheio), 50);
  const antes = await estado();
  const desconhecido = await mover({ tipo: 'saida', sku: 'NAO-EXISTE', quantidade: 1, motivo: 'venda_loja' });
  const alheia = await mover({ tipo: 'saida', sku: skuDe(alheio), quantidade: 1, motivo: 'venda_loja' });
  const produtoAlheio = await mover({ tipo: 'saida', sku: 'SO-DA-OUTRA', quantidade: 1, motivo: 'venda_loja' });
  const porId = await mover({ tipo: 'saida', variacao_id: randomUUID(), quantidade: 1, motivo: 'venda_loja' });
  for (const res of [desconhecido, alheia, produtoAlheio]) {
    assert.is(res.status, 422);
    assert.is(res.body.motivo, 'referencia_invalida');
    assert.is(res.body.detail, porId.body.detail);
  }
  assert.equal(await estado(), antes);
  assert.is(await saldoDe(app.db.pool, outra.contaId, v(alheio)), 50);
});

test('exactly one of variacao_id and sku: both, or neither, is 400; a SKU no catalog could hold is 400', async () => {
  const cases: [Record<string, unknown>, string][] = [
    [{ variacao_id: v(lua), sku: lua.sku }, 'sku'],
    [{}, 'variacao_id'],
    [{ sku: 'com espaço' }, 'sku'],
    [{ sku: '' }, 'sku'],
    [{ sku: 'x'.repeat(65) }, 'sku'],
  ];
  for (const [fields, campo] of cases) {
    const res = await mover({ tipo: 'entrada', quantidade: 1, motivo: 'outro', ...fields });
    assert.is(res.status, 400, JSON.stringify(fields));
    assert.ok(res.body.erros.some((e: { campo: string }) => e.campo === campo), res.text);
  }
});

test('a movement by SKU is repeated by its Idempotency-Key like any other', async () => {
  const body = { tipo: 'entrada', sku: skuDe(vaso), quantidade: 1, motivo: 'outro' };
  const first = await mover(body, { key: 'sku-repetido' });
  const again = await mover(body, { key: 'sku-repetido' });
  assert.is(again.status, 201);
  assert.is(again.headers.get('idempotent-replayed'), 'true');
  assert.equal(again.body, first.body);
  assert.is((await mover({ ...body, sku: undefined, variacao_id: v(vaso) }, { key: 'sku-repetido' })).body.codigo, 'idempotencia_conflito',
    'the same movement by id is another body');
  await mover({ tipo: 'saida', sku: skuDe(vaso), quantidade: 1, motivo: 'correcao' });
});

test('a batch applies every movement, in order within each balance, and answers each as a movement alone, in the order given', async () => {
  const res = await lote([
    { tipo: 'entrada', sku: skuDe(vaso, 1), quantidade: 5, motivo: 'correcao', referencia_externa: 'LOTE-1' },
    { tipo: 'saida', variacao_id: v(lua), quantidade: 3, motivo: 'venda_marketplace', metadados: { item: '2' } },
    { tipo: 'saida', sku: skuDe(vaso, 1), quantidade: 15, motivo: 'venda_marketplace' },
    { tipo: 'ajuste', variacao_id: v(vaso), contado: 4, motivo: 'perda' },
  ]);
  assert.is(res.status, 201, res.text);
  const movimentos = res.body.movimentos;
  assert.equal(Object.keys(res.body), ['movimentos']);
  assert.equal(movimentos.map((m: Record<string, unknown>) => [m.variacao_id, m.tipo, m.quantidade, m.saldo_antes, m.saldo_depois]), [
    [v(vaso, 1), 'entrada', 5, 10, 15],
    [v(lua), 'saida', 3, 10, 7],
    [v(vaso, 1), 'saida', 15, 15, 0],
    [v(vaso), 'ajuste', -6, 10, 4],
  ]);
  assert.is(movimentos[0].referencia_externa, 'LOTE-1');
  assert.equal(movimentos[1].metadados, { item: '2' });
  for (const m of movimentos) assert.equal((await request(`${app.baseUrl}/estoque/movimentos/${m.id}`, { token: conta.token })).body, m);
  // Stored with the batch's id and each one's place in the request, made by the API with the caller's key.
  const lugares = await app.db.pool.any(sql.type(z.object({ id: z.string(), lote_posicao: z.number(), lote_id: z.string(), via: z.string(), chave_id: z.string().nullable() }))`
    SELECT id, lote_posicao, lote_id, via, chave_id FROM estoque_movimentos
     WHERE conta_id = ${conta.contaId} AND id = ANY (${sql.array(movimentos.map((m: { id: string }) => m.id), 'uuid')}) ORDER BY lote_posicao`);
  const loteId = lugares[0]?.lote_id ?? '';
  assert.equal(lugares, movimentos.map((m: { id: string }, i: number) => ({ id: m.id, lote_posicao: i, lote_id: loteId, via: 'api', chave_id: conta.chaveId })));
  assert.equal([await saldoDe(app.db.pool, conta.contaId, v(vaso)), await saldoDe(app.db.pool, conta.contaId, v(vaso, 1)), await saldoDe(app.db.pool, conta.contaId, v(lua))], [4, 0, 7]);
  // Each movement wrote its estoque.movimentado as alone: grouped per variation, the pending event of
  // each will carry the last movement of it when the relay sends it.
  const pendentes = await app.db.pool.any(sql.type(z.object({ variacao: z.string(), movimento: z.string() }))`
    SELECT o.dados ->> 'variacao_id' AS variacao, g.dados ->> 'movimento_id' AS movimento
      FROM outbox o, evento_agrupado_atual(o.conta_id, o.tipo, o.dados) g
     WHERE o.conta_id = ${conta.contaId} AND o.tipo = 'estoque.movimentado' AND o.relayed_at IS NULL`);
  const porVariacao = Object.fromEntries(pendentes.map((p) => [p.variacao, p.movimento]));
  assert.is(porVariacao[v(vaso, 1)], movimentos[2].id);
  assert.is(porVariacao[v(lua)], movimentos[1].id);
  assert.is(porVariacao[v(vaso)], movimentos[3].id);
  await definirSaldo(app.db.pool, conta.contaId, v(vaso), 10);
  await definirSaldo(app.db.pool, conta.contaId, v(vaso, 1), 10);
  await definirSaldo(app.db.pool, conta.contaId, v(lua), 10);
});

test('one refusal refuses the batch: 422 lote_recusado with the index and reason of every refused item, and nothing is written', async () => {
  const antes = await estado();
  const res = await lote([
    { tipo: 'entrada', variacao_id: v(lua), quantidade: 1, motivo: 'outro' },
    { tipo: 'saida', variacao_id: v(vaso), quantidade: 11, motivo: 'venda_loja' },
    { tipo: 'entrada', sku: vaso.sku, quantidade: 1, motivo: 'outro' },
    { tipo: 'entrada', variacao_id: v(pacote), quantidade: 7, motivo: 'outro' },
    { tipo: 'saida', sku: 'NAO-EXISTE', quantidade: 1, motivo: 'outro' },
    { tipo: 'entrada', variacao_id: v(pacote), quantidade: 3, motivo: 'outro' },
  ]);
  assert.is(res.status, 422, res.text);
  assert.is(res.body.codigo, 'saldo_insuficiente');
  assert.is(res.body.motivo, 'lote_recusado');
  assert.match(res.body.detail, '5 movimentos de 6');
  assert.equal(res.body.recusas.map((r: { indice: number; motivo: string }) => [r.indice, r.motivo]), [
    [1, 'saldo_insuficiente'], [2, 'sku_ambiguo'], [3, 'fora_do_multiplo'], [4, 'referencia_invalida'], [5, 'abaixo_do_minimo'],
  ]);
  assert.match(res.body.recusas[0].mensagem, 'O saldo é 10');
  assert.equal(await estado(), antes, 'no balance, movement or event; not even the accepted item\'s');
});

test('a refused item moves nothing, so the items after it are judged without it', async () => {
  const res = await lote([
    { tipo: 'saida', variacao_id: v(lua), quantidade: 50, motivo: 'venda_loja' },
    { tipo: 'saida', variacao_id: v(lua), quantidade: 8, motivo: 'venda_loja' },
    { tipo: 'saida', variacao_id: v(lua), quantidade: 3, motivo: 'venda_loja' },
  ]);
  assert.is(res.status, 422);
  assert.equal(res.body.recusas.map((r: { indice: number }) => r.indice), [0, 2], 'the second fits in 10; the third does not fit in the 2 left');
  assert.is(await saldoDe(app.db.pool, conta.contaId, v(lua)), 10);
});

test('a batch holds 1 to 100 movements, each validated as a movement alone; errors name movimentos[i]', async () => {
  const item = { tipo: 'entrada', variacao_id: v(lua), quantidade: 1, motivo: 'outro' };
  for (const [body, campo] of [
    [{ movimentos: [] }, 'movimentos'],
    [{ movimentos: Array.from({ length: 101 }, () => item) }, 'movimentos'],
    [{}, 'movimentos'],
    [{ movimentos: [item], observacao: 'x' }, 'observacao'],
    [{ movimentos: [item, { ...item, quantidade: 0 }] }, 'movimentos[1].quantidade'],
    [{ movimentos: [item, item, { ...item, variacao_id: undefined }] }, 'movimentos[2].variacao_id'],
    [{ movimentos: [{ ...item, sku: lua.sku }] }, 'movimentos[0].sku'],
    [{ movimentos: [{ ...item, metadados: { a: 1 } }] }, 'movimentos[0].metadados.a'],
  ] as [unknown, string][]) {
    const res = await post('/movimentos/lote', body);
    assert.is(res.status, 400, JSON.stringify(body).slice(0, 100));
    assert.ok(res.body.erros.some((e: { campo: string }) => e.campo === campo), `${campo}: ${res.text}`);
  }
  const cem = await lote(Array.from({ length: 100 }, () => item));
  assert.is(cem.status, 201, '100 is allowed');
  assert.is(cem.body.movimentos.length, 100);
  assert.is(await saldoDe(app.db.pool, conta.contaId, v(lua)), 110);
  await definirSaldo(app.db.pool, conta.contaId, v(lua), 10);
});

test('a repetition replays 201 with the movements read again, in order, moving nothing; another body is 422 idempotencia_conflito', async () => {
  const movimentos = [
    { tipo: 'saida', sku: lua.sku, quantidade: 1, motivo: 'venda_loja' },
    { tipo: 'saida', variacao_id: v(vaso), quantidade: 2, motivo: 'venda_loja' },
  ];
  const first = await lote(movimentos, { key: 'lote-repetido' });
  assert.is(first.status, 201);
  const again = await post('/movimentos/lote', { movimentos: movimentos.map((m) => Object.fromEntries(Object.entries(m).reverse())) }, { key: 'lote-repetido' });
  assert.is(again.status, 201);
  assert.is(again.headers.get('idempotent-replayed'), 'true');
  assert.equal(again.body, first.body);
  assert.equal([await saldoDe(app.db.pool, conta.contaId, v(lua)), await saldoDe(app.db.pool, conta.contaId, v(vaso))], [9, 8]);
  const conflito = await lote([...movimentos].reverse(), { key: 'lote-repetido' });
  assert.is(conflito.status, 422);
  assert.is(conflito.body.codigo, 'idempotencia_conflito');
  const outraRota = await mover(movimentos[0], { key: 'lote-repetido' });
  assert.is(outraRota.body.codigo, 'idempotencia_conflito', 'a key is bound to its path');
});

test('a refused batch is replayed with the same recusas, even after the balance would let it through', async () => {
  const corpo = [{ tipo: 'saida', variacao_id: v(lua), quantidade: 30, motivo: 'venda_loja' }];
  const first = await lote(corpo, { key: 'lote-recusado' });
  assert.is(first.status, 422);
  await definirSaldo(app.db.pool, conta.contaId, v(lua), 100);
  const again = await lote(corpo, { key: 'lote-recusado' });
  assert.is(again.status, 422);
  assert.is(again.headers.get('idempotent-replayed'), 'true');
  assert.is(again.body.motivo, 'lote_recusado');
  assert.equal(again.body.recusas, first.body.recusas);
  assert.is(await saldoDe(app.db.pool, conta.contaId, v(lua)), 100);
  await definirSaldo(app.db.pool, conta.contaId, v(lua), 10);
});

test('price: 2 units a movement in the month and in the burst; a repetition 1 in the burst, 0 in the month', async () => {
  const item = { tipo: 'entrada', variacao_id: v(lua), quantidade: 1, motivo: 'outro' };
  const charged = async (movimentos: unknown[], key: string) => {
    await settled(app);
    const antes = await lerUso(app.db.pool, conta.contaId, conta.chaveId);
    const res = await lote(movimentos, { key });
    await settled(app);
    return { status: res.status, ...cobrado(antes, await lerUso(app.db.pool, conta.contaId, conta.chaveId)) };
  };
  assert.equal(await charged([item, item, item], 'preco-3'), { status: 201, mes: 6, rajada: 6 });
  assert.equal(await charged([item, item, item], 'preco-3'), { status: 201, mes: 0, rajada: 1 });
  assert.equal(await charged(Array.from({ length: 40 }, () => item), 'preco-40'), { status: 201, mes: 80, rajada: 80 });
  assert.equal(await charged([{ ...item, quantidade: 0 }, item], 'preco-invalido'), { status: 400, mes: 4, rajada: 4 },
    'an invalid batch is priced by what it carries');
  await definirSaldo(app.db.pool, conta.contaId, v(lua), 10);
});

test('the minute counter is the writes\', up to the burst\'s size; the month takes every movement', async () => {
  await createPlan(app.db.pool, 'lote_rajada_10', { rajada: 10, rajada_recarga_por_segundo: 1, escritas_por_minuto: 1000 });
  const pequena = await createAccount(app.db.pool, { plano: 'lote_rajada_10' });
  const produto = await criarProdutoCompleto(app.db.pool, pequena.contaId);
  await app.db.pool.query(sql.unsafe`DELETE FROM minute_windows WHERE conta_id = ${pequena.contaId}`);
  await awayFromMinuteBoundary(app.db.pool);
  const uso = () => app.db.pool.one(sql.type(z.object({ escrita: z.number(), leitura: z.number(), mes: z.number() }))`
    SELECT ${minuteUsed(pequena.contaId, 'escrita')} AS escrita,
           ${minuteUsed(pequena.contaId, 'leitura')} AS leitura,
           coalesce((SELECT calls FROM effective_monthly_usage WHERE conta_id = ${pequena.contaId}), 0)::int AS mes`);
  const res = await lote(Array.from({ length: 30 }, () => ({ tipo: 'entrada', variacao_id: v(produto), quantidade: 1, motivo: 'outro' })), { token: pequena.token });
  assert.is(res.status, 201, res.text);
  await settled(app);
  assert.equal(await uso(), { escrita: 10, leitura: 0, mes: 60 });
});

test('scope estoque:escrever and the creator\'s permission estoque_produtos.movimentar', async () => {
  const item = { tipo: 'entrada', variacao_id: v(lua), quantidade: 1, motivo: 'outro' };
  const leitor = await createAccount(app.db.pool, { escopos: ['estoque:ler'] });
  const semPermissao = await createAccount(app.db.pool, { permissoes: ['estoque_produtos.ver'] });
  for (const token of [leitor.token, semPermissao.token]) {
    const res = await lote([item], { token });
    assert.is(res.status, 403);
    assert.is(res.body.codigo, 'escopo_insuficiente');
  }
});

test('another account\'s variation in a batch is refused like a missing one; its balance untouched', async () => {
  const outra = await createAccount(app.db.pool);
  const alheio = await criarProdutoCompleto(app.db.pool, outra.contaId);
  await definirSaldo(app.db.pool, outra.contaId, v(alheio), 40);
  const res = await lote([
    { tipo: 'saida', variacao_id: v(alheio), quantidade: 1, motivo: 'venda_loja' },
    { tipo: 'saida', sku: skuDe(alheio), quantidade: 1, motivo: 'venda_loja' },
  ]);
  assert.is(res.status, 422);
  assert.equal(res.body.recusas.map((r: { motivo: string }) => r.motivo), ['referencia_invalida', 'referencia_invalida']);
  assert.not.match(JSON.stringify([res.body.detail, res.body.recusas]), '40', 'nothing of their balance');
  assert.is(await saldoDe(app.db.pool, outra.contaId, v(alheio)), 40);
});

test('keys and limits are judged before the body: a bad key is 401 even with a broken body; a broken body is 400 at the price of one movement', async () => {
  const raw = (token: string, rawBody: string, contentType = 'application/json') => request(`${app.baseUrl}/estoque/movimentos/lote`, {
    token, rawBody, headers: { 'content-type': contentType, 'idempotency-key': randomUUID() },
  });
  const semChave = await raw('chv_AAAAAAAA_invalida', '{"movimentos": [');
  assert.is(semChave.status, 401);
  assert.is((await raw('chv_AAAAAAAA_invalida', '{"movimentos": []}', 'text/plain')).status, 401);
  const leitor = await createAccount(app.db.pool, { escopos: ['estoque:ler'] });
  assert.is((await raw(leitor.token, 'x'.repeat(70_000))).status, 403, 'the scope before the body\'s size');
  assert.is((await raw(conta.token, '{"movimentos": []}', 'text/plain')).status, 415);
  await settled(app);
  const antes = await lerUso(app.db.pool, conta.contaId, conta.chaveId);
  const quebrado = await raw(conta.token, '{"movimentos": [');
  assert.is(quebrado.status, 400);
  await settled(app);
  assert.equal(cobrado(antes, await lerUso(app.db.pool, conta.contaId, conta.chaveId)), { mes: 2, rajada: 2 });
});

test('batches and single movements of the same balances at once never wait on each other in a circle', async () => {
  const [a, b] = [v(vaso), v(vaso, 1)];
  await definirSaldo(app.db.pool, conta.contaId, a, 1000);
  await definirSaldo(app.db.pool, conta.contaId, b, 1000);
  const saida = (variacao_id: string) => ({ tipo: 'saida', variacao_id, quantidade: 1, motivo: 'venda_loja' });
  const results = await Promise.all(Array.from({ length: 24 }, (_, i) => {
    if (i % 3 === 0) return mover(saida(i % 2 ? a : b));
    return lote(i % 2 ? [saida(a), saida(b), saida(a)] : [saida(b), saida(a), saida(b)]);
  }));
  assert.equal(results.map((r) => r.status), results.map(() => 201), results.map((r) => r.text).join('\n').slice(0, 500));
  const movidos = results.flatMap((r) => r.body.movimentos ?? [r.body]);
  const de = (id: string) => movidos.filter((m: { variacao_id: string }) => m.variacao_id === id).length;
  assert.equal([await saldoDe(app.db.pool, conta.contaId, a), await saldoDe(app.db.pool, conta.contaId, b)], [1000 - de(a), 1000 - de(b)]);
});

test.run();
