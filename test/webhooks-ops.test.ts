import { randomUUID } from 'node:crypto';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { sql } from '#shared/db/pool.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { createAccount, type TestAccount } from './helpers/fixtures.ts';
import { runOps, spawnOps, type OpsResult } from './helpers/ops.ts';
import { emit, eventually, makeDue, startReceiver, type Receiver } from './helpers/receiver.ts';

const test = suite('webhooks: operator CLI and views');
let app: TestApp;
let receiver: Receiver;
let account: TestAccount;
let endpoint: { id: string; segredo: string };

test.before(async () => {
  receiver = await startReceiver();
  app = await startTestApp({ worker: true });
  account = await createAccount(app.db.pool, { plano: 'oficina' });
});
test.after(async () => {
  await app.stop();
  await receiver.close();
});

/** The CLI as an operator runs it (in-process); private networks allowed unless said otherwise (the receiver is on loopback). */
function ops(args: string[], options: { allowPrivate?: boolean; spawned?: boolean } = {}): Promise<OpsResult> {
  const env = { WEBHOOK_ALLOW_PRIVATE_NETWORKS: String(options.allowPrivate ?? true) };
  // The smoke test of the real process: one command of the family runs as a process of its own.
  return (options.spawned ? spawnOps : runOps)(app.db.url, args, env);
}

const ref = () => ['--conta', account.contaId, '--endpoint', endpoint.id];

test('adds an endpoint and prints its whsec_ secret once; lists endpoints without secrets', async () => {
  const added = await ops(['webhooks', 'add', '--conta', account.contaId, '--usuario', account.usuarioId,
    '--url', receiver.url('/cli'), '--tipos', 'cotacao.criada,cotacao.aprovada', '--descricao', 'ERP'], { spawned: true });
  assert.is(added.code, 0, added.stderr);
  assert.match(added.json.segredo, /^whsec_[A-Za-z0-9+/]{43}=$/);
  assert.equal(added.json.tipos, ['cotacao.criada', 'cotacao.aprovada']);
  endpoint = added.json;
  receiver.setSecrets('/cli', endpoint.segredo);
  const listed = await ops(['webhooks', 'list', '--conta', account.contaId]);
  assert.is(listed.json.length, 1);
  assert.not.match(JSON.stringify(listed.json), endpoint.segredo.slice(6));
});

test('refuses a private IP address, an unknown type and a missing creator, naming the option', async () => {
  const base = ['webhooks', 'add', '--conta', account.contaId, '--usuario', account.usuarioId];
  const privado = await ops([...base, '--url', 'http://10.0.0.5/hook'], { allowPrivate: false });
  assert.is(privado.code, 64);
  assert.match(privado.stderr, '--url: address 10.0.0.5 is not public');
  const tipo = await ops([...base, '--url', 'https://example.com/h', '--tipos', 'cotacao.voou']);
  assert.is(tipo.code, 64);
  assert.match(tipo.stderr, '--tipos');
  const semCriador = await ops(['webhooks', 'add', '--conta', account.contaId, '--url', 'https://example.com/h']);
  assert.is(semCriador.code, 64);
  assert.match(semCriador.stderr, '--usuario');
});

test('sends webhook.teste to the endpoint and lists the delivery and its attempts', async () => {
  const sent = await ops(['webhooks', 'test', ...ref(), '--mensagem', 'Olá do operador']);
  assert.is(sent.code, 0, sent.stderr);
  const [got] = await receiver.waitFor(1, (r) => r.id === sent.json.event_id);
  assert.equal(got?.json.dados, { objeto: 'teste', mensagem: 'Olá do operador' });
  await eventually(async () => (await ops(['webhooks', 'deliveries', '--conta', account.contaId, '--status', 'succeeded'])).json, (l) => l.length === 1);
  const [delivery] = (await ops(['webhooks', 'deliveries', '--conta', account.contaId, '--evento', sent.json.event_id])).json;
  assert.is(delivery.tipo, 'webhook.teste');
  assert.is(delivery.status, 'succeeded');
  const attempts = await ops(['webhooks', 'attempts', '--conta', account.contaId, '--entrega', delivery.id]);
  assert.is(attempts.json.length, 1);
  assert.is(attempts.json[0].response_status, 200);
});

test('disables and re-enables an endpoint; a disabled endpoint gets no test', async () => {
  const disabled = await ops(['webhooks', 'disable', ...ref()]);
  assert.is(disabled.json.ativo, false);
  assert.is(disabled.json.desativado_motivo, 'operador');
  const refused = await ops(['webhooks', 'test', ...ref()]);
  assert.is(refused.code, 64);
  assert.match(refused.stderr, 'disabled');
  const enabled = await ops(['webhooks', 'enable', ...ref()]);
  assert.is(enabled.json.ativo, true);
  assert.is(enabled.json.desativado_motivo, null);
});

