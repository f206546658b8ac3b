// POST /estoque/movimentos: every rule of contract §4.2, one test each.
import { randomUUID } from 'node:crypto';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { criarLocalConsignado, movimentar } from '#shared/db/estoque.ts';
import { sql } from '#shared/db/pool.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { criarProdutoCompleto, definirSaldo, saldoDe, type ProdutoFixture } from './helpers/catalogo.ts';
import { createAccount, type TestAccount } from './helpers/fixtures.ts';
import { request } from './helpers/http.ts';
import { cobrado, lerUso, planoMedidor, settled } from './helpers/uso.ts';

const test = suite('stock movements');
let app: TestApp;
let conta: TestAccount;
let produto: ProdutoFixture;
let variacao: string;
let pacote: string; // minimum 5, multiple 5, two parts

const post = (body: unknown, options: { key?: string | null; token?: string } = {}) =>
  request(`${app.baseUrl}/estoque/movimentos`, {
    token: options.token ?? conta.token,
    body,
    headers: options.key === null ? {} : { 'idempotency-key': options.key ?? randomUUID() },
  });
const movimentos = async (variacaoId: string) =>
  Number(await app.db.pool.oneFirst(sql.unsafe`SELECT count(*)::int FROM estoque_movimentos WHERE variacao_id = ${variacaoId}`));

test.before(async () => {
  app = await startTestApp();
  conta = await createAccount(app.db.pool, { plano: await planoMedidor(app.db.pool) });
  produto = await criarProdutoCompleto(app.db.pool, conta.contaId, {
    variacoes: [{}, { quantidadeMinima: 5, multiplo: 5, partes: ['Base', 'Cúpula'] }],
  });
  variacao = produto.variacoes[0]?.id ?? '';
  pacote = produto.variacoes[1]?.id ?? '';
});
test.after(async () => app.stop());

test('an entry answers 201 with every field of §2.2, creating the balance of the own location', async () => {
  const res = await post({ tipo: 'entrada', variacao_id: variacao, quantidade: 12, motivo: 'devolucao', observacao: 'volta da feira' });
  assert.is(res.status, 201, res.text);
  const { id, criado_em, ...resto } = res.body;
  assert.equal(resto, {
    tipo: 'entrada', variacao_id: variacao, parte_id: null, quantidade: 12, saldo_antes: 0, saldo_depois: 12, motivo: 'devolucao',
    referencia_externa: null, metadados: {},
  });
  assert.match(id, /^[0-9a-f-]{36}$/);
  assert.match(criado_em, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/);
  // The fields of §2.2, and the external references (optional in the request, always in the answer).
  assert.equal(Object.keys(res.body).sort(), ['criado_em', 'id', 'metadados', 'motivo', 'parte_id', 'quantidade', 'referencia_externa',
    'saldo_antes', 'saldo_depois', 'tipo', 'variacao_id']);
  assert.is(await saldoDe(app.db.pool, conta.contaId, variacao), 12);
  const stored = await app.db.pool.one(sql.type(z.object({ via: z.string(), chave_id: z.string(), observacao: z.string(), local_tipo: z.string() }))`
    SELECT m.via, m.chave_id, m.observacao, l.tipo AS local_tipo
      FROM estoque_movimentos m JOIN locais l ON l.conta_id = m.conta_id AND l.id = m.local_id WHERE m.id = ${id}`);
  assert.equal(stored, { via: 'api', chave_id: conta.chaveId, observacao: 'volta da feira', local_tipo: 'proprio' });
});

test('an exit subtracts from the balance', async () => {
  const res = await post({ tipo: 'saida', variacao_id: variacao, quantidade: 5, motivo: 'venda_loja' });
  assert.is(res.status, 201);
  assert.equal([res.body.quantidade, res.body.saldo_antes, res.body.saldo_depois], [5, 12, 7]);
});

