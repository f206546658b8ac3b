import { randomUUID } from 'node:crypto';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { clock } from '#shared/clock.ts';
import { sql } from '#shared/db/pool.ts';
import { hashToken } from '#shared/domain/chaves.ts';
import { definirPermissoes } from '#shared/db/contas.ts';
import { revogarChave } from '#shared/db/chaves.ts';
import { PERMISSOES } from '#shared/domain/acesso.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { addKey, createAccount, type TestAccount } from './helpers/fixtures.ts';
import { request } from './helpers/http.ts';
import { probeRoutes } from './helpers/probe-routes.ts';
import { emit } from './helpers/receiver.ts';
import { lerUso, settled } from './helpers/uso.ts';
import { routes } from '../api/routes/index.ts';
import { MAX_HELD, RefusalCache } from '../api/admission/refusal-cache.ts';
import type { AdmissionRow } from '../api/admission/admission-row.ts';

const test = suite('authentication and authorization');
let app: TestApp;
let account: TestAccount;

test.before(async () => {
  app = await startTestApp({ extraRoutes: probeRoutes });
  account = await createAccount(app.db.pool, { plano: 'farm' });
});
test.after(async () => app.stop());

const get = (path: string, authorization?: string) =>
  request(`${app.baseUrl}${path}`, { headers: authorization ? { authorization } : {} });

const exec = (query: ReturnType<typeof sql.unsafe>) => app.db.pool.query(query);

test('admits a valid key on a route without scope', async () => {
  const res = await get('/saude', `Bearer ${account.token}`);
  assert.is(res.status, 200);
  assert.is(res.body.situacao, 'ok');
});

test('answers every kind of bad key with a byte-identical 401 apart from requisicao_id', async () => {
  const revoked = await addKey(app.db.pool, account);
  await revogarChave(app.db.pool, account.contaId, revoked.chaveId);
  const expired = await addKey(app.db.pool, account);
  await exec(sql.unsafe`UPDATE chaves_api SET criada_em = now() - interval '2 days', expira_em = now() - interval '1 day' WHERE id = ${expired.chaveId}`);
  const unknown = `chv_AAAAAAAA_${'A'.repeat(43)}`;
  const cases: [string, string | undefined][] = [
    ['missing', undefined],
    ['empty', 'Bearer '],
    ['wrong scheme', `Basic ${account.token}`],
    ['malformed', 'Bearer not-a-key'],
    ['truncated', `Bearer ${account.token.slice(0, -1)}`],
    ['unknown', `Bearer ${unknown}`],
    ['revoked', `Bearer ${revoked.token}`],
    ['expired', `Bearer ${expired.token}`],
  ];
  const bodies = new Set<string>();
  const headerSets = new Set<string>();
  for (const [name, authorization] of cases) {
    const res = await get('/conta', authorization);
    assert.is(res.status, 401, name);
    assert.is(res.headers.get('content-type'), 'application/problem+json; charset=utf-8', name);
    assert.is(res.body.codigo, 'nao_autenticado', name);
    assert.is(res.body.requisicao_id, res.headers.get('x-request-id'), name);
    bodies.add(res.text.replace(res.body.requisicao_id, '<id>'));
    const headers = [...res.headers].filter(([k]) => !['date', 'x-request-id'].includes(k));
    headerSets.add(JSON.stringify(headers));
  }
  assert.is(bodies.size, 1, [...bodies].join('\n'));
  assert.is(headerSets.size, 1, [...headerSets].join('\n'));
});

test('refuses a key without the route scope with 403 escopo_insuficiente', async () => {
  const narrow = await addKey(app.db.pool, account, { escopos: ['catalogo:ler'] });
  const res = await get('/saude', `Bearer ${narrow.token}`);
  assert.is(res.status, 200, 'routes without scope stay open to every valid key');
  const wide = await scopeProbe(account.token);
  assert.ok(wide.admitted, 'a key holding the scope is admitted');
  const { admitted, refused } = await scopeProbe(narrow.token);
  assert.not.ok(admitted);
  assert.is(refused.status, 403);
  assert.is(refused.body.codigo, 'escopo_insuficiente');
  assert.match(refused.body.detail, 'pedidos:ler');
});

