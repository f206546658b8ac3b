// Limits as an integrator sees them: the headers of §8.3, 429 with Retry-After, what a 304 or a
// repetition costs, and the suspension of a key that keeps hitting its limits.
import { parseList } from 'structured-headers';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { clock } from '#shared/clock.ts';
import { sql } from '#shared/db/pool.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { createAccount, createPlan, type TestAccount } from './helpers/fixtures.ts';
import { request } from './helpers/http.ts';
import { awayFromMinuteBoundary, minuteUsed } from './helpers/uso.ts';
import { probeRoutes, slowRoutes } from './helpers/probe-routes.ts';
import { startSmtpReceiver, type SmtpReceiver } from './helpers/smtp.ts';

const test = suite('limits over HTTP');
let app: TestApp;
let smtp: SmtpReceiver;

test.before(async () => {
  smtp = await startSmtpReceiver();
  app = await startTestApp({ worker: true, extraRoutes: [...probeRoutes, ...slowRoutes], env: { SMTP_URL: smtp.url } });
});
test.after(async () => {
  await app.stop();
  await smtp.close();
});

const get = (account: TestAccount, path: string) => request(`${app.baseUrl}${path}`, { token: account.token });

function parsed(header: string | null) {
  assert.ok(header, 'header present');
  return parseList(header ?? '').map(([name, params]) => ({ name: String(name), params: Object.fromEntries(params) }));
}

const usage = (account: TestAccount) =>
  app.db.pool.one(sql.type(z.object({ mes: z.number(), tokens: z.number(), at: z.number(), leitura: z.number(), escrita: z.number() }))`
    SELECT coalesce((SELECT calls FROM effective_monthly_usage WHERE conta_id = ${account.contaId}), 0)::int AS mes,
           (SELECT tokens FROM rate_buckets WHERE chave_id = ${account.chaveId})::float8 AS tokens,
           (SELECT extract(epoch FROM refreshed_at) FROM rate_buckets WHERE chave_id = ${account.chaveId})::float8 AS at,
           ${minuteUsed(account.contaId, 'leitura')} AS leitura,
           ${minuteUsed(account.contaId, 'escrita')} AS escrita`);

/** Settlements are batched: write them now rather than wait for the batch. */
const settled = () => app.web.flush();


/**
 * Burst tokens a call took: the bucket's fall plus what it refilled meanwhile (never full here).
 * Times are epoch seconds in float8, good to about a microsecond: compared to a thousandth of a token.
 */
const burstCharged = (before: { tokens: number; at: number }, after: { tokens: number; at: number }, rate: number) =>
  before.tokens + (after.at - before.at) * rate - after.tokens;

/** Accounts on a plan like Farm with a burst too deep to fill, so refills never hide a charge. */
async function deepBurstAccount(): Promise<TestAccount> {
  await createPlan(app.db.pool, 'fundo', { chaves_ativas: 50, rajada: 1000000 });
  return createAccount(app.db.pool, { plano: 'fundo' });
}

test('every admitted response carries RateLimit-Policy and RateLimit as RFC 9651 lists', async () => {
  const account = await createAccount(app.db.pool, { plano: 'oficina' });
  const res = await get(account, '/saude');
  assert.is(res.status, 200);
  const policy = parsed(res.headers.get('ratelimit-policy'));
  assert.equal(policy, [
    { name: 'rajada', params: { q: 10, w: 5 } },
    { name: 'minuto', params: { q: 60, w: 60 } },
    { name: 'mes', params: { q: 150000, w: 2592000 } },
  ]);
  assert.match(res.headers.get('ratelimit-policy') ?? '', /^"rajada";q=10;w=5, "minuto";q=60;w=60, "mes";q=150000;w=2592000$/);
  const current = parsed(res.headers.get('ratelimit'));
  assert.is(current.length, 1);
  assert.is(current[0]?.name, 'rajada', 'one of ten burst tokens used is the closest to exhaustion');
  assert.is(current[0]?.params.r, 9);
  assert.ok(Number(current[0]?.params.t) >= 0);

  const write = await request(`${app.baseUrl}/teste/eco`, { token: account.token, body: { nome: 'a', quantidade: 1 } });
  assert.is(write.status, 201);
  assert.equal(parsed(write.headers.get('ratelimit-policy'))[1], { name: 'minuto', params: { q: 20, w: 60 } }, 'writes show their own minute ceiling');
});

