import { randomUUID } from 'node:crypto';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { sql } from '#shared/db/pool.ts';
import { reserveDeliveries } from '#shared/db/deliveries.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { createAccount, type TestAccount, createPlan } from './helpers/fixtures.ts';
import { awayFromHourBoundary } from './helpers/uso.ts';
import { addEndpoint, emit, eventually, makeDue, startReceiver, type Receiver } from './helpers/receiver.ts';

const test = suite('webhooks: deliveries per hour per account, capped by plan');
let app: TestApp;
let receiver: Receiver;
let account: TestAccount;
let other: TestAccount;

const Delivery = z.object({ id: z.string(), status: z.string(), attempts: z.number(), next_attempt_at: z.string(), lease_id: z.string().nullable() });
const Uso = z.object({ hour: z.string(), deliveries: z.number() });

test.before(async () => {
  receiver = await startReceiver();
  app = await startTestApp({ worker: true });
  await createPlan(app.db.pool, 'tres_por_hora', { entregas_webhook_por_hora: 3 });
  account = await createAccount(app.db.pool, { plano: 'tres_por_hora' });
  other = await createAccount(app.db.pool, { plano: 'tres_por_hora' });
  await addEndpoint(app.db.pool, receiver, { contaId: account.contaId, usuarioId: account.usuarioId, path: '/a' });
  await addEndpoint(app.db.pool, receiver, { contaId: other.contaId, usuarioId: other.usuarioId, path: '/b' });
});
test.after(async () => {
  await app.stop();
  await receiver.close();
});

const evento = (contaId: string) => emit(app.db.pool, contaId, 'cotacao.criada', { objeto: 'cotacao', id: randomUUID(), codigo: 'COT-9', status: 'rascunho' });
const deliveries = (contaId: string) => app.db.pool.any(sql.type(Delivery)`
  SELECT id, status, attempts, next_attempt_at, lease_id FROM deliveries WHERE conta_id = ${contaId} ORDER BY created_at, id`);

test('over the hourly cap deliveries wait for the next hour, then every one is delivered; other accounts are unaffected', async () => {
  // Every delivery of the test in one hour, the one its counter and nextHour name.
  await awayFromHourBoundary(app.db.pool);
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) ids.push(await evento(account.contaId));
  await receiver.waitFor(3, (r) => r.path === '/a');
  const rows = await eventually(() => deliveries(account.contaId), (d) => d.length === 5 && d.every((x) => x.status !== 'pending' || x.lease_id === null));
  const waiting = rows.filter((d) => d.status === 'pending');
  assert.is(waiting.length, 2, 'two over the cap');
  const nextHour = new Date();
  nextHour.setUTCMinutes(0, 0, 0);
  nextHour.setUTCHours(nextHour.getUTCHours() + 1);
  for (const d of waiting) {
    assert.is(d.attempts, 0, 'held back, not attempted');
    assert.is(Date.parse(d.next_attempt_at), nextHour.getTime(), 'due at the next hour');
  }
  const [uso] = await app.db.pool.any(sql.type(Uso)`SELECT hour, deliveries FROM webhook_hourly_usage WHERE conta_id = ${account.contaId}`);
  assert.is(uso?.deliveries, 3);

  const elsewhere = await evento(other.contaId);
  await receiver.waitFor(1, (r) => r.id === elsewhere);

  // The hour is over: its usage belongs to the previous hour, and the held deliveries are due.
  await app.db.pool.query(sql.unsafe`UPDATE webhook_hourly_usage SET hour = hour - interval '1 hour' WHERE conta_id = ${account.contaId}`);
  assert.is(await makeDue(app.db.pool), 2);
  const all = await receiver.waitFor(5, (r) => r.path === '/a');
  assert.equal(new Set(all.map((r) => r.id)), new Set(ids), 'none dropped, none twice');
  const done = await eventually(() => deliveries(account.contaId), (d) => d.every((x) => x.status === 'succeeded'));
  assert.ok(done.every((d) => d.attempts === 1));
});

test('every request counts toward the cap, retries included', async () => {
  const before = receiver.received.filter((r) => r.path === '/b').length;
  receiver.respond((r) => (r.path === '/b' ? { status: 500 } : { status: 200 }));
  const id = await evento(other.contaId);
  const [first] = await receiver.waitFor(1, (r) => r.id === id);
  assert.ok(first);
  const d = await eventually(async () => (await deliveries(other.contaId)).find((x) => x.attempts === 1 && x.status === 'pending' && x.lease_id === null), (x) => x !== undefined);
  assert.ok(d);
  await makeDue(app.db.pool, { deliveryId: d.id });
  await receiver.waitFor(2, (r) => r.id === id);
  const uso = await eventually(
    () => app.db.pool.oneFirst(sql.type(z.object({ deliveries: z.number() }))`SELECT deliveries FROM webhook_hourly_usage WHERE conta_id = ${other.contaId} AND hour = date_trunc('hour', now(), 'UTC')`),
    (n) => n === before + 2);
  assert.is(uso, 3, 'one earlier delivery and two attempts: the cap is reached');
  const id2 = await evento(other.contaId);
  const held = await eventually(async () => (await deliveries(other.contaId)).find((x) => x.status === 'pending' && x.attempts === 0 && x.lease_id === null), (x) => x !== undefined);
  assert.ok(held, `event ${id2} waits for the next hour`);
  assert.equal(receiver.unverified(), []);
});

test('reservations at once for one account (several workers) grant the hour\'s cap exactly, never more', async () => {
  await awayFromHourBoundary(app.db.pool);
  await createPlan(app.db.pool, 'vinte_por_hora', { entregas_webhook_por_hora: 20 });
  const conta = await createAccount(app.db.pool, { plano: 'vinte_por_hora' });
  const reserve = async (n: number) => (await reserveDeliveries(app.db.pool, new Map([[conta.contaId, n], [other.contaId, 0]]))).get(conta.contaId) ?? 0;
  const granted = await Promise.all(Array.from({ length: 12 }, () => reserve(3)));
  assert.is(granted.reduce((a, b) => a + b, 0), 20, `granted ${granted.join(', ')}`);
  assert.ok(granted.every((g) => g >= 0 && g <= 3));
  const used = await app.db.pool.oneFirst(sql.type(z.object({ deliveries: z.number() }))`
    SELECT deliveries FROM webhook_hourly_usage WHERE conta_id = ${conta.contaId} AND hour = date_trunc('hour', now(), 'UTC')`);
  assert.is(used, 20);
});

test.run();