test('an exit larger than the balance is 422 saldo_insuficiente and changes nothing', async () => {
  const before = await movimentos(variacao);
  const res = await post({ tipo: 'saida', variacao_id: variacao, quantidade: 8, motivo: 'venda_marketplace' });
  assert.is(res.status, 422);
  assert.is(res.body.codigo, 'saldo_insuficiente');
  assert.is(res.body.motivo, 'saldo_insuficiente');
  assert.is(res.headers.get('content-type'), 'application/problem+json; charset=utf-8');
  assert.is(await saldoDe(app.db.pool, conta.contaId, variacao), 7);
  assert.is(await movimentos(variacao), before);
  const semSaldo = await criarProdutoCompleto(app.db.pool, conta.contaId);
  const nunca = await post({ tipo: 'saida', variacao_id: semSaldo.variacoes[0]?.id, quantidade: 1, motivo: 'venda_loja' });
  assert.is(nunca.status, 422, 'a variation that never had stock has balance 0');
  assert.is(nunca.body.motivo, 'saldo_insuficiente');
});

test('an adjustment sets the counted balance; its quantidade is the signed difference', async () => {
  const down = await post({ tipo: 'ajuste', variacao_id: variacao, contado: 3, motivo: 'correcao' });
  assert.is(down.status, 201);
  assert.equal([down.body.quantidade, down.body.saldo_antes, down.body.saldo_depois], [-4, 7, 3]);
  const up = await post({ tipo: 'ajuste', variacao_id: variacao, contado: 20, motivo: 'correcao' });
  assert.equal([up.body.quantidade, up.body.saldo_antes, up.body.saldo_depois], [17, 3, 20]);
  const zero = await post({ tipo: 'ajuste', variacao_id: variacao, contado: 0, motivo: 'perda' });
  assert.equal([zero.body.quantidade, zero.body.saldo_antes, zero.body.saldo_depois], [-20, 20, 0]);
  assert.is(await saldoDe(app.db.pool, conta.contaId, variacao), 0);
});

test('entrada and saida need quantidade 1-99999 (never contado); ajuste needs contado 0-99999 (never quantidade)', async () => {
  const cases: [Record<string, unknown>, string][] = [
    [{ tipo: 'entrada' }, 'quantidade'],
    [{ tipo: 'saida', quantidade: 0 }, 'quantidade'],
    [{ tipo: 'entrada', quantidade: 100000 }, 'quantidade'],
    [{ tipo: 'entrada', quantidade: 1.5 }, 'quantidade'],
    [{ tipo: 'entrada', quantidade: '3' }, 'quantidade'],
    [{ tipo: 'entrada', quantidade: 1, contado: 1 }, 'contado'],
    [{ tipo: 'ajuste' }, 'contado'],
    [{ tipo: 'ajuste', contado: -1 }, 'contado'],
    [{ tipo: 'ajuste', contado: 100000 }, 'contado'],
    [{ tipo: 'ajuste', contado: 5, quantidade: 5 }, 'quantidade'],
  ];
  for (const [fields, campo] of cases) {
    const res = await post({ variacao_id: variacao, motivo: 'outro', ...fields });
    assert.is(res.status, 400, JSON.stringify(fields));
    assert.is(res.body.codigo, 'dados_invalidos');
    assert.ok(res.body.erros.some((e: { campo: string }) => e.campo === campo), `${JSON.stringify(fields)} names ${campo}: ${res.text}`);
  }
  assert.is((await post({ tipo: 'entrada', variacao_id: variacao, quantidade: 99999, motivo: 'outro' })).status, 201, '99999 is allowed');
});

