// The webhook pipeline's archive (issue 21, item 1; sql/code/archive.sql): ended deliveries, their
// attempts and their events leave the small working tables for history partitioned by day, which
// the API and operators read as before; an event stays while a delivery of it is pending; a
// redelivery brings an archived event back and sends it with the same webhook-id; the archiver
// stands aside while a redelivery is under way; the archive's days are dropped whole. Against a
// real worker delivering to a real receiver.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { archiveEnded, FROM_THE_START } from '#shared/db/archive.ts';
import { listDeliveries, listAttempts, notifyDeliveriesDue, redeliverFailures } from '#shared/db/delivery-ops.ts';
import { ARCHIVE_TABLES, dropExpiredPartitions } from '#shared/db/partitions.ts';
import { sql } from '#shared/db/pool.ts';
import { RETENTION } from '#shared/db/retention.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { createAccount, type TestAccount } from './helpers/fixtures.ts';
import { plantDeliveries, plantEvents } from './helpers/planted.ts';
import { client } from './helpers/http.ts';
import { addEndpoint, emit, eventually, startReceiver, type Receiver } from './helpers/receiver.ts';

const test = suite('webhook pipeline: the archive of what has ended');
let app: TestApp;
let receiver: Receiver;
let conta: TestAccount;

test.before(async () => {
  receiver = await startReceiver();
  app = await startTestApp({ worker: true });
  conta = await createAccount(app.db.pool);
});
test.after(async () => {
  await app.stop();
  await receiver.close();
});

const db = () => app.db.pool;
const api = () => client(app.baseUrl, conta.token);
const N = z.object({ n: z.number() });
const count = (from: ReturnType<typeof sql.fragment>) => db().oneFirst(sql.type(N)`SELECT count(*)::int AS n FROM ${from}`);
/** What the worker's maintenance does, with no wait after the end. */
const archive = () => archiveEnded(db(), FROM_THE_START, { afterSeconds: 0 });
const cotacaoAprovada = () => emit(db(), conta.contaId, 'cotacao.aprovada', { objeto: 'cotacao', id: randomUUID(), codigo: 'COT-000001' });

/** Where the event's rows are: the working tables, or the archive's partitions by name. */
const Lugar = z.object({ tabela: z.string() });
const lugares = (eventId: string) => db().anyFirst(sql.type(Lugar)`
  SELECT tableoid::regclass::text AS tabela FROM outbox WHERE id = ${eventId}
  UNION ALL SELECT tableoid::regclass::text FROM outbox_archive WHERE id = ${eventId}
  UNION ALL SELECT tableoid::regclass::text FROM deliveries WHERE event_id = ${eventId}
  UNION ALL SELECT tableoid::regclass::text FROM deliveries_archive WHERE event_id = ${eventId}
  ORDER BY 1`);
const hoje = () => new Date().toISOString().slice(0, 10).replaceAll('-', '');

/** Everything the API and the operators' commands say of one event. */
async function historia(eventId: string) {
  const [evento, tentativas, lista] = await Promise.all([
    api().get(`/eventos/${eventId}`), api().get(`/eventos/${eventId}/entregas`), api().get('/eventos?limite=100'),
  ]);
  const entregas = await listDeliveries(db(), { contaId: conta.contaId, eventId, limite: 10 });
  const porEntrega = await Promise.all(entregas.map((e) => listAttempts(db(), conta.contaId, e.id)));
  return {
    evento: [evento.status, evento.body], tentativas: [tentativas.status, tentativas.body],
    naLista: lista.body.dados.some((e: { id: string }) => e.id === eventId), entregas, porEntrega,
  };
}

const settled = (eventId: string, n: number) => eventually(
  () => db().anyFirst(sql.type(z.object({ s: z.string() }))`SELECT status AS s FROM deliveries WHERE event_id = ${eventId} AND lease_id IS NULL`),
  (s) => s.length === n && s.every((x) => x !== 'pending'));

