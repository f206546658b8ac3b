// One request decides only its own answer (issue 17): a bad value or a failure of one request in a
// batch, of admission or of writes, never changes another request's answer. A batch whose
// statement fails as a whole is sent again one request at a time; only unavailability (503) fails
// every request of a batch.
import { randomUUID } from 'node:crypto';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { Batcher } from '../api/admission/batcher.ts';
import { CircuitBreaker } from '../api/admission/breaker.ts';
import { bodyHash } from '../api/writes/idempotency.ts';
import { WriteQueue } from '../api/writes/write-queue.ts';
import { movimentoDoLote, movimentosEmLote, type MovimentoPedido } from '#shared/db/estoque.ts';
import { fromDatabaseError, indisponivel } from '#shared/errors.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { criarProdutoCompleto, definirSaldo, saldoDe, semLimites } from './helpers/catalogo.ts';
import { createAccount, type TestAccount } from './helpers/fixtures.ts';
import { request } from './helpers/http.ts';
import { capturedLog } from './helpers/log-lines.ts';
import { slowRoutes } from './helpers/probe-routes.ts';

const test = suite('fault isolation in batches');
let app: TestApp;
let a: TestAccount;
let b: TestAccount;
let variacao: string;

test.before(async () => {
  app = await startTestApp({ extraRoutes: slowRoutes });
  await semLimites(app.db.pool);
  a = await createAccount(app.db.pool);
  b = await createAccount(app.db.pool);
  variacao = (await criarProdutoCompleto(app.db.pool, a.contaId)).variacoes[0]?.id ?? '';
  await definirSaldo(app.db.pool, a.contaId, variacao, 100);
});
test.after(async () => app.stop());

const policy = { name: 'test', lanes: 1, stallMs: 1000, maxBatch: 100, waitBudgetMs: 10_000 };

test('a batch that fails as a whole is split until the culprit is alone: only it fails', async () => {
  const sent: string[][] = [];
  const splits: number[] = [];
  const batcher = new Batcher<string, string>({ ...policy, onSplit: (_e, size) => splits.push(size) }, async (items) => {
    sent.push(items);
    if (items.includes('veneno')) throw new Error('the statement failed');
    return items.map((i) => i.toUpperCase());
  });
  const answers = await Promise.allSettled(['a', 'b', 'veneno', 'c'].map((i) => batcher.submit(i)));
  assert.equal(answers.map((r) => (r.status === 'fulfilled' ? r.value : 'recusada')), ['A', 'B', 'recusada', 'C']);
  assert.equal(sent, [['a'], ['b', 'veneno', 'c'], ['b', 'veneno'], ['b'], ['veneno'], ['c']], 'halves, one after the other');
  assert.equal(splits, [3, 2], 'each split told');
});

test('a large failing batch costs about twice log2(size) round trips, one at a time, not one per request', async () => {
  let inFlight = 0;
  let most = 0;
  let trips = 0;
  const batcher = new Batcher<number, number>({ ...policy, lanes: 1 }, async (items) => {
    trips++;
    most = Math.max(most, ++inFlight);
    await new Promise((r) => setImmediate(r));
    inFlight--;
    if (items.includes(37)) throw new Error('the statement failed');
    return items;
  });
  // The first goes alone at once; the 63 after it gather into one batch behind it.
  const answers = await Promise.allSettled(Array.from({ length: 64 }, (_, i) => batcher.submit(i)));
  assert.equal(answers.filter((r) => r.status === 'rejected').length, 1);
  assert.ok(trips <= 2 + 2 * Math.log2(64), `${trips} round trips`);
  assert.is(most, 1, 'never more than one in flight');
});

test('unavailability (503) fails every request of its batch at once: nobody is to blame, nothing is retried', async () => {
  const sent: string[][] = [];
  const batcher = new Batcher<string, string>(policy, async (items) => {
    sent.push(items);
    if (items.length > 1) throw indisponivel('banco fora', 1);
    return items;
  });
  const answers = await Promise.allSettled(['a', 'b', 'c'].map((i) => batcher.submit(i)));
  assert.equal(answers.map((r) => r.status), ['fulfilled', 'rejected', 'rejected']);
  assert.equal(sent, [['a'], ['b', 'c']]);
});

const movimento = (observacao?: string): MovimentoPedido => {
  const body = { tipo: 'saida' as const, variacao_id: variacao, quantidade: 1, motivo: 'venda_loja' as const, observacao };
  return { ...body, contaId: a.contaId, chaveId: a.chaveId, chave: { key: randomUUID(), route: 'postEstoqueMovimento', hash: bodyHash(body) } };
};

test('one bad byte in a batch of movements fails only its own movement; the split is logged with its SQLSTATE', async () => {
  const antes = await saldoDe(app.db.pool, a.contaId, variacao);
  const sizes: number[] = [];
  const kind = { name: 'movimentos_isolamento', call: (args: readonly unknown[]) => (sizes.push(args.length), movimentosEmLote(args as MovimentoPedido[])) };
  const { log, lines } = capturedLog('warn');
  const writes = new WriteQueue({ pool: app.db.pool, breaker: new CircuitBreaker({ failureThreshold: 3, openMs: 1000, waitBudgetMs: 30_000 }), log }, 30_000);
  // The first goes alone at once; the three after it gather in the next batch, the NUL among them.
  const answers = await Promise.allSettled([movimento(), movimento('boa'), movimento('nul\u0000'), movimento('boa também')].map((m) => writes.write(kind, m)));
  assert.ok(sizes.includes(3), `the bad one shared a batch: ${sizes.join(', ')}`);
  const claims = answers.map((r) => (r.status === 'fulfilled' ? movimentoDoLote(r.value).claim : 'falhou'));
  assert.equal(claims, ['new', 'new', 'falhou', 'new']);
  const failure = answers[2]?.status === 'rejected' ? answers[2].reason : null;
  assert.is(fromDatabaseError(failure)?.status, 400, 'its own error is a data error: 400, not 500');
  assert.is(await saldoDe(app.db.pool, a.contaId, variacao), antes - 3);
  const split = lines.find((l) => l.msg === 'a write batch failed as a whole; split to find the request at fault');
  // Class 22, a data exception: what an operator needs to tell a bad value from a fault.
  assert.match(String((split?.err as { sqlstate?: string } | undefined)?.sqlstate), /^22/, JSON.stringify(split));
});

test('a request whose admission cannot even be sent (a cost beyond int4) gets its own 400; the others of its batch are served', async () => {
  const probe = (token: string, custo: number) => request(`${app.baseUrl}/teste/cobranca?custo=${custo}&final=1`, { token });
  const good = Array.from({ length: 12 }, (_, i) => probe(i % 2 ? a.token : b.token, 1));
  const bad = probe(b.token, 3_000_000_000);
  const [answers, poisoned] = await Promise.all([Promise.all(good), bad]);
  assert.equal(answers.map((r) => r.status), Array(12).fill(200));
  assert.is(poisoned.status, 400);
  assert.is(poisoned.body.codigo, 'dados_invalidos');
});

test.run();