test('motivo is one of the enumeration, tipo too, and unknown fields are refused', async () => {
  for (const [fields, campo] of [
    [{ motivo: 'presente' }, 'motivo'], [{ motivo: undefined }, 'motivo'], [{ tipo: 'transferencia' }, 'tipo'],
    [{ local_id: randomUUID() }, 'local_id'], [{ variacao_id: 'abc' }, 'variacao_id'], [{ parte_id: 'abc' }, 'parte_id'],
  ] as [Record<string, unknown>, string][]) {
    const res = await post({ tipo: 'entrada', variacao_id: variacao, quantidade: 1, motivo: 'outro', ...fields });
    assert.is(res.status, 400, JSON.stringify(fields));
    assert.ok(res.body.erros.some((e: { campo: string }) => e.campo === campo), res.text);
  }
  for (const motivo of ['venda_loja', 'venda_marketplace', 'perda', 'devolucao', 'correcao', 'outro']) {
    assert.is((await post({ tipo: 'entrada', variacao_id: variacao, quantidade: 1, motivo })).status, 201, motivo);
  }
});

test('observacao takes at most 200 characters', async () => {
  assert.is((await post({ tipo: 'entrada', variacao_id: variacao, quantidade: 1, motivo: 'outro', observacao: 'é'.repeat(200) })).status, 201);
  const long = await post({ tipo: 'entrada', variacao_id: variacao, quantidade: 1, motivo: 'outro', observacao: 'x'.repeat(201) });
  assert.is(long.status, 400);
  assert.is(long.body.erros[0].campo, 'observacao');
});

test('a variation of another account is 422 referencia_invalida, answered exactly like a missing one, with none of its data', async () => {
  const outra = await createAccount(app.db.pool);
  const alheio = await criarProdutoCompleto(app.db.pool, outra.contaId, { sku: 'SEGREDO-ALHEIO' });
  const alheia = alheio.variacoes[0]?.id ?? '';
  await definirSaldo(app.db.pool, outra.contaId, alheia, 4321);
  const res = await post({ tipo: 'saida', variacao_id: alheia, quantidade: 1, motivo: 'venda_loja' });
  assert.is(res.status, 422);
  assert.is(res.body.codigo, 'saldo_insuficiente');
  assert.is(res.body.motivo, 'referencia_invalida');
  // (The random request id could hold any four digits by chance: it is left out of the search.)
  const text = res.text.replace(res.body.requisicao_id, '');
  for (const secret of ['SEGREDO', '4321', alheia, alheio.produtoId]) assert.not.match(text, secret);
  const missing = await post({ tipo: 'saida', variacao_id: randomUUID(), quantidade: 1, motivo: 'venda_loja' });
  assert.is(missing.body.detail, res.body.detail);
  assert.is(missing.body.motivo, 'referencia_invalida');
  assert.is(await saldoDe(app.db.pool, outra.contaId, alheia), 4321, 'their balance untouched');
  const entrada = await post({ tipo: 'entrada', variacao_id: alheia, quantidade: 1, motivo: 'outro' });
  assert.is(entrada.body.motivo, 'referencia_invalida', 'not even an entry');
});

test('a part must belong to the variation: another variation\'s part is 422 referencia_invalida; a part keeps its own balance', async () => {
  const [base, cupula] = produto.variacoes[1]?.parteIds ?? [];
  const wrong = await post({ tipo: 'entrada', variacao_id: variacao, parte_id: base, quantidade: 5, motivo: 'outro' });
  assert.is(wrong.status, 422);
  assert.is(wrong.body.motivo, 'referencia_invalida');
  const ok = await post({ tipo: 'entrada', variacao_id: pacote, parte_id: base, quantidade: 10, motivo: 'outro' });
  assert.is(ok.status, 201);
  assert.is(ok.body.parte_id, base);
  assert.equal([ok.body.saldo_antes, ok.body.saldo_depois], [0, 10]);
  const other = await post({ tipo: 'saida', variacao_id: pacote, parte_id: cupula, quantidade: 5, motivo: 'outro' });
  assert.is(other.body.motivo, 'saldo_insuficiente', 'each part has its own balance');
});