test('ended work leaves the working tables for today\'s partitions of the archive, and the API and operators read it as before', async () => {
  await addEndpoint(db(), receiver, { ...conta, path: '/arquivo' });
  const id = await cotacaoAprovada();
  await receiver.waitFor(1, (r) => r.id === id);
  await settled(id, 1);
  const antes = await historia(id);
  assert.is(antes.evento[0], 200);
  assert.ok(antes.naLista);
  assert.equal(await lugares(id), ['deliveries', 'outbox']);

  const pass = await archive();
  assert.not.ok(pass.skipped);
  assert.ok(pass.deliveries >= 1 && pass.events >= 1);
  assert.equal(await lugares(id), [`deliveries_archive_${hoje()}`, `outbox_archive_${hoje()}`]);
  assert.is(await count(sql.fragment`delivery_attempts_archive WHERE delivery_id = ${antes.entregas[0]?.id ?? ''}`), 1, 'its attempt went with it');
  assert.equal(await historia(id), antes, 'every read answers the same');
});

test('an event stays in the working tables while a delivery of it is pending; its ended sibling goes; the event follows its last delivery', async () => {
  const outra = await createAccount(db());
  await addEndpoint(db(), receiver, { ...outra, path: '/responde' });
  await addEndpoint(db(), receiver, { ...outra, path: '/falha' });
  receiver.respond((r) => (r.path === '/falha' ? { status: 500 } : { status: 200 }));
  try {
    const id = await emit(db(), outra.contaId, 'cotacao.aprovada', { objeto: 'cotacao', id: randomUUID(), codigo: 'COT-000002' });
    await receiver.waitFor(2, (r) => r.id === id);
    // The failing one, between attempts, waits an hour for its next (not 5 s): the test holds it still.
    await eventually(() => db().query(sql.unsafe`
      UPDATE deliveries SET next_attempt_at = now() + interval '1 hour'
       WHERE event_id = ${id} AND status = 'pending' AND lease_id IS NULL AND attempts >= 1`).then((r) => r.rowCount), (n) => n === 1);
    await eventually(() => count(sql.fragment`deliveries WHERE event_id = ${id} AND status = 'succeeded'`), (n) => n === 1);
    await archive();
    assert.equal(await lugares(id), ['deliveries', `deliveries_archive_${hoje()}`, 'outbox'], 'the failing one waits for its retry, with its event');

    // The retry's run ends (as after its last attempt), later than the relay.
    await db().query(sql.unsafe`
      UPDATE deliveries SET status = 'failed', completed_at = now() WHERE event_id = ${id} AND status = 'pending' AND lease_id IS NULL`);
    await archive();
    assert.equal(await lugares(id), [`deliveries_archive_${hoje()}`, `deliveries_archive_${hoje()}`, `outbox_archive_${hoje()}`]);
    const fim = await db().oneFirst(sql.type(z.object({ ok: z.boolean() }))`
      SELECT a.encerrado_em = d.completed_at AS ok FROM outbox_archive a
        JOIN deliveries_archive d ON d.conta_id = a.conta_id AND d.event_id = a.id AND d.status = 'failed' WHERE a.id = ${id}`);
    assert.ok(fim, 'the event\'s retention runs from its last delivery\'s end');
  } finally {
    receiver.respond(() => ({ status: 200 }));
  }
});

test('a redelivery brings an archived event back and sends it with the same webhook-id, its attempts numbered on', async () => {
  const id = await cotacaoAprovada();
  await receiver.waitFor(1, (r) => r.id === id);
  await settled(id, 1);
  await archive();
  assert.is(await count(sql.fragment`outbox WHERE id = ${id}`), 0);

  const res = await api().post(`/eventos/${id}/reenviar`, {}, { 'idempotency-key': `arquivo-${randomUUID()}` });
  assert.is(res.status, 202, JSON.stringify(res.body));
  const [primeira, segunda] = await receiver.waitFor(2, (r) => r.id === id);
  assert.is(segunda?.body, primeira?.body, 'the same body');
  await settled(id, 1);
  assert.equal(await lugares(id), ['deliveries', 'outbox'], 'back in the working tables');
  const tentativas = await api().get(`/eventos/${id}/entregas`);
  assert.equal(tentativas.body.dados.map((t: { tentativa: number }) => t.tentativa), [2, 1]);
  assert.is(await count(sql.fragment`delivery_attempts_archive a JOIN deliveries d ON d.id = a.delivery_id WHERE d.event_id = ${id}`), 0,
    'its attempts came back with it');
  await archive();
  assert.equal(await lugares(id), [`deliveries_archive_${hoje()}`, `outbox_archive_${hoje()}`], 'and leave again when it has ended');
});