test('refuses with 403 when the account is blocked, and admits again when unblocked', async () => {
  const other = await createAccount(app.db.pool);
  await exec(sql.unsafe`UPDATE contas SET bloqueada = true WHERE id = ${other.contaId}`);
  let res = await get('/saude', `Bearer ${other.token}`);
  assert.is(res.status, 403);
  assert.is(res.body.codigo, 'escopo_insuficiente');
  assert.match(res.body.detail, 'bloqueada');
  await exec(sql.unsafe`UPDATE contas SET bloqueada = false WHERE id = ${other.contaId}`);
  res = await get('/saude', `Bearer ${other.token}`);
  assert.is(res.status, 200);
});

test('refuses with 403 when the account API module is switched off or the plan has no API', async () => {
  const other = await createAccount(app.db.pool, { plano: 'bancada' });
  await exec(sql.unsafe`UPDATE contas SET api_ativa = false WHERE id = ${other.contaId}`);
  let res = await get('/saude', `Bearer ${other.token}`);
  assert.is(res.status, 403);
  assert.is(res.body.codigo, 'escopo_insuficiente');
  await exec(sql.unsafe`UPDATE contas SET api_ativa = true WHERE id = ${other.contaId}`);
  await exec(sql.unsafe`UPDATE planos SET api_disponivel = false WHERE id = 'bancada'`);
  res = await get('/saude', `Bearer ${other.token}`);
  await exec(sql.unsafe`UPDATE planos SET api_disponivel = true WHERE id = 'bancada'`);
  assert.is(res.status, 403);
  assert.is(res.body.codigo, 'escopo_insuficiente');
});

test('refuses with 403 when the key is suspended, until the suspension ends', async () => {
  const key = await addKey(app.db.pool, account);
  await exec(sql.unsafe`UPDATE chaves_api SET suspensa_ate = now() + interval '15 minutes' WHERE id = ${key.chaveId}`);
  let res = await get('/saude', `Bearer ${key.token}`);
  assert.is(res.status, 403);
  assert.is(res.body.codigo, 'escopo_insuficiente');
  await exec(sql.unsafe`UPDATE chaves_api SET suspensa_ate = now() - interval '1 second' WHERE id = ${key.chaveId}`);
  // The web process answers a suspended key from memory for up to 5 s (api/admission/refusal-cache.ts).
  clock.advance(5_000);
  try {
    res = await get('/saude', `Bearer ${key.token}`);
  } finally {
    clock.reset();
  }
  assert.is(res.status, 200);
});

test('a suspended key is answered from memory for up to 5 s, so hammering it costs the database nothing', async () => {
  const key = await addKey(app.db.pool, account);
  await exec(sql.unsafe`UPDATE chaves_api SET suspensa_ate = now() + interval '15 minutes' WHERE id = ${key.chaveId}`);
  assert.is((await get('/saude', `Bearer ${key.token}`)).body.codigo, 'escopo_insuficiente');
  // Revoked now, the database would answer 401: the 403 that follows came from memory.
  await exec(sql.unsafe`UPDATE chaves_api SET revogada_em = now() WHERE id = ${key.chaveId}`);
  assert.is((await get('/saude', `Bearer ${key.token}`)).status, 403);
  clock.advance(5_000);
  try {
    assert.is((await get('/saude', `Bearer ${key.token}`)).status, 401);
  } finally {
    clock.reset();
  }
});

test('the refusals kept in memory are bounded: the least recently used goes first; admissions are never kept', () => {
  const cache = new RefusalCache({ max: 2 });
  const unknown = { outcome: 'nao_autenticado' } as AdmissionRow;
  const [a, b, c] = ['a', 'b', 'c'].map((t) => hashToken(t)) as [Buffer, Buffer, Buffer];
  cache.remember(a, unknown);
  cache.remember(b, unknown);
  assert.ok(cache.lookup(a));
  cache.remember(c, unknown);
  assert.equal([!!cache.lookup(a), !!cache.lookup(b), !!cache.lookup(c), cache.size], [true, false, true, 2]);
  cache.remember(b, { outcome: 'ok' } as AdmissionRow);
  cache.remember(b, { outcome: 'limite_excedido', reason: 'rajada' } as AdmissionRow);
  assert.is(cache.lookup(b), null);
});