test('quantities respect the variation\'s minimum (abaixo_do_minimo) and multiple (fora_do_multiplo); a count does not', async () => {
  const below = await post({ tipo: 'entrada', variacao_id: pacote, quantidade: 3, motivo: 'outro' });
  assert.is(below.status, 422);
  assert.is(below.body.codigo, 'saldo_insuficiente');
  assert.is(below.body.motivo, 'abaixo_do_minimo');
  const off = await post({ tipo: 'entrada', variacao_id: pacote, quantidade: 7, motivo: 'outro' });
  assert.is(off.status, 422);
  assert.is(off.body.motivo, 'fora_do_multiplo');
  assert.match(off.body.detail, '5');
  assert.is((await post({ tipo: 'entrada', variacao_id: pacote, quantidade: 15, motivo: 'outro' })).status, 201);
  const saida = await post({ tipo: 'saida', variacao_id: pacote, quantidade: 6, motivo: 'venda_loja' });
  assert.is(saida.body.motivo, 'fora_do_multiplo', 'exits too');
  const count = await post({ tipo: 'ajuste', variacao_id: pacote, contado: 7, motivo: 'correcao' });
  assert.is(count.status, 201, 'a counted balance is whatever was counted');
  assert.is(count.body.saldo_depois, 7);
});

test('movements always apply to the own location; consignment balances are never moved', async () => {
  const consignado = await criarLocalConsignado(app.db.pool, conta.contaId, 'Loja parceira');
  const fixture = await criarProdutoCompleto(app.db.pool, conta.contaId);
  const v = fixture.variacoes[0]?.id ?? '';
  await app.db.pool.transaction((tx) =>
    movimentar(tx, conta.contaId, { tipo: 'entrada', variacao_id: v, quantidade: 30, motivo: 'outro' }, consignado.id));
  const res = await post({ tipo: 'saida', variacao_id: v, quantidade: 1, motivo: 'venda_loja' });
  assert.is(res.body.motivo, 'saldo_insuficiente', 'the consignment balance does not count');
  assert.is((await post({ tipo: 'entrada', variacao_id: v, quantidade: 2, motivo: 'outro' })).status, 201);
  const estoque = await request(`${app.baseUrl}/estoque?variacao_id=${v}`, { token: conta.token });
  const porLocal = Object.fromEntries(estoque.body.dados.map((s: { local_tipo: string; saldo: number }) => [s.local_tipo, s.saldo]));
  assert.equal(porLocal, { consignado: 30, proprio: 2 });
});

test('the movement, the balance and the estoque.movimentado event commit together; a refusal writes none of them', async () => {
  const fixture = await criarProdutoCompleto(app.db.pool, conta.contaId);
  const v = fixture.variacoes[0]?.id ?? '';
  const eventos = () => app.db.pool.any(sql.type(z.object({ dados: z.any() }))`
    SELECT dados FROM outbox WHERE conta_id = ${conta.contaId} AND tipo = 'estoque.movimentado' AND dados ->> 'variacao_id' = ${v}`);
  assert.is((await post({ tipo: 'saida', variacao_id: v, quantidade: 1, motivo: 'venda_loja' })).status, 422);
  assert.is((await eventos()).length, 0);
  const res = await post({ tipo: 'entrada', variacao_id: v, quantidade: 1, motivo: 'outro' });
  const [evento] = await eventos();
  const local = await app.db.pool.oneFirst(sql.unsafe`SELECT local_id FROM estoque_movimentos WHERE id = ${res.body.id}`);
  assert.equal(evento?.dados, { objeto: 'estoque', variacao_id: v, local_id: local, tipo: 'entrada', movimento_id: res.body.id, referencia_externa: null, metadados: {} });
});