test('the operator\'s replay of failures since a time brings archived failed deliveries back and sends them again', async () => {
  const outra = await createAccount(db());
  await addEndpoint(db(), receiver, { ...outra, path: '/falhou' });
  receiver.respond((r) => (r.path === '/falhou' ? { status: 500 } : { status: 200 }));
  let id = '';
  try {
    id = await emit(db(), outra.contaId, 'cotacao.aprovada', { objeto: 'cotacao', id: randomUUID(), codigo: 'COT-000003' });
    await receiver.waitFor(1, (r) => r.id === id);
    // Given up after its first attempt (as after its last), between attempts so no worker holds it.
    await eventually(() => db().query(sql.unsafe`
      UPDATE deliveries SET status = 'failed', completed_at = now()
       WHERE event_id = ${id} AND status = 'pending' AND lease_id IS NULL AND attempts = 1`).then((r) => r.rowCount), (n) => n === 1);
  } finally {
    receiver.respond(() => ({ status: 200 }));
  }
  const desde = new Date(Date.now() - 60_000);
  await archive();
  assert.equal(await lugares(id), [`deliveries_archive_${hoje()}`, `outbox_archive_${hoje()}`]);
  const replayed = await db().transaction(async (tx) => {
    const n = await redeliverFailures(tx, { desde, contaId: outra.contaId });
    await notifyDeliveriesDue(tx);
    return n;
  });
  assert.is(replayed, 1);
  await receiver.waitFor(2, (r) => r.id === id);
  await settled(id, 1);
  assert.equal(await listAttempts(db(), outra.contaId, (await listDeliveries(db(), { contaId: outra.contaId, eventId: id, limite: 1 }))[0]?.id ?? '')
    .then((t) => t.map((x) => [x.attempt, x.response_status])), [[1, 500], [2, 200]]);
});

test('the operator\'s replay of failures holds the archiver off while it makes them due, though none is archived', async () => {
  const outra = await createAccount(db());
  const endpoint = await addEndpoint(db(), receiver, { ...outra, path: '/falhou-ha-pouco' });
  const [id = ''] = await plantEvents(db(), outra.contaId, { relayedAgo: '20 minutes' });
  await plantDeliveries(db(), { contaId: outra.contaId, endpointId: endpoint.id, eventIds: [id], status: 'failed', completedAgo: '10 minutes',
    attempts: [{ ago: '10 minutes', status: 500 }] });
  // The archiver's pass runs on a connection of its own while the replay's transaction is open.
  const archiver = new pg.Client({ connectionString: app.db.url });
  await archiver.connect();
  let during: { locked: boolean; deliveries: number } | undefined;
  try {
    await db().transaction(async (tx) => {
      assert.is(await redeliverFailures(tx, { desde: new Date(Date.now() - 3_600_000), contaId: outra.contaId }), 1);
      during = (await archiver.query<{ locked: boolean; deliveries: number }>('SELECT * FROM archive_ended_deliveries(now(), 1000)')).rows[0];
    });
  } finally {
    await archiver.end();
  }
  assert.equal(during, { locked: false, deliveries: 0, events: 0 }, 'skipped its pass');
  assert.equal(await lugares(id), ['deliveries', 'outbox'], 'the delivery stays, due again');
  await notifyDeliveriesDue(db());
  await receiver.waitFor(1, (r) => r.id === id);
});

