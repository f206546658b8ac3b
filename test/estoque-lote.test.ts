// Movements in batches: the web process sends the movements of the admitted requests waiting at
// the same moment in one statement (api_estoque_movimentar): in the order of their balances,
// a failing one leaving the others, and a key repeated within one batch is still running for
// the second request. Over HTTP, keys and limits are judged before the body.
import { randomUUID } from 'node:crypto';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { CircuitBreaker } from '../api/admission/breaker.ts';
import { bodyHash } from '../api/writes/idempotency.ts';
import { WriteQueue } from '../api/writes/write-queue.ts';
import { movimentoDoLote, movimentosEmLote, type MovimentoPedido } from '#shared/db/estoque.ts';
import { sql } from '#shared/db/pool.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { criarProdutoCompleto, definirSaldo, saldoDe } from './helpers/catalogo.ts';
import { createAccount, createPlan, type TestAccount } from './helpers/fixtures.ts';
import { request } from './helpers/http.ts';
import { lerUso, settled } from './helpers/uso.ts';

const test = suite('stock movements in batches');
let app: TestApp;
let conta: TestAccount;
let variacao: string;

test.before(async () => {
  app = await startTestApp();
  await createPlan(app.db.pool, 'lote_mov', { rajada: 1000, rajada_recarga_por_segundo: 1, simultaneas_por_chave: 100, simultaneas_por_conta: 100 });
  conta = await createAccount(app.db.pool, { plano: 'lote_mov' });
  const produto = await criarProdutoCompleto(app.db.pool, conta.contaId, { variacoes: [{}] });
  variacao = produto.variacoes[0]?.id ?? '';
  await definirSaldo(app.db.pool, conta.contaId, variacao, 100);
});
test.after(async () => app.stop());

const saida = (quantidade: number, key = randomUUID()): MovimentoPedido => {
  const body = { tipo: 'saida' as const, variacao_id: variacao, quantidade, motivo: 'venda_loja' as const };
  return { ...body, contaId: conta.contaId, chaveId: conta.chaveId, chave: { key, route: 'postEstoqueMovimento', hash: bodyHash(body) } };
};

/** One batch of movements, as the web process sends it. */
async function lote(pedidos: MovimentoPedido[]): Promise<unknown[]> {
  const json = await app.db.pool.oneFirst(sql.type(z.object({ j: z.string() }))`SELECT (${movimentosEmLote(pedidos)})::text AS j`);
  return JSON.parse(String(json)) as unknown[];
}

test('answers every movement in the order given, each balance moved in the order asked', async () => {
  const outra = (await criarProdutoCompleto(app.db.pool, conta.contaId, { variacoes: [{}] })).variacoes[0]?.id ?? '';
  await definirSaldo(app.db.pool, conta.contaId, outra, 10);
  const antes = await saldoDe(app.db.pool, conta.contaId, variacao);
  const writes = await lote([saida(1), { ...saida(3), variacao_id: outra }, saida(2)]);
  const feitos = writes.map((w) => movimentoDoLote(w).movimento);
  assert.equal(feitos.map((m) => m?.variacao_id), [variacao, outra, variacao]);
  assert.equal(feitos.map((m) => m?.saldo_depois), [antes - 1, 7, antes - 3]);
});

test('one Idempotency-Key twice in a batch: the first moves, the second finds it running (409)', async () => {
  const key = randomUUID();
  const antes = await saldoDe(app.db.pool, conta.contaId, variacao);
  const writes = await lote([saida(2, key), saida(2, key)]);
  assert.is(movimentoDoLote(writes[0]).claim, 'new');
  assert.is(movimentoDoLote(writes[1]).claim, 'running');
  assert.is(await saldoDe(app.db.pool, conta.contaId, variacao), antes - 2);
});

