// Admission in batches: a web process sends every waiting request in one round trip. Each request
// must get exactly the decision it would get alone, one after another within its key and account;
// the answers come back in the order asked; the releases a batch carries count before it decides.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { sql } from '#shared/db/pool.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { addKey, createAccount, createPlan } from './helpers/fixtures.ts';
import { request } from './helpers/http.ts';
import { admitBatch } from './helpers/limits.ts';

const test = suite('limits: admission batches');
let app: TestApp;

test.before(async () => {
  // A wait budget well above one request's time on a loaded machine: a request held behind the
  // stalled batch below would wait most of it, one that is not held only its own time.
  app = await startTestApp({ env: { DB_POOL_WAIT_MS: '500', DB_BREAKER_OPEN_MS: '50' } });
  // Burst 10 refilling 1 a second, everything else far away unless a test lowers it.
  await createPlan(app.db.pool, 'lote', {
    chaves_ativas: 10, rajada: 10, rajada_recarga_por_segundo: 1, leituras_por_minuto: 1000, escritas_por_minuto: 1000,
    simultaneas_por_chave: 100, simultaneas_por_conta: 100,
  });
});
test.after(async () => app.stop());

const db = () => app.db.pool;

test('answers every request of a batch in the order asked, unknown keys included', async () => {
  const a = await createAccount(db(), { plano: 'lote' });
  const b = await createAccount(db(), { plano: 'lote' });
  const unknown = `chv_AAAAAAAA_${'x'.repeat(43)}`;
  const rows = await admitBatch(db(), [{ token: b.token }, { token: unknown }, { token: a.token }, { token: b.token }]);
  assert.equal(rows.map((r) => r.outcome), ['ok', 'nao_autenticado', 'ok', 'ok']);
  assert.equal(rows.map((r) => r.conta_id), [b.contaId, null, a.contaId, b.contaId]);
  assert.equal([rows[0]?.rajada_r, rows[3]?.rajada_r], [9, 8], 'the second request of b sees the first one taken');
});

test('revoked and expired keys in a batch take no lock: their 401 waits for nobody', async () => {
  const a = await createAccount(db(), { plano: 'lote' });
  const revoked = await addKey(db(), a);
  const expired = await addKey(db(), a);
  await db().query(sql.unsafe`UPDATE chaves_api SET revogada_em = now() WHERE id = ${revoked.chaveId}`);
  await db().query(sql.unsafe`
    UPDATE chaves_api SET criada_em = now() - interval '2 days', expira_em = now() - interval '1 day' WHERE id = ${expired.chaveId}`);
  // The account's lock held by another session: a batch that tried to take it would time out.
  await db().connect(async (other) => {
    await other.query(sql.unsafe`SELECT pg_advisory_lock(conta_lock_key(${a.contaId}))`);
    try {
      const rows = await db().transaction(async (tx) => {
        await tx.query(sql.unsafe`SET LOCAL lock_timeout = '200ms'`);
        return admitBatch(tx, [{ token: revoked.token }, { token: expired.token }]);
      });
      assert.equal(rows.map((r) => r.outcome), ['nao_autenticado', 'nao_autenticado']);
    } finally {
      await other.query(sql.unsafe`SELECT pg_advisory_unlock(conta_lock_key(${a.contaId}))`);
    }
  });
});

test('an account none of whose requests is admitted changes no other account\'s answer in the batch', async () => {
  // Accounts are decided in the order of their ids: the refused one first is the case that broke
  // (its month entry left empty, every request of the batch answered 500).
  const [first, second] = [await createAccount(db(), { plano: 'lote' }), await createAccount(db(), { plano: 'lote' })]
    .sort((x, y) => x.contaId.localeCompare(y.contaId));
  if (!first || !second) throw new Error('two accounts');
  for (const refused of ['escopo', 'rajada'] as const) {
    if (refused === 'rajada') {
      await db().query(sql.unsafe`
        INSERT INTO rate_buckets (conta_id, chave_id, tokens, refreshed_at) VALUES (${first.contaId}, ${first.chaveId}, 0, now())
        ON CONFLICT (chave_id) DO UPDATE SET tokens = 0, refreshed_at = now()`);
    }
    const escopo = refused === 'escopo' ? 'inexistente:ler' : null;
    const rows = await admitBatch(db(), [{ token: first.token, escopo }, { token: second.token }, { token: first.token, escopo }]);
    const outcome = refused === 'escopo' ? 'escopo_insuficiente' : 'limite_excedido';
    assert.equal(rows.map((r) => r.outcome), [outcome, 'ok', outcome], refused);
    const alone = await admitBatch(db(), [{ token: second.token }]);
    assert.is(alone[0]?.outcome, 'ok', `${refused}: the other account is admitted alone as well`);
  }
});