test('the archiver stands aside while a redelivery restores an event, and moves it once that has committed', async () => {
  const id = await cotacaoAprovada();
  await receiver.waitFor(1, (r) => r.id === id);
  await settled(id, 1);
  await archive();
  // The redelivery's transaction, on a connection of its own, stays open across the archiver's pass.
  const replay = new pg.Client({ connectionString: app.db.url });
  await replay.connect();
  let during: Awaited<ReturnType<typeof archive>>;
  try {
    await replay.query('BEGIN');
    const restored = await replay.query<{ r: boolean }>('SELECT restore_event($1, $2) AS r', [conta.contaId, id]);
    assert.ok(restored.rows[0]?.r);
    during = await archive();
    await replay.query('COMMIT');
  } finally {
    await replay.end();
  }
  assert.ok(during.skipped, 'skipped its pass');
  assert.is(during.deliveries, 0);
  assert.equal(await lugares(id), ['deliveries', 'outbox']);
  assert.not.ok((await archive()).skipped);
  assert.equal(await lugares(id), [`deliveries_archive_${hoje()}`, `outbox_archive_${hoje()}`]);
});

test(`the archive's days are dropped whole ${RETENTION.outboxDays} days after they ended; younger days stay`, async () => {
  const dia = (dias: number) => new Date(Date.now() - dias * 86_400_000).toISOString().slice(0, 10);
  for (const tabela of ARCHIVE_TABLES) {
    for (const dias of [RETENTION.outboxDays + 1, RETENTION.outboxDays - 1]) {
      await db().query(sql.unsafe`SELECT ensure_day_partition(${tabela}, ${dia(dias)}::date)`);
    }
  }
  const plant = (dias: number) => db().oneFirst(sql.type(z.object({ id: z.string() }))`
    WITH e AS (
      INSERT INTO outbox_archive (conta_id, id, seq, tipo, dados, available_at, relayed_at, criado_em, encerrado_em)
      VALUES (${conta.contaId}, gen_random_uuid(), 0, 'cotacao.aprovada', '{"objeto": "cotacao"}', now() - make_interval(days => ${dias}),
              now() - make_interval(days => ${dias}), now() - make_interval(days => ${dias}), now() - make_interval(days => ${dias}))
      RETURNING id
    ), d AS (
      INSERT INTO deliveries_archive (conta_id, id, event_id, endpoint_id, status, attempts, run_attempts, next_attempt_at,
                                      created_at, completed_at, encerrado_em)
      SELECT ${conta.contaId}, gen_random_uuid(), e.id, gen_random_uuid(), 'succeeded', 1, 1, now(), now() - make_interval(days => ${dias}),
             now() - make_interval(days => ${dias}), now() - make_interval(days => ${dias}) FROM e
      RETURNING id
    ), a AS (
      INSERT INTO delivery_attempts_archive (conta_id, delivery_id, attempt, started_at, duration_ms, succeeded, response_status, encerrado_em)
      SELECT ${conta.contaId}, d.id, 1, now() - make_interval(days => ${dias}), 5, true, 200, now() - make_interval(days => ${dias}) FROM d
    )
    SELECT id FROM e`);
  const velho = await plant(RETENTION.outboxDays + 1);
  const novo = await plant(RETENTION.outboxDays - 1);
  const dropped: string[] = [];
  for (const tabela of ARCHIVE_TABLES) dropped.push(...(await dropExpiredPartitions(db(), tabela, RETENTION.outboxDays)));
  const nome = (tabela: string, dias: number) => `${tabela}_${dia(dias).replaceAll('-', '')}`;
  for (const tabela of ARCHIVE_TABLES) {
    assert.ok(dropped.includes(nome(tabela, RETENTION.outboxDays + 1)), `${tabela}: the old day dropped`);
    assert.not.ok(dropped.includes(nome(tabela, RETENTION.outboxDays - 1)), `${tabela}: the young day kept`);
  }
  assert.is(await count(sql.fragment`eventos WHERE id = ${velho}`), 0);
  assert.is(await count(sql.fragment`eventos WHERE id = ${novo}`), 1);
  assert.is(await count(sql.fragment`all_deliveries WHERE event_id = ${novo}`), 1);
});

test('every request received carried valid signatures', () => {
  assert.equal(receiver.unverified(), []);
});

test.run();
