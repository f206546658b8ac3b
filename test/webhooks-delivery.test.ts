import { randomUUID } from 'node:crypto';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { criarUsuario } from '#shared/db/contas.ts';
import { freePort } from '#shared/db/embedded.ts';
import { sql } from '#shared/db/pool.ts';
import { rotacionarSegredo } from '#shared/db/webhooks.ts';
import { RETRY_DELAYS_SECONDS } from '#shared/domain/webhooks.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { createAccount, type TestAccount } from './helpers/fixtures.ts';
import { addEndpoint, emit, eventually, makeDue, startReceiver, type Receiver, type Reply } from './helpers/receiver.ts';
import { startSmtpReceiver, type SmtpReceiver } from './helpers/smtp.ts';

const test = suite('webhooks: delivery, retries, success, disabling, rotation');
let app: TestApp;
let receiver: Receiver;
let smtp: SmtpReceiver;
let account: TestAccount;
let n = 0;

test.before(async () => {
  receiver = await startReceiver();
  smtp = await startSmtpReceiver();
  app = await startTestApp({ worker: true, env: { WEBHOOK_TIMEOUT_MS: '500', SMTP_URL: smtp.url } });
  account = await createAccount(app.db.pool, { plano: 'farm' });
  receiver.respond((r) => replies.get(r.path)?.(r) ?? { status: 200, body: 'ok' });
});
test.after(async () => {
  await app.stop();
  await receiver.close();
  await smtp.close();
});

const replies = new Map<string, (r: { json: any }) => Reply>();

async function endpoint(reply?: (r: { json: any }) => Reply) {
  const email = `criador${++n}@entregas.invalid`;
  const usuario = await criarUsuario(app.db.pool, { contaId: account.contaId, nome: `Criador ${n}`, email, permissoes: ['cotacoes.ver'] });
  const path = `/p${n}`;
  if (reply) replies.set(path, reply);
  const e = await addEndpoint(app.db.pool, receiver, { contaId: account.contaId, usuarioId: usuario.id, path, tipos: ['cotacao.aprovada'] });
  return { ...e, path, email };
}

const evento = () => emit(app.db.pool, account.contaId, 'cotacao.aprovada', { objeto: 'cotacao', id: randomUUID(), codigo: 'COT-1' });

const Delivery = z.object({
  id: z.string(), status: z.string(), attempts: z.number(), next_attempt_at: z.string(), lease_id: z.string().nullable(),
  completed_at: z.string().nullable(), last_error: z.string().nullable(), endpoint_id: z.string(),
});
const Attempt = z.object({
  attempt: z.number(), started_at: z.string(), duration_ms: z.number(), succeeded: z.boolean(),
  response_status: z.number().nullable(), response_body: z.string().nullable(), error: z.string().nullable(),
});
const maybeDelivery = (eventId: string, endpointId: string) => app.db.pool.maybeOne(sql.type(Delivery)`
  SELECT id, status, attempts, next_attempt_at, lease_id, completed_at, last_error, endpoint_id
    FROM deliveries WHERE event_id = ${eventId} AND endpoint_id = ${endpointId}`);
const attemptsOf = (deliveryId: string) => app.db.pool.any(sql.type(Attempt)`
  SELECT attempt, started_at, duration_ms, succeeded, response_status, response_body, error
    FROM delivery_attempts WHERE delivery_id = ${deliveryId} ORDER BY attempt`);
/** The delivery of an event to an endpoint, waiting for the relay to create it. */
async function deliveryOf(eventId: string, endpointId: string) {
  const d = await eventually(() => maybeDelivery(eventId, endpointId), (x) => x !== null);
  if (!d) throw new Error(`no delivery of ${eventId} to ${endpointId}`);
  return d;
}
/** Waits until the delivery has `attempts` recorded attempts and is no longer held by a job. */
const settled = (eventId: string, endpointId: string, attempts: number) =>
  eventually(() => deliveryOf(eventId, endpointId), (d) => d.attempts >= attempts && d.lease_id === null);
const endpointRow = (id: string) => app.db.pool.one(sql.type(z.object({
  ativo: z.boolean(), desativado_motivo: z.string().nullable(), falhando_desde: z.string().nullable(),
}))`SELECT ativo, desativado_motivo, falhando_desde FROM webhook_endpoints WHERE id = ${id}`);
const near = (actual: number, expected: number, slackMs = 2_000) =>
  assert.ok(Math.abs(actual - expected) <= slackMs, `${new Date(actual).toISOString()} is within ${slackMs} ms of ${new Date(expected).toISOString()}`);