test('requests of one key in one batch are decided one after another: the burst admits 10 of 12', async () => {
  const account = await createAccount(db(), { plano: 'lote' });
  const rows = await db().transaction((tx) => admitBatch(tx, Array.from({ length: 12 }, () => ({ token: account.token }))));
  assert.equal(rows.map((r) => r.outcome), [...Array(10).fill('ok'), 'limite_excedido', 'limite_excedido']);
  assert.equal(rows.slice(0, 10).map((r) => r.rajada_r), [9, 8, 7, 6, 5, 4, 3, 2, 1, 0]);
  assert.is(rows[10]?.reason, 'rajada');
  assert.is(rows[10]?.retry_after, 1);
  const month = await db().oneFirst(sql.unsafe`SELECT calls FROM effective_monthly_usage WHERE conta_id = ${account.contaId}`);
  assert.is(month, 10, 'the month counts the admitted ones only');
});

test('two keys of one account share its minute and slot ceilings inside a batch', async () => {
  await createPlan(db(), 'lote_conta', { chaves_ativas: 10, rajada: 100, leituras_por_minuto: 5, simultaneas_por_chave: 10, simultaneas_por_conta: 3 });
  const account = await createAccount(db(), { plano: 'lote_conta' });
  const second = await addKey(db(), account);
  // One transaction: one instant of the database's clock, so the three batches share one minute.
  await db().transaction(async (tx) => {
    const rows = await admitBatch(tx, [account, second, account, second].map((k) => ({ token: k.token })));
    assert.equal(rows.map((r) => r.outcome), ['ok', 'ok', 'ok', 'limite_excedido']);
    assert.is(rows[3]?.reason, 'simultaneas', 'three slots for the account, whichever key holds them');
    const minute = await admitBatch(tx, [{ token: second.token }, { token: account.token }], {
      release: [account, second, account].map((k) => ({ contaId: account.contaId, chaveId: k.chaveId })),
    });
    assert.equal(minute.map((r) => r.outcome), ['ok', 'ok']);
    const third = await admitBatch(tx, [{ token: account.token }], {
      release: [{ contaId: account.contaId, chaveId: second.chaveId }],
    });
    assert.is(third[0]?.reason, 'minuto', 'five reads a minute for the account: the sixth is refused');
  });
});

test('twenty refusals inside one batch suspend the key once, with one e-mail, and the rest of the batch finds it suspended', async () => {
  await createPlan(db(), 'lote_um', { chaves_ativas: 10, rajada: 1, rajada_recarga_por_segundo: 1, simultaneas_por_chave: 100, simultaneas_por_conta: 100 });
  const account = await createAccount(db(), { plano: 'lote_um' });
  const rows = await db().transaction((tx) => admitBatch(tx, Array.from({ length: 25 }, () => ({ token: account.token }))));
  assert.is(rows[0]?.outcome, 'ok');
  assert.ok(rows.slice(1, 21).every((r) => r.outcome === 'limite_excedido'), 'twenty refusals');
  assert.ok(rows[20]?.suspended_until, 'the twentieth refusal suspends');
  assert.ok(rows.slice(21).every((r) => r.outcome === 'escopo_insuficiente' && r.reason === 'chave_suspensa'));
  const Key = z.object({ recusas: z.number(), suspensa: z.boolean(), emails: z.number() });
  const key = await db().one(sql.type(Key)`
    SELECT recusas_consecutivas AS recusas, suspensa_ate > now() AS suspensa,
           (SELECT count(*)::int FROM outgoing_emails WHERE conta_id = ${account.contaId} AND kind = 'chave_suspensa') AS emails
      FROM chaves_api WHERE id = ${account.chaveId}`);
  assert.equal(key, { recusas: 20, suspensa: true, emails: 1 });
});