test('a refusal answered from memory is held REFUSAL_DELAY_MS first, at most MAX_HELD at once', async () => {
  const cache = new RefusalCache({ delayMs: 200 });
  const started = performance.now();
  const held = Array.from({ length: MAX_HELD }, () => cache.hold());
  const beyond = performance.now();
  await cache.hold(); // the MAX_HELD + 1st is not held
  assert.ok(performance.now() - beyond < 100, 'beyond MAX_HELD, answered at once');
  await Promise.all(held);
  assert.ok(performance.now() - started >= 195, 'held for the delay');
  await new RefusalCache().hold(); // no delay configured: nothing to wait for
});

test('a 401 waits for no lock: unknown, revoked and expired keys are decided before the account is locked', async () => {
  const revoked = await addKey(app.db.pool, account);
  await exec(sql.unsafe`UPDATE chaves_api SET revogada_em = now() WHERE id = ${revoked.chaveId}`);
  const expired = await addKey(app.db.pool, account);
  await exec(sql.unsafe`UPDATE chaves_api SET criada_em = now() - interval '2 days', expira_em = now() - interval '1 second' WHERE id = ${expired.chaveId}`);
  // The account's admission lock held elsewhere, as a long batch of its requests would hold it.
  let release: () => void = () => undefined;
  let locked: () => void = () => undefined;
  const isLocked = new Promise<void>((resolve) => (locked = resolve));
  const holder = app.db.pool.transaction(async (tx) => {
    await tx.query(sql.unsafe`SELECT pg_advisory_xact_lock(conta_lock_key(${account.contaId}))`);
    locked();
    await new Promise<void>((resolve) => (release = resolve));
  });
  await isLocked;
  try {
    for (const token of [revoked.token, expired.token, `chv_naoexist_${'y'.repeat(43)}`]) {
      const res = await get('/saude', `Bearer ${token}`);
      assert.is(res.status, 401, `${res.status} ${res.text}`);
    }
  } finally {
    release();
    await holder;
  }
});

test('a token that is no key is answered 401 from memory for a minute', async () => {
  const token = `chv_abcdefgh_${'x'.repeat(43)}`;
  assert.is((await get('/saude', `Bearer ${token}`)).status, 401);
  // The impossible made possible, to see who answers: a key with that very token appears.
  const key = await addKey(app.db.pool, account);
  await exec(sql.unsafe`UPDATE chaves_api SET token_hash = ${sql.binary(hashToken(token))} WHERE id = ${key.chaveId}`);
  assert.is((await get('/saude', `Bearer ${token}`)).status, 401);
  clock.advance(60_000);
  try {
    assert.is((await get('/saude', `Bearer ${token}`)).status, 200);
  } finally {
    clock.reset();
  }
});

test('a key loses what its creator loses, at once', async () => {
  const other = await createAccount(app.db.pool);
  let { admitted } = await scopeProbe(other.token);
  assert.ok(admitted);
  await definirPermissoes(app.db.pool, other.contaId, other.usuarioId, PERMISSOES.filter((p) => p !== 'producao.ver'));
  const probe = await scopeProbe(other.token);
  assert.is(probe.refused.status, 403);
  assert.match(probe.refused.body.detail, 'producao.ver');
  await definirPermissoes(app.db.pool, other.contaId, other.usuarioId, PERMISSOES);
  ({ admitted } = await scopeProbe(other.token));
  assert.ok(admitted);
  await exec(sql.unsafe`UPDATE usuarios SET ativo = false WHERE id = ${other.usuarioId}`);
  const inactive = await scopeProbe(other.token);
  assert.is(inactive.refused.status, 403, 'an inactive creator holds no permission');
});