test('Idempotency-Key is required and at most 64 characters', async () => {
  const body = { tipo: 'entrada', variacao_id: variacao, quantidade: 1, motivo: 'outro' };
  const missing = await post(body, { key: null });
  assert.is(missing.status, 400);
  assert.ok(missing.body.erros.some((e: { campo: string }) => e.campo === 'idempotency-key'));
  assert.is((await post(body, { key: 'k'.repeat(65) })).status, 400);
  assert.is((await post(body, { key: 'k'.repeat(64) })).status, 201);
});

test('a repetition replays 201 with the movement read again, moving the balance once', async () => {
  const body = { tipo: 'entrada', variacao_id: variacao, quantidade: 2, motivo: 'outro' };
  const before = await saldoDe(app.db.pool, conta.contaId, variacao);
  const first = await post(body, { key: 'repetir-1' });
  const again = await post({ motivo: 'outro', quantidade: 2, variacao_id: variacao, tipo: 'entrada' }, { key: 'repetir-1' });
  assert.is(again.status, 201);
  assert.is(again.headers.get('idempotent-replayed'), 'true');
  assert.is(first.headers.get('idempotent-replayed'), null);
  assert.equal(again.body, first.body);
  assert.is(await saldoDe(app.db.pool, conta.contaId, variacao), before + 2);
});

test('the same key with another body is 422 idempotencia_conflito; a refusal is replayed even after the balance changes', async () => {
  await post({ tipo: 'entrada', variacao_id: variacao, quantidade: 1, motivo: 'outro' }, { key: 'conflito' });
  const conflict = await post({ tipo: 'entrada', variacao_id: variacao, quantidade: 2, motivo: 'outro' }, { key: 'conflito' });
  assert.is(conflict.status, 422);
  assert.is(conflict.body.codigo, 'idempotencia_conflito');

  const v = (await criarProdutoCompleto(app.db.pool, conta.contaId)).variacoes[0]?.id ?? '';
  const big = { tipo: 'saida', variacao_id: v, quantidade: 5, motivo: 'venda_loja' };
  assert.is((await post(big, { key: 'recusa' })).body.motivo, 'saldo_insuficiente');
  await definirSaldo(app.db.pool, conta.contaId, v, 50);
  const replay = await post(big, { key: 'recusa' });
  assert.is(replay.status, 422);
  assert.is(replay.body.motivo, 'saldo_insuficiente');
  assert.is(replay.headers.get('idempotent-replayed'), 'true');
  assert.is(await saldoDe(app.db.pool, conta.contaId, v), 50, 'the replay moved nothing');
});

test('a movement costs 2 units; a repetition 1 in the burst and 0 in the month', async () => {
  await post({ tipo: 'entrada', variacao_id: variacao, quantidade: 1, motivo: 'outro' });
  const body = { tipo: 'entrada', variacao_id: variacao, quantidade: 1, motivo: 'outro' };
  const charged = async (key: string) => {
    await settled(app);
    const antes = await lerUso(app.db.pool, conta.contaId, conta.chaveId);
    const res = await post(body, { key });
    await settled(app);
    return { status: res.status, ...cobrado(antes, await lerUso(app.db.pool, conta.contaId, conta.chaveId)) };
  };
  assert.equal(await charged('custo'), { status: 201, mes: 2, rajada: 2 });
  assert.equal(await charged('custo'), { status: 201, mes: 0, rajada: 1 });
});

test('scope estoque:escrever and the creator\'s permission estoque_produtos.movimentar are required', async () => {
  const body = { tipo: 'entrada', variacao_id: variacao, quantidade: 1, motivo: 'outro' };
  const leitor = await createAccount(app.db.pool, { escopos: ['estoque:ler', 'catalogo:ler'] });
  assert.is((await post(body, { token: leitor.token })).status, 403);
  const semPermissao = await createAccount(app.db.pool, { permissoes: ['estoque_produtos.ver'] });
  const res = await post(body, { token: semPermissao.token });
  assert.is(res.status, 403);
  assert.is(res.body.codigo, 'escopo_insuficiente');
});

test.run();