test('the releases a batch carries count before it decides, for its own accounts and for others', async () => {
  await createPlan(db(), 'lote_slot', { chaves_ativas: 10, rajada: 100, simultaneas_por_chave: 1, simultaneas_por_conta: 1 });
  const a = await createAccount(db(), { plano: 'lote_slot' });
  const b = await createAccount(db(), { plano: 'lote_slot' });
  assert.equal((await admitBatch(db(), [{ token: a.token }, { token: b.token }])).map((r) => r.outcome), ['ok', 'ok']);
  assert.equal((await admitBatch(db(), [{ token: a.token }])).map((r) => r.reason), ['simultaneas']);
  // a's slot given back by a batch about a: admitted again; b's given back by a batch about a only.
  const again = await admitBatch(db(), [{ token: a.token }], { release: [a, b].map((k) => ({ contaId: k.contaId, chaveId: k.chaveId })) });
  assert.is(again[0]?.outcome, 'ok');
  assert.is((await admitBatch(db(), [{ token: b.token }]))[0]?.outcome, 'ok', "b's slot was freed by the other batch");
  const slots = await db().oneFirst(sql.unsafe`SELECT sum(in_flight)::int FROM request_slots WHERE holder = 'test' AND conta_id IN (${a.contaId}, ${b.contaId})`);
  assert.is(slots, 2);
});

test('a batch that commits after its requests were answered 503 is undone, and a stalled batch does not hold the others', async () => {
  const account = await createAccount(db(), { plano: 'lote' });
  const other = await createAccount(db(), { plano: 'lote' });
  // Another session holds the account's admission lock past the web process's wait budget.
  const [holder, meanwhile] = await db().connect(async (connection) => {
    await connection.query(sql.unsafe`SELECT pg_advisory_lock(hashtextextended(${account.contaId}::text, 7410203))`);
    const stuck = request(`${app.baseUrl}/saude`, { token: account.token });
    await new Promise((r) => setTimeout(r, 40));
    const started = performance.now();
    const free = await request(`${app.baseUrl}/saude`, { token: other.token });
    const waited = performance.now() - started;
    const res = await stuck;
    await connection.query(sql.unsafe`SELECT pg_advisory_unlock(hashtextextended(${account.contaId}::text, 7410203))`);
    return [res, { status: free.status, waited }] as const;
  });
  assert.is(meanwhile.status, 200, 'another account is admitted while the first batch waits');
  assert.ok(meanwhile.waited < 300, `without waiting for it (${Math.round(meanwhile.waited)} ms)`);
  assert.is(holder.status, 503);
  assert.is(holder.body.codigo, 'indisponivel');
  const Usage = z.object({ slots: z.number(), mes: z.number(), tokens: z.number().nullable() });
  let usage = { slots: -1, mes: -1, tokens: null as number | null };
  for (let i = 0; i < 100; i++) {
    await new Promise((r) => setTimeout(r, 20));
    await app.web.flush();
    usage = await db().one(sql.type(Usage)`
      SELECT coalesce((SELECT sum(in_flight) FROM request_slots WHERE conta_id = ${account.contaId}), 0)::int AS slots,
             coalesce((SELECT calls FROM effective_monthly_usage WHERE conta_id = ${account.contaId}), 0)::int AS mes,
             (SELECT tokens FROM rate_buckets WHERE chave_id = ${account.chaveId})::float8 AS tokens`);
    if (usage.tokens !== null && usage.slots === 0 && usage.mes === 0) break;
  }
  assert.is(usage.slots, 0, 'the slot is free');
  assert.is(usage.mes, 0, 'the month was refunded');
  assert.ok(usage.tokens !== null && usage.tokens >= 9.99, `the burst was refunded (${usage.tokens})`);
  assert.is((await request(`${app.baseUrl}/saude`, { token: account.token })).status, 200, 'and the key works at once');
});

test.run();