test('RateLimit names the limit closest to exhaustion', async () => {
  const account = await createAccount(app.db.pool, { plano: 'farm' });
  await app.db.pool.query(sql.unsafe`
    INSERT INTO monthly_usage (conta_id, month, calls) VALUES (${account.contaId}, date_trunc('month', now() AT TIME ZONE 'UTC')::date, 749990)`);
  const res = await get(account, '/saude');
  const current = parsed(res.headers.get('ratelimit'))[0];
  assert.is(current?.name, 'mes');
  assert.is(current?.params.r, 9);
});

test('a refused call is 429 limite_excedido with Retry-After and the limit headers', async () => {
  const account = await createAccount(app.db.pool, { plano: 'bancada' });
  const statuses: number[] = [];
  let last = await get(account, '/saude');
  for (let i = 0; i < 8 && last.status !== 429; i++) {
    statuses.push(last.status);
    last = await get(account, '/saude');
  }
  assert.is(last.status, 429);
  assert.ok(statuses.length >= 5, 'the burst of five passed first');
  assert.is(last.body.codigo, 'limite_excedido');
  assert.is(last.headers.get('content-type'), 'application/problem+json; charset=utf-8');
  assert.match(last.headers.get('retry-after') ?? '', /^[1-9]\d*$/);
  assert.is(parsed(last.headers.get('ratelimit'))[0]?.name, 'rajada');
  assert.ok(last.headers.get('ratelimit-policy'));
});

test('a 304 costs one in the burst and nothing in the month', async () => {
  await awayFromMinuteBoundary(app.db.pool);
  const account = await deepBurstAccount();
  await get(account, '/saude');
  await settled();
  const before = await usage(account);
  const res = await get(account, '/teste/cobranca?custo=1&final=not_modified');
  assert.is(res.status, 304);
  await settled();
  const after = await usage(account);
  assert.is(after.mes, before.mes, 'month unchanged');
  assert.ok(Math.abs(burstCharged(before, after, 5) - 1) < 1e-3, 'one burst token');
  assert.is(after.leitura, before.leitura + 1, 'one read');
});

test('an idempotent repetition of a write costs one read in the burst and nothing in the month', async () => {
  await awayFromMinuteBoundary(app.db.pool);
  const account = await deepBurstAccount();
  await get(account, '/saude');
  await settled();
  const before = await usage(account);
  const res = await get(account, '/teste/cobranca?custo=2&classe=write&final=replay');
  assert.is(res.status, 200);
  await settled();
  const after = await usage(account);
  assert.is(after.mes, before.mes);
  assert.is(after.escrita, before.escrita, 'no write counted');
  assert.is(after.leitura, before.leitura + 1, 'counted as one read');
  assert.ok(Math.abs(burstCharged(before, after, 5) - 1) < 1e-3, 'one burst token');
});

test('a call charged for more than it used gives the difference back', async () => {
  await awayFromMinuteBoundary(app.db.pool);
  const account = await deepBurstAccount();
  await get(account, '/saude');
  await settled();
  const before = await usage(account);
  const res = await get(account, '/teste/cobranca?custo=5&final=2');
  assert.is(res.status, 200);
  await settled();
  const after = await usage(account);
  assert.is(after.mes, before.mes + 2);
  assert.is(after.leitura, before.leitura + 2);
  assert.ok(Math.abs(burstCharged(before, after, 5) - 2) < 1e-3, 'two burst tokens');
});