test('a key whose creator is deactivated is 403 on every scoped route, the event log included, and pays nothing', async () => {
  const other = await createAccount(app.db.pool, { plano: 'farm' });
  const evento = await emit(app.db.pool, other.contaId, 'cotacao.aprovada', { objeto: 'cotacao', id: randomUUID(), codigo: 'COT-000001' });
  await exec(sql.unsafe`UPDATE outbox SET relayed_at = now() WHERE id = ${evento}`);
  // A recovery needs its range; every other POST of the list takes an empty body.
  const corpo = (path: string) => (path === '/eventos/recuperar' ? { desde: new Date(Date.now() - 3_600_000).toISOString(), ate: new Date(Date.now() + 60_000).toISOString() } : {});
  const chamar = (route: (typeof routes)[number]) => request(`${app.baseUrl}${route.path.replace('{id}', evento)}`, {
    method: route.method, token: other.token,
    ...(route.method === 'POST' ? { body: corpo(route.path), headers: { 'idempotency-key': `desativado-${route.operationId}` } } : {}),
  });
  const eventLog = routes.filter((r) => r.scope?.startsWith('eventos:'));
  assert.equal(eventLog.map((r) => r.path), ['/eventos', '/eventos/{id}', '/eventos/{id}/entregas', '/eventos/{id}/reenviar', '/eventos/recuperar']);
  // While the creator is active, the event log answers (reenviar: 422, no endpoint receives it;
  // recuperar: 202, nothing to schedule).
  for (const route of eventLog) assert.ok([200, 202, 422].includes((await chamar(route)).status), route.path);
  await exec(sql.unsafe`UPDATE usuarios SET ativo = false WHERE id = ${other.usuarioId}`);
  await settled(app);
  const antes = await lerUso(app.db.pool, other.contaId, other.chaveId);
  for (const route of routes.filter((r) => r.scope !== null)) {
    const res = await chamar(route);
    assert.is(res.status, 403, `${route.method} ${route.path}: ${res.text}`);
    assert.is(res.body.codigo, 'escopo_insuficiente');
  }
  await settled(app);
  assert.is((await lerUso(app.db.pool, other.contaId, other.chaveId)).mes, antes.mes, 'nothing charged in the month');
  // Routes without a scope still answer: the key authenticates.
  for (const route of routes.filter((r) => r.scope === null)) assert.is((await chamar(route)).status, 200, route.path);
});

test('the API switched off for the platform answers 503 indisponivel with Retry-After', async () => {
  await exec(sql.unsafe`UPDATE platform SET api_enabled = false`);
  const res = await get('/saude', `Bearer ${account.token}`);
  await exec(sql.unsafe`UPDATE platform SET api_enabled = true`);
  assert.is(res.status, 503);
  assert.is(res.body.codigo, 'indisponivel');
  assert.ok(Number(res.headers.get('retry-after')) > 0);
});

test('enforces the active keys of the plan when a key is created', async () => {
  const bancada = await createAccount(app.db.pool, { plano: 'bancada' });
  const second = await addKey(app.db.pool, bancada);
  try {
    await addKey(app.db.pool, bancada);
    assert.unreachable('a third active key on Bancada must be refused');
  } catch (error) {
    assert.instance(error, Error);
    assert.match(String((error as Error).message), /check integrity constraint/);
  }
  await revogarChave(app.db.pool, bancada.contaId, second.chaveId);
  await addKey(app.db.pool, bancada);
});

test('concurrent key creations never exceed the plan', async () => {
  const bancada = await createAccount(app.db.pool, { plano: 'bancada' });
  const attempts = await Promise.allSettled(Array.from({ length: 6 }, () => addKey(app.db.pool, bancada)));
  assert.is(attempts.filter((a) => a.status === 'fulfilled').length, 1);
  const active = await app.db.pool.oneFirst(sql.unsafe`
    SELECT count(*)::int FROM chaves_api WHERE conta_id = ${bancada.contaId} AND revogada_em IS NULL`);
  assert.is(active, 2);
});

async function scopeProbe(token: string) {
  const res = await get('/teste/escopo', `Bearer ${token}`);
  return { admitted: res.status === 200, refused: res };
}

test.run();