test('retries a delivery answered 500 at +5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h, then fails it', async () => {
  const e = await endpoint(() => ({ status: 500, body: 'fora do ar' }));
  const eventId = await evento();
  for (let attempt = 1; attempt <= RETRY_DELAYS_SECONDS.length; attempt++) {
    const d = await settled(eventId, e.id, attempt);
    assert.is(d.status, 'pending');
    const last = (await attemptsOf(d.id)).at(-1);
    assert.ok(last);
    near(Date.parse(d.next_attempt_at), Date.parse(last.started_at) + last.duration_ms + (RETRY_DELAYS_SECONDS[attempt - 1] ?? 0) * 1000);
    assert.is(await makeDue(app.db.pool, { deliveryId: d.id }), 1);
  }
  const d = await eventually(() => deliveryOf(eventId, e.id), (x) => x.status !== 'pending');
  assert.is(d.status, 'failed');
  assert.is(d.attempts, 8);
  assert.ok(d.completed_at);
  const attempts = await attemptsOf(d.id);
  assert.equal(attempts.map((a) => a.attempt), [1, 2, 3, 4, 5, 6, 7, 8]);
  for (const a of attempts) {
    assert.is(a.succeeded, false);
    assert.is(a.response_status, 500);
    assert.is(a.response_body, 'fora do ar');
    assert.ok(a.duration_ms >= 0);
  }
  const got = receiver.received.filter((r) => r.path === e.path);
  assert.is(got.length, 8);
  assert.ok(got.every((r) => r.id === eventId), 'every retry keeps the webhook-id');
});

test('treats no answer within WEBHOOK_TIMEOUT_MS as a failed attempt, retried 5 s later', async () => {
  let slow = true;
  const e = await endpoint(() => (slow ? { status: 200, delayMs: 1_500 } : { status: 204 }));
  const eventId = await evento();
  const d = await settled(eventId, e.id, 1);
  const [first] = await attemptsOf(d.id);
  assert.ok(first);
  assert.is(first.response_status, null);
  assert.match(first.error ?? '', 'no answer within 500 ms');
  assert.ok(first.duration_ms < 1_400, 'the attempt ended at the deadline');
  near(Date.parse(d.next_attempt_at), Date.parse(first.started_at) + first.duration_ms + 5_000);
  slow = false;
  await makeDue(app.db.pool, { deliveryId: d.id });
  const done = await eventually(() => deliveryOf(eventId, e.id), (x) => x.status !== 'pending');
  assert.is(done.status, 'succeeded', 'any 2xx is success');
  assert.is((await endpointRow(e.id)).falhando_desde, null, 'a success ends the run of failures');
});

test('a 410 fails the delivery, disables the endpoint at once and e-mails its creator', async () => {
  const e = await endpoint(() => ({ status: 410 }));
  const eventId = await evento();
  const d = await eventually(() => deliveryOf(eventId, e.id), (x) => x.status !== 'pending');
  assert.is(d.status, 'failed');
  assert.is(d.attempts, 1);
  const row = await endpointRow(e.id);
  assert.is(row.ativo, false);
  assert.is(row.desativado_motivo, 'recebedor_410');
  const mail = await smtp.waitFor((m) => m.to.includes(e.email));
  assert.match(mail.raw, e.url);
  const later = await evento();
  await receiver.waitFor(1, (r) => r.id === later);
  const none = await app.db.pool.any(sql.unsafe`SELECT 1 FROM deliveries WHERE event_id = ${later} AND endpoint_id = ${e.id}`);
  assert.is(none.length, 0, 'a disabled endpoint gets no new deliveries');
});

test('a 429 or 503 with Retry-After is retried no sooner than asked, and never sooner than the schedule', async () => {
  const cases: [number, string, number][] = [
    [429, '3600', 3_600_000],
    [503, new Date(Date.now() + 2 * 3_600_000).toUTCString(), 2 * 3_600_000],
    [429, '1', 5_000],
  ];
  for (const [status, retryAfter, expected] of cases) {
    const e = await endpoint(() => ({ status, headers: { 'retry-after': retryAfter } }));
    const eventId = await evento();
    const d = await settled(eventId, e.id, 1);
    const [first] = await attemptsOf(d.id);
    assert.ok(first);
    assert.is(first.response_status, status);
    near(Date.parse(d.next_attempt_at), Date.parse(first.started_at) + first.duration_ms + expected);
  }
});

test('an endpoint failing every delivery for 5 days is disabled, its creator e-mailed and its waiting deliveries failed', async () => {
  const e = await endpoint(() => ({ status: 500 }));
  const first = await evento();
  const waiting = await settled(first, e.id, 1);
  assert.ok((await endpointRow(e.id)).falhando_desde, 'the first failure starts the run');
  const second = await evento();
  const waitingSecond = await settled(second, e.id, 1);
  await app.db.pool.query(sql.unsafe`
    UPDATE webhook_endpoints SET falhando_desde = now() - interval '5 days 1 minute' WHERE id = ${e.id}`);
  await makeDue(app.db.pool, { deliveryId: waiting.id });
  const row = await eventually(() => endpointRow(e.id), (r) => !r.ativo);
  assert.is(row.desativado_motivo, 'falhas_5_dias');
  const mail = await smtp.waitFor((m) => m.to.includes(e.email));
  assert.match(mail.raw, '5 dias');
  const other = await deliveryOf(second, e.id);
  assert.is(other.id, waitingSecond.id);
  assert.is(other.status, 'failed');
  assert.match(other.last_error ?? '', 'endpoint desativado');
});