test('twenty refusals in a row suspend the key for 15 minutes, e-mail its creator, and a job lifts it', async () => {
  const account = await createAccount(app.db.pool, { plano: 'bancada' });
  await app.db.pool.query(sql.unsafe`
    INSERT INTO monthly_usage (conta_id, month, calls) VALUES (${account.contaId}, date_trunc('month', now() AT TIME ZONE 'UTC')::date, 50000)`);
  for (let i = 0; i < 19; i++) assert.is((await get(account, '/saude')).status, 429);
  const email = await app.db.pool.oneFirst(sql.unsafe`SELECT email FROM usuarios WHERE id = ${account.usuarioId}`);
  assert.is(smtp.messages.filter((m) => m.to.includes(String(email))).length, 0, 'not yet');
  const twentieth = await get(account, '/saude');
  assert.is(twentieth.status, 429);

  const suspended = await get(account, '/saude');
  assert.is(suspended.status, 403);
  assert.is(suspended.body.codigo, 'escopo_insuficiente');
  assert.match(suspended.body.detail, 'suspensa');

  const mail = await smtp.waitFor((m) => m.to.includes(String(email)));
  assert.match(mail.raw, 'suspensa');
  // Which limit, how often, and what Retry-After asked for (quoted-printable may fold the lines).
  const text = mail.raw.replace(/=\r?\n/g, '');
  assert.match(text, '20 recusas seguidas');
  assert.match(text, /chamadas do m=C3=AAs da conta|chamadas do mês da conta/);
  assert.match(text, /Retry-After dessa resposta pedia \d+ s/);
  const row = await app.db.pool.one(sql.type(z.object({ kind: z.string(), status: z.string() }))`
    SELECT kind, status FROM outgoing_emails WHERE conta_id = ${account.contaId}`);
  assert.is(row.kind, 'chave_suspensa');

  const Job = z.object({ start_after: z.string(), suspensa_ate: z.string() });
  const job = await app.db.pool.one(sql.type(Job)`
    SELECT j.start_after, ch.suspensa_ate FROM pgboss.job j, chaves_api ch
     WHERE j.name = 'lift-suspension' AND j.data->>'chaveId' = ${account.chaveId}::text AND ch.id = ${account.chaveId}`);
  assert.ok(Math.abs(Date.parse(job.start_after) - Date.parse(job.suspensa_ate)) < 1000, 'scheduled for the end of the suspension');
  const minutes = (Date.parse(job.suspensa_ate) - Date.now()) / 60_000;
  assert.ok(minutes > 14.5 && minutes <= 15.01, 'fifteen minutes');

  // Fifteen minutes pass: the suspension and the job's start move back, the worker runs it.
  await app.db.pool.query(sql.unsafe`UPDATE chaves_api SET suspensa_ate = now() - interval '1 second' WHERE id = ${account.chaveId}`);
  await app.db.pool.query(sql.unsafe`UPDATE pgboss.job SET start_after = now() WHERE name = 'lift-suspension' AND data->>'chaveId' = ${account.chaveId}::text`);
  const Key = z.object({ suspensa_ate: z.string().nullable(), recusas_consecutivas: z.number() });
  let key = { suspensa_ate: 'x' as string | null, recusas_consecutivas: -1 };
  for (let i = 0; i < 100 && key.suspensa_ate !== null; i++) {
    await new Promise((r) => setTimeout(r, 100));
    key = await app.db.pool.one(sql.type(Key)`SELECT suspensa_ate, recusas_consecutivas FROM chaves_api WHERE id = ${account.chaveId}`);
  }
  assert.equal(key, { suspensa_ate: null, recusas_consecutivas: 0 }, 'lifted and the count reset by the job');

  // The client keeps hammering: suspended again, its creator is not e-mailed again the same day.
  clock.advance(5_000); // past what the web process remembers of the suspension
  try {
    for (let i = 0; i < 20; i++) assert.is((await get(account, '/saude')).status, 429);
    assert.is((await get(account, '/saude')).status, 403);
  } finally {
    clock.reset();
  }
  const Suspension = z.object({ limit_name: z.string(), refusals: z.number(), notified: z.boolean(), retry_after: z.number() });
  const suspensions = await app.db.pool.any(sql.type(Suspension)`
    SELECT limit_name, refusals, notified, retry_after FROM suspensions WHERE chave_id = ${account.chaveId} ORDER BY id`);
  assert.equal(suspensions.map((s) => [s.limit_name, s.refusals, s.notified]), [['mes', 20, true], ['mes', 20, false]]);
  assert.ok(suspensions.every((s) => s.retry_after > 0));
  const emails = await app.db.pool.oneFirst(sql.unsafe`SELECT count(*)::int FROM outgoing_emails WHERE conta_id = ${account.contaId}`);
  assert.is(emails, 1, 'one e-mail a day');
});

