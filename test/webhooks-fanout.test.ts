import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { criarUsuario } from '#shared/db/contas.ts';
import { sql } from '#shared/db/pool.ts';
import { criarEndpoint } from '#shared/db/webhooks.ts';
import type { Permissao } from '#shared/domain/acesso.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { createAccount, type TestAccount } from './helpers/fixtures.ts';
import { addEndpoint, emit, eventually, startReceiver, type Receiver } from './helpers/receiver.ts';

const test = suite('webhooks: fan-out by subscription and permission, relay exactly once in commit order');
let app: TestApp;
let receiver: Receiver;
let account: TestAccount;
let n = 0;

test.before(async () => {
  receiver = await startReceiver();
  app = await startTestApp({ worker: true });
  account = await createAccount(app.db.pool, { plano: 'farm' });
});
test.after(async () => {
  await app.stop();
  await receiver.close();
});

async function endpointOf(permissoes: Permissao[], options: { tipos?: string[]; ativo?: boolean; usuarioAtivo?: boolean } = {}) {
  const usuario = await criarUsuario(app.db.pool, { contaId: account.contaId, nome: 'Integração', email: `u${++n}@fanout.invalid`, permissoes });
  if (options.usuarioAtivo === false) await app.db.pool.query(sql.unsafe`UPDATE usuarios SET ativo = false WHERE id = ${usuario.id}`);
  const path = `/e${n}`;
  const endpoint = await addEndpoint(app.db.pool, receiver, { contaId: account.contaId, usuarioId: usuario.id, path, tipos: options.tipos });
  if (options.ativo === false) {
    await app.db.pool.query(sql.unsafe`
      UPDATE webhook_endpoints SET ativo = false, desativado_em = now(), desativado_motivo = 'operador' WHERE id = ${endpoint.id}`);
  }
  return { id: endpoint.id, path };
}

const tiposIn = (path: string) => receiver.received.filter((r) => r.path === path).map((r) => r.json.tipo as string).sort();
const Count = z.object({ count: z.number() });

test("sends each event only to active endpoints subscribed to it whose creator holds the type's permission", async () => {
  const produtos = await endpointOf(['produtos.ver']);
  const cotacoes = await endpointOf(['cotacoes.ver']);
  const nenhuma = await endpointOf([]);
  const inativo = await endpointOf(['produtos.ver', 'cotacoes.ver', 'estoque_insumos.ver'], { usuarioAtivo: false });
  const soAprovadas = await endpointOf(['cotacoes.ver'], { tipos: ['cotacao.aprovada'] });
  const desligado = await endpointOf(['produtos.ver', 'cotacoes.ver'], { ativo: false });
  const insumos = await endpointOf(['estoque_insumos.ver'], { tipos: ['estoque.baixo', 'cotacao.criada'] });

  const cotacao = { objeto: 'cotacao', id: randomUUID(), codigo: 'COT-000007' };
  await emit(app.db.pool, account.contaId, 'produto.criado', { objeto: 'produto', id: randomUUID(), sku: 'A' });
  await emit(app.db.pool, account.contaId, 'cotacao.criada', { ...cotacao, status: 'rascunho' });
  await emit(app.db.pool, account.contaId, 'cotacao.aprovada', cotacao);
  await emit(app.db.pool, account.contaId, 'estoque.baixo', { objeto: 'insumo', insumo: { tipo: 'componente', id: randomUUID() }, abaixo_do_minimo: true });
  await emit(app.db.pool, account.contaId, 'webhook.teste', { objeto: 'teste', mensagem: 'só para mim' }, nenhuma.id);
  await emit(app.db.pool, account.contaId, 'webhook.teste', { objeto: 'teste', mensagem: 'ignora a assinatura' }, soAprovadas.id);

  await receiver.waitFor(7);
  const relayed = await eventually(
    () => app.db.pool.oneFirst(sql.type(Count)`SELECT count(*)::int AS count FROM outbox WHERE conta_id = ${account.contaId} AND relayed_at IS NULL`),
    (c) => c === 0);
  assert.is(relayed, 0);
  await eventually(
    () => app.db.pool.oneFirst(sql.type(Count)`SELECT count(*)::int AS count FROM deliveries WHERE status <> 'succeeded'`),
    (c) => c === 0);

  assert.equal(tiposIn(produtos.path), ['produto.criado']);
  assert.equal(tiposIn(cotacoes.path), ['cotacao.aprovada', 'cotacao.criada']);
  assert.equal(tiposIn(nenhuma.path), ['webhook.teste'], 'no permission: only its own test');
  assert.equal(tiposIn(inativo.path), [], "a deactivated creator holds no permission");
  assert.equal(tiposIn(soAprovadas.path), ['cotacao.aprovada', 'webhook.teste'], 'the test ignores the subscription');
  assert.equal(tiposIn(desligado.path), []);
  assert.equal(tiposIn(insumos.path), ['estoque.baixo'], 'subscribed to cotacao.criada but without cotacoes.ver');
  const deliveries = await app.db.pool.oneFirst(sql.type(Count)`SELECT count(*)::int AS count FROM deliveries`);
  assert.is(deliveries, 7, 'one delivery per event and receiving endpoint, no more');
  assert.equal(receiver.unverified(), []);
});