test('the deadline bounds the whole exchange: a body that never ends is cut there, and its status decides', async () => {
  const e = await endpoint(() => ({ status: 503, body: 'ocupado', bodyNeverEnds: true }));
  const eventId = await evento();
  const d = await settled(eventId, e.id, 1);
  const [first] = await attemptsOf(d.id);
  assert.ok(first);
  assert.is(first.response_status, 503);
  assert.is(first.response_body, 'ocupado', 'what arrived before the deadline is kept');
  assert.ok(first.duration_ms >= 450 && first.duration_ms < 1_400, `the attempt ended at the 500 ms deadline (${first.duration_ms} ms)`);
  assert.is(d.status, 'pending', 'a 503 is retried');
});

test('a receiver that refuses the connection is a failed attempt that says so, retried', async () => {
  const e = await endpoint();
  const closed = await freePort();
  await app.db.pool.query(sql.typeAlias('void')`UPDATE webhook_endpoints SET url = ${`http://127.0.0.1:${closed}/fechado`} WHERE id = ${e.id}`);
  const eventId = await evento();
  const d = await settled(eventId, e.id, 1);
  const [first] = await attemptsOf(d.id);
  assert.ok(first);
  assert.is(first.response_status, null);
  assert.match(first.error ?? '', 'ECONNREFUSED');
  assert.is(d.status, 'pending', 'retried');
  // The plan's endpoints are few: this one gives its place back.
  await app.db.pool.query(sql.typeAlias('void')`DELETE FROM webhook_endpoints WHERE id = ${e.id}`);
});

test('keeps at most 4 KB of the response body', async () => {
  const e = await endpoint(() => ({ status: 200, body: 'ação '.repeat(3_000) }));
  const eventId = await evento();
  const d = await eventually(() => deliveryOf(eventId, e.id), (x) => x.status === 'succeeded');
  const [a] = await attemptsOf(d.id);
  assert.ok(a?.response_body);
  assert.ok(Buffer.byteLength(a.response_body) <= 4096 && Buffer.byteLength(a.response_body) > 4000);
  assert.ok('ação '.repeat(3_000).startsWith(a.response_body.replace(/\uFFFD$/, '')));
});

test('does not follow redirects: a 302 is a failed attempt and the target is never called', async () => {
  const e = await endpoint(() => ({ status: 302, headers: { location: receiver.url('/destino') } }));
  const eventId = await evento();
  const d = await settled(eventId, e.id, 1);
  assert.is(d.status, 'pending');
  const [a] = await attemptsOf(d.id);
  assert.is(a?.response_status, 302);
  assert.is(a?.succeeded, false);
  assert.is(receiver.received.filter((r) => r.path === '/destino').length, 0);
});

test('during a rotation deliveries carry both signatures, each verifying with its secret, and only the new one after 24 h', async () => {
  const e = await endpoint();
  const rotated = await rotacionarSegredo(app.db.pool, account.contaId, e.id);
  assert.ok(rotated);
  receiver.setSecrets(e.path, rotated.segredo, e.segredo);
  const during = await evento();
  const [r1] = await receiver.waitFor(1, (r) => r.id === during && r.path === e.path);
  assert.is(r1?.signature.split(' ').length, 2);
  assert.ok(r1?.verified, 'verifies with the new and with the previous secret');
  await app.db.pool.query(sql.unsafe`UPDATE webhook_endpoints SET segredo_anterior_ate = now() - interval '1 second' WHERE id = ${e.id}`);
  receiver.setSecrets(e.path, rotated.segredo);
  const after = await evento();
  const [r2] = await receiver.waitFor(1, (r) => r.id === after && r.path === e.path);
  assert.is(r2?.signature.split(' ').length, 1);
  assert.ok(r2?.verified);
});

test('every request: a POST of JSON with the worker\'s user agent, no compression asked, its Content-Length', () => {
  assert.ok(receiver.received.length > 10);
  for (const got of receiver.received) {
    assert.is(got.headers['content-type'], 'application/json');
    assert.is(got.headers['user-agent'], 'printfarm-webhooks/1');
    assert.is(got.headers['accept-encoding'], undefined, 'an answer is read as it comes: none is asked compressed');
    assert.is(got.headers['content-length'], String(Buffer.byteLength(got.body)));
  }
});

test('every request received carried valid signatures', () => {
  assert.equal(receiver.unverified(), []);
});

test.run();