test('rotates the secret: for 24 hours deliveries verify with the new and the previous secret', async () => {
  const rotated = await ops(['webhooks', 'rotate-secret', ...ref()]);
  assert.is(rotated.code, 0, rotated.stderr);
  assert.ok(rotated.json.segredo !== endpoint.segredo);
  const hours = (Date.parse(rotated.json.segredo_anterior_ate) - Date.now()) / 3_600_000;
  assert.ok(hours > 23.9 && hours <= 24);
  receiver.setSecrets('/cli', rotated.json.segredo, endpoint.segredo);
  const id = await emit(app.db.pool, account.contaId, 'cotacao.criada', { objeto: 'cotacao', id: randomUUID(), codigo: 'COT-2', status: 'rascunho' });
  const [got] = await receiver.waitFor(1, (r) => r.id === id);
  assert.ok(got?.verified);
  endpoint = { ...endpoint, segredo: rotated.json.segredo };
});

test('lists failures since a time and replays them, and replays one event with its original webhook-id', async () => {
  const since = new Date().toISOString();
  receiver.respond(() => ({ status: 500 }));
  const id = await emit(app.db.pool, account.contaId, 'cotacao.aprovada', { objeto: 'cotacao', id: randomUUID(), codigo: 'COT-3' });
  await receiver.waitFor(1, (r) => r.id === id);
  // Seven failures are already behind it: the next attempt is its last.
  await eventually(() => app.db.pool.any(sql.unsafe`SELECT 1 FROM deliveries WHERE event_id = ${id} AND attempts = 1 AND lease_id IS NULL`), (r) => r.length === 1);
  await app.db.pool.query(sql.unsafe`UPDATE deliveries SET run_attempts = 7 WHERE event_id = ${id}`);
  await makeDue(app.db.pool);
  const failures = await eventually(async () => (await ops(['webhooks', 'failures', '--desde', since])).json, (l) => l.length === 1);
  assert.is(failures[0].event_id, id);
  assert.is(failures[0].last_response_status, 500);

  receiver.respond(() => ({ status: 200 }));
  const replayed = await ops(['webhooks', 'replay-failed', '--desde', since, '--conta', account.contaId]);
  assert.equal(replayed.json, { deliveries: 1 });
  const again = await receiver.waitFor(3, (r) => r.id === id);
  assert.ok(again.every((r) => r.json.id === id));
  // Its outcome recorded: a replay leaves a delivery still under a worker's lease as it is.
  await eventually(() => app.db.pool.any(sql.unsafe`SELECT 1 FROM deliveries WHERE event_id = ${id} AND lease_id IS NULL`), (r) => r.length === 1);

  const once = await ops(['webhooks', 'replay', '--conta', account.contaId, '--evento', id]);
  assert.equal(once.json, { event_id: id, deliveries: 1 });
  await receiver.waitFor(4, (r) => r.id === id);
  const unknown = await ops(['webhooks', 'replay', '--conta', account.contaId, '--evento', randomUUID()]);
  assert.is(unknown.code, 64);
});

test('operator views show pending and failed deliveries, queue depth per queue and endpoints near their caps', async () => {
  const failed = await app.db.pool.any(sql.unsafe`SELECT * FROM webhook_deliveries_failed`);
  assert.ok(Array.isArray(failed));
  await app.db.pool.query(sql.unsafe`SELECT * FROM webhook_deliveries_pending`);
  const Depth = z.object({ queue: z.string(), state: z.string(), items: z.number(), oldest: z.string().nullable() });
  await app.db.pool.query(sql.unsafe`UPDATE deliveries SET status = 'pending', completed_at = NULL, next_attempt_at = now() + interval '1 hour' WHERE conta_id = ${account.contaId}`);
  const depth = await app.db.pool.any(sql.type(Depth)`SELECT queue, state, items::int AS items, oldest FROM queue_depth`);
  assert.ok(depth.some((d) => d.queue === 'deliveries' && d.state === 'scheduled' && d.items > 0), JSON.stringify(depth));
  const pending = await app.db.pool.any(sql.unsafe`SELECT * FROM webhook_deliveries_pending WHERE conta_id = ${account.contaId}`);
  assert.ok(pending.length > 0);

  // Oficina allows 3 endpoints: with 3 active, every one of them is near the endpoint cap.
  for (const path of ['/v2', '/v3']) {
    assert.is((await ops(['webhooks', 'add', '--conta', account.contaId, '--usuario', account.usuarioId, '--url', receiver.url(path)])).code, 0);
  }
  const near = await app.db.pool.any(sql.type(z.object({ endpoint_id: z.string(), reasons: z.array(z.string()) }))`
    SELECT endpoint_id, reasons FROM webhook_endpoints_near_caps WHERE conta_id = ${account.contaId}`);
  assert.is(near.length, 3);
  assert.ok(near.every((n) => n.reasons.includes('endpoints')));
  const fourth = await ops(['webhooks', 'add', '--conta', account.contaId, '--usuario', account.usuarioId, '--url', receiver.url('/v4')]);
  assert.is(fourth.code, 1);
  assert.match(fourth.stderr, 'the plan allows 3 active webhook endpoints');
});

test('every request received carried valid signatures', () => {
  assert.equal(receiver.unverified(), []);
});

test.run();