test("refuses an endpoint beyond the plan's limit at registration", async () => {
  const bancada = await createAccount(app.db.pool, { plano: 'bancada' });
  const input = { contaId: bancada.contaId, usuarioId: bancada.usuarioId, url: receiver.url('/b'), tipos: [], descricao: null };
  await criarEndpoint(app.db.pool, input);
  try {
    await criarEndpoint(app.db.pool, input);
    assert.unreachable('a second endpoint on Bancada must be refused');
  } catch (error) {
    assert.match(String((error as Error & { cause?: Error }).cause?.message ?? error), /plan allows 1 active webhook endpoints/);
  }
});

test('relays an event when its transaction commits, after events that committed before it even if created later', async () => {
  const alvo = await endpointOf(['cotacoes.ver'], { tipos: ['cotacao.enviada'] });
  const evento = (codigo: string) => ({ objeto: 'cotacao', id: randomUUID(), codigo, versao: 1 });
  // A transaction held open on its own connection while another commits.
  const held = new pg.Client({ connectionString: app.db.url });
  await held.connect();
  await held.query('BEGIN');
  const { rows } = await held.query<{ id: string }>('SELECT emit_event($1, $2, $3) AS id', [account.contaId, 'cotacao.enviada', evento('COT-FIRST')]);
  const firstId = rows[0]?.id;
  await emit(app.db.pool, account.contaId, 'cotacao.enviada', evento('COT-SECOND'));
  await receiver.waitFor(1, (r) => r.path === alvo.path);
  await held.query('COMMIT');
  await held.end();
  const got = await receiver.waitFor(2, (r) => r.path === alvo.path);
  assert.equal(got.map((r) => r.json.dados.codigo), ['COT-SECOND', 'COT-FIRST']);
  assert.is(got[1]?.id, firstId);
});

test('relays events committed one after another in that order, and concurrent ones exactly once each', async () => {
  const alvo = await endpointOf(['producao.ver'], { tipos: ['pedido_producao.criado', 'pedido_producao.concluido'] });
  const ids: string[] = [];
  for (let i = 0; i < 60; i++) {
    ids.push(await emit(app.db.pool, account.contaId, 'pedido_producao.criado', { objeto: 'pedido_producao', id: randomUUID(), codigo: `OP-${i}`, tipo: 'estoque' }));
  }
  ids.push(...await Promise.all(Array.from({ length: 150 }, (_, i) =>
    emit(app.db.pool, account.contaId, 'pedido_producao.concluido', { objeto: 'pedido_producao', id: randomUUID(), codigo: `OP-C${i}` }))));
  const got = await receiver.waitFor(210, (r) => r.path === alvo.path);
  assert.equal(new Set(got.map((r) => r.id)), new Set(ids));
  const outOfOrder = await app.db.pool.oneFirst(sql.type(Count)`
    SELECT count(*)::int AS count FROM (
      SELECT relayed_at < lag(relayed_at) OVER (ORDER BY seq) AS earlier
        FROM outbox WHERE conta_id = ${account.contaId} AND tipo = 'pedido_producao.criado') x
     WHERE earlier`);
  assert.is(outOfOrder, 0, 'no event was relayed before one committed earlier');
  const perEvent = await app.db.pool.oneFirst(sql.type(Count)`
    SELECT max(c)::int AS count FROM (SELECT count(*) AS c FROM deliveries GROUP BY event_id, endpoint_id) x`);
  assert.is(perEvent, 1);
  assert.is(new Set(receiver.received.map((r) => `${r.path} ${r.id}`)).size, receiver.received.length, 'nothing received twice');
});

test.run();