test('each movement of a batch is written as answered, by its own key, and each key keeps its outcome for a repetition', async () => {
  const outra = await createAccount(app.db.pool, { plano: 'lote_mov' });
  const daOutra = (await criarProdutoCompleto(app.db.pool, outra.contaId, { variacoes: [{}] })).variacoes[0]?.id ?? '';
  await definirSaldo(app.db.pool, outra.contaId, daOutra, 5);
  const body = { tipo: 'entrada' as const, variacao_id: daOutra, quantidade: 2, motivo: 'devolucao' as const, referencia_externa: 'NF-7', metadados: { loja: 'centro' } };
  const daOutraConta: MovimentoPedido = { ...body, contaId: outra.contaId, chaveId: outra.chaveId, chave: { key: randomUUID(), route: 'postEstoqueMovimento', hash: bodyHash(body) } };
  const pedidos = [saida(1), daOutraConta, saida(1_000_000), saida(2)];
  const answers = (await lote(pedidos)).map(movimentoDoLote);
  assert.equal(answers.map((a) => [a.claim, a.status_code]), [['new', 201], ['new', 201], ['new', 422], ['new', 201]]);
  const Stored = z.object({ id: z.string(), chave_id: z.string(), via: z.string(), saldo_depois: z.number(), criado_em: z.string(), referencia_externa: z.string().nullable(), metadados: z.record(z.string(), z.string()) });
  for (const [i, a] of answers.entries()) {
    const pedido = pedidos[i] as MovimentoPedido;
    const kept = await app.db.pool.one(sql.type(z.object({ status_code: z.number(), resource_id: z.string().nullable(), motivo: z.string().nullable() }))`
      SELECT status_code, resource_id, motivo FROM idempotency_keys WHERE conta_id = ${pedido.contaId} AND chave_id = ${pedido.chaveId} AND key = ${pedido.chave?.key ?? ''}`);
    if (!a.movimento) {
      assert.equal(kept, { status_code: 422, resource_id: null, motivo: 'saldo_insuficiente' });
      continue;
    }
    assert.equal(kept, { status_code: 201, resource_id: a.movimento.id, motivo: null });
    const stored = await app.db.pool.one(sql.type(Stored)`
      SELECT id, chave_id, via, saldo_depois, criado_em::text, referencia_externa, metadados FROM estoque_movimentos WHERE conta_id = ${pedido.contaId} AND id = ${a.movimento.id}`);
    assert.equal({ ...stored, criado_em: new Date(stored.criado_em).toISOString() },
      { id: a.movimento.id, chave_id: pedido.chaveId, via: 'api', saldo_depois: a.movimento.saldo_depois, criado_em: a.movimento.criado_em,
        referencia_externa: a.movimento.referencia_externa, metadados: a.movimento.metadados ?? {} });
  }
  assert.equal(answers[1]?.movimento?.metadados, { loja: 'centro' });
  // The same requests again: each is a repetition of its first outcome, and nothing moves.
  const saldos = [await saldoDe(app.db.pool, conta.contaId, variacao), await saldoDe(app.db.pool, outra.contaId, daOutra)];
  const again = (await lote(pedidos)).map(movimentoDoLote);
  assert.equal(again.map((a) => [a.claim, a.status_code, a.movimento?.id ?? null]), answers.map((a) => ['done', a.status_code, a.movimento?.id ?? null]));
  assert.equal([await saldoDe(app.db.pool, conta.contaId, variacao), await saldoDe(app.db.pool, outra.contaId, daOutra)], saldos);
});

test('a movement that fails leaves the others of its batch, each made once (the batch is redone with each movement isolated)', async () => {
  const antes = await saldoDe(app.db.pool, conta.contaId, variacao);
  const quebrado = { ...saida(1), tipo: 'roubo' } as unknown as MovimentoPedido;
  const writes = await lote([saida(1), quebrado, saida(1)]);
  assert.throws(() => movimentoDoLote(writes[1]), /api_estoque_movimentar failed/);
  assert.equal([movimentoDoLote(writes[0]).claim, movimentoDoLote(writes[2]).claim], ['new', 'new']);
  assert.is(await saldoDe(app.db.pool, conta.contaId, variacao), antes - 2);
});

test('a batch holds at most 64 movements (a backend publishes 64 subtransaction ids); the rest go in the next ones', async () => {
  const muitas = (await criarProdutoCompleto(app.db.pool, conta.contaId, { variacoes: [{}] })).variacoes[0]?.id ?? '';
  await definirSaldo(app.db.pool, conta.contaId, muitas, 500);
  const tamanhos: number[] = [];
  const kind = { name: 'movimentos_teste', call: (args: readonly unknown[]) => (tamanhos.push(args.length), movimentosEmLote(args as MovimentoPedido[])) };
  const writes = new WriteQueue({ pool: app.db.pool, breaker: new CircuitBreaker({ failureThreshold: 3, openMs: 1000, waitBudgetMs: 30_000 }) }, 30_000);
  const answers = await Promise.all(Array.from({ length: 200 }, () => writes.write(kind, { ...saida(1), variacao_id: muitas })));
  assert.ok(answers.every((a) => movimentoDoLote(a).claim === 'new'));
  assert.is(tamanhos.reduce((a, b) => a + b, 0), 200);
  assert.ok(Math.max(...tamanhos) <= 64, `batches of ${tamanhos.join(', ')}`);
  assert.ok(tamanhos.some((t) => t === 64), `batches of ${tamanhos.join(', ')}: a full one was expected`);
  assert.is(await saldoDe(app.db.pool, conta.contaId, muitas), 300);
});

test('over HTTP, keys and limits come before the body: unknown key 401, limit reached 429, then 400 (charged) for a bad body', async () => {
  const ruim = { tipo: 'saida', variacao_id: variacao, motivo: 'venda_loja' };
  const post = (token: string) => request(`${app.baseUrl}/estoque/movimentos`, { token, body: ruim, headers: { 'idempotency-key': randomUUID() } });
  assert.is((await post(`chv_AAAAAAAA_${'x'.repeat(43)}`)).status, 401);
  await settled(app);
  const antes = await lerUso(app.db.pool, conta.contaId, conta.chaveId);
  const invalido = await post(conta.token);
  assert.is(invalido.status, 400);
  assert.is(invalido.body.codigo, 'dados_invalidos');
  await settled(app);
  assert.is((await lerUso(app.db.pool, conta.contaId, conta.chaveId)).mes - antes.mes, 2, 'a refused body is charged like any admitted call');
  await createPlan(app.db.pool, 'lote_vazio', { escritas_por_minuto: 1 });
  const pobre = await createAccount(app.db.pool, { plano: 'lote_vazio' });
  const limitado = await post(pobre.token);
  assert.is(limitado.status, 429, 'a write of 2 units never fits 1 write a minute');
  assert.is(limitado.body.codigo, 'limite_excedido');
});

test.run();