test('a key suspended again a day after its last e-mail has its creator e-mailed again', async () => {
  const account = await createAccount(app.db.pool, { plano: 'bancada' });
  const suspend = () => app.db.pool.query(sql.unsafe`
    SELECT record_suspension(${account.contaId}, ${account.chaveId}, now() + interval '15 minutes', 'rajada', 3, 20)`);
  await suspend();
  await suspend();
  await app.db.pool.query(sql.unsafe`
    UPDATE suspensions SET started_at = started_at - interval '25 hours', ends_at = ends_at - interval '25 hours' WHERE chave_id = ${account.chaveId}`);
  await suspend();
  const notified = await app.db.pool.anyFirst(sql.type(z.object({ notified: z.boolean() }))`
    SELECT notified FROM suspensions WHERE chave_id = ${account.chaveId} ORDER BY id`);
  assert.equal(notified, [true, false, true], 'the first, not the second the same day, the third a day later');
  const emails = await app.db.pool.oneFirst(sql.unsafe`
    SELECT count(*)::int FROM outgoing_emails WHERE conta_id = ${account.contaId} AND kind = 'chave_suspensa'`);
  assert.is(emails, 2);
});

test('GET /conta shows the rule of suspension and the key\'s suspensions of the last 24 hours', async () => {
  const account = await createAccount(app.db.pool, { plano: 'bancada' });
  const suspensao = (horas: number) => sql.unsafe`
    INSERT INTO suspensions (conta_id, chave_id, started_at, ends_at, limit_name, retry_after, refusals, notified)
    VALUES (${account.contaId}, ${account.chaveId}, now() - make_interval(hours => ${horas}),
            now() - make_interval(hours => ${horas}) + interval '15 minutes', 'rajada', 1, 20, false)`;
  await app.db.pool.query(suspensao(2));
  await app.db.pool.query(suspensao(30));
  const conta = await get(account, '/conta');
  assert.equal(conta.body.suspensao, { recusas_para_suspender: 20, minutos: 15, suspensoes_24h: 1 });
  // The API reference states the rule the database applies (suspension_rule()).
  const rule = await app.db.pool.one(sql.type(z.object({ refusals: z.number(), minutes: z.number() }))`SELECT * FROM suspension_rule()`);
  const reference = await (await fetch(`${app.baseUrl}/openapi.json`)).json() as { paths: Record<string, { get: { description: string } }> };
  assert.match(reference.paths['/conta']?.get.description ?? '', `${rule.refusals} recusas seguidas por limite suspendem a chave por ${rule.minutes} minutos`);
});

test('GET /conta costs nothing against the month: a client can look before it spends', async () => {
  const account = await deepBurstAccount();
  await awayFromMinuteBoundary(app.db.pool);
  await get(account, '/saude');
  await settled();
  const before = await usage(account);
  for (let i = 0; i < 3; i++) assert.is((await get(account, '/conta')).status, 200);
  await settled();
  const after = await usage(account);
  assert.equal({ mes: after.mes - before.mes, leitura: after.leitura - before.leitura }, { mes: 0, leitura: 3 });
  assert.is((await get(account, '/saude')).status, 200);
  await settled();
  assert.is((await usage(account)).mes - after.mes, 1, 'any other call is charged');
});

test('an admitted call resets the count of refusals', async () => {
  const account = await createAccount(app.db.pool, { plano: 'bancada' });
  const fill = sql.unsafe`
    INSERT INTO monthly_usage (conta_id, month, calls) VALUES (${account.contaId}, date_trunc('month', now() AT TIME ZONE 'UTC')::date, 50000)
    ON CONFLICT (conta_id, month) DO UPDATE SET calls = 50000`;
  await app.db.pool.query(fill);
  for (let i = 0; i < 19; i++) assert.is((await get(account, '/saude')).status, 429);
  await app.db.pool.query(sql.unsafe`UPDATE monthly_usage SET calls = 0 WHERE conta_id = ${account.contaId}`);
  assert.is((await get(account, '/saude')).status, 200);
  await app.db.pool.query(fill);
  for (let i = 0; i < 19; i++) assert.is((await get(account, '/saude')).status, 429);
  assert.is((await get(account, '/saude')).status, 429, 'the 39th refusal overall is only the 19th in a row');
});

test.run();
