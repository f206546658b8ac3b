// The mechanisms every resource route shares: lists with cursors, conditional GETs and
// Idempotency-Key, exercised through GET /canais and two test-only routes.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { sql } from '#shared/db/pool.ts';
import { criarCanal } from '#shared/db/canais.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { createAccount, type TestAccount } from './helpers/fixtures.ts';
import { request } from './helpers/http.ts';
import { mechanismRoutes } from './helpers/probe-routes.ts';
import { novaCotacao } from './helpers/cotacoes.ts';
import { routes } from '../api/routes/index.ts';

const test = suite('lists, conditional requests and idempotency');
let app: TestApp;
let account: TestAccount;

test.before(async () => {
  app = await startTestApp({ extraRoutes: mechanismRoutes });
  await app.db.pool.query(sql.unsafe`UPDATE planos SET rajada = 100000, leituras_por_minuto = 100000, escritas_por_minuto = 100000, simultaneas_por_chave = 50, simultaneas_por_conta = 50 WHERE id = 'farm'`);
  account = await createAccount(app.db.pool, { plano: 'farm' });
});
test.after(async () => app.stop());

const get = (path: string, headers: Record<string, string> = {}) => request(`${app.baseUrl}${path}`, { token: account.token, headers });
const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  request(`${app.baseUrl}${path}`, { token: account.token, body, headers });

async function pageAll(path: string, limite: number): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | null = null;
  do {
    const res = await get(`${path}?limite=${limite}${cursor ? `&cursor=${cursor}` : ''}`);
    assert.is(res.status, 200);
    assert.ok(res.body.dados.length <= limite);
    ids.push(...res.body.dados.map((c: { id: string }) => c.id));
    cursor = res.body.proximo_cursor;
  } while (cursor);
  return ids;
}

test('a list pages through every record once, in order, with the envelope', async () => {
  const created: string[] = [];
  for (let i = 0; i < 23; i++) created.push((await criarCanal(app.db.pool, account.contaId, { nome: `Canal ${i}`, tipo: 'outro' })).id);
  const other = await createAccount(app.db.pool);
  await criarCanal(app.db.pool, other.contaId, { nome: 'De outra conta', tipo: 'outro' });
  const ids = await pageAll('/canais', 5);
  assert.equal(ids, created, 'every channel of the account exactly once, oldest first, none of another account');
  const last = await get('/canais?limite=100');
  assert.is(last.body.proximo_cursor, null);
  assert.is(last.body.dados.length, 23);
});

test('paging keeps its place while records are inserted and updated meanwhile', async () => {
  const before = await pageAll('/canais', 100);
  const seen: string[] = [];
  let cursor: string | null = null;
  let round = 0;
  do {
    const res = await get(`/canais?limite=4${cursor ? `&cursor=${cursor}` : ''}`);
    seen.push(...res.body.dados.map((c: { id: string }) => c.id));
    cursor = res.body.proximo_cursor;
    await criarCanal(app.db.pool, account.contaId, { nome: `Novo ${round++}`, tipo: 'outro' });
    await app.db.pool.query(sql.unsafe`UPDATE canais SET nome = nome || '*' WHERE conta_id = ${account.contaId} AND id = ${before[round % before.length] ?? ''}`);
  } while (cursor);
  assert.equal(seen.slice(0, before.length), before, 'no existing record skipped or repeated');
  assert.is(new Set(seen).size, seen.length, 'nothing repeated');
});

test('atualizado_desde keeps only what changed since', async () => {
  const marker = await app.db.pool.oneFirst(sql.unsafe`SELECT to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`);
  const { id } = await criarCanal(app.db.pool, account.contaId, { nome: 'Recente', tipo: 'marketplace' });
  const res = await get(`/canais?atualizado_desde=${encodeURIComponent(String(marker))}`);
  assert.equal(res.body.dados.map((c: { id: string }) => c.id), [id]);
});

test('bad limite, cursor or parameters are 400 dados_invalidos', async () => {
  for (const query of ['limite=0', 'limite=101', 'limite=abc', 'cursor=nao-e-um-cursor', `cursor=${Buffer.from('["x","y"]').toString('base64url')}`, 'ordem=nome', 'atualizado_desde=ontem']) {
    const res = await get(`/canais?${query}`);
    assert.is(res.status, 400, query);
    assert.is(res.body.codigo, 'dados_invalidos', query);
  }
});

test('a list costs 1 up to limite 25 and 3 above it or with two filters', async () => {
  const month = () => app.db.pool.oneFirst(sql.unsafe`SELECT calls FROM effective_monthly_usage WHERE conta_id = ${account.contaId}`);
  const cases: [string, number][] = [
    ['/canais', 1], ['/canais?limite=25', 1], ['/canais?limite=26', 3], ['/canais?limite=100', 3],
    ['/canais?atualizado_desde=2020-01-01T00:00:00Z', 1],
  ];
  for (const [path, cost] of cases) {
    const before = Number(await month());
    assert.is((await get(path)).status, 200, path);
    assert.is(Number(await month()) - before, cost, path);
  }
});

test('a GET with an ETag answers 304 without a body to If-None-Match, and 200 once the record changes', async () => {
  const { id } = await app.db.pool.one(sql.type(z.object({ id: z.string() }))`
    INSERT INTO produtos (conta_id, sku, nome) VALUES (${account.contaId}, 'ETAG-1', 'Produto') RETURNING id`);
  const first = await get(`/teste/produtos/${id}`);
  assert.is(first.status, 200);
  const etag = first.headers.get('etag') ?? '';
  assert.match(etag, /^"[A-Za-z0-9_-]+"$/, 'a strong tag');
  for (const header of [etag, `W/${etag}`, `"outra", ${etag}`, '*']) {
    const res = await get(`/teste/produtos/${id}`, { 'if-none-match': header });
    assert.is(res.status, 304, header);
    assert.is(res.text, '');
    assert.is(res.headers.get('etag'), etag);
  }
  assert.is((await get(`/teste/produtos/${id}`, { 'if-none-match': '"outra"' })).status, 200);
  await app.db.pool.query(sql.unsafe`UPDATE produtos SET nome = 'Mudou' WHERE id = ${id}`);
  const changed = await get(`/teste/produtos/${id}`, { 'if-none-match': etag });
  assert.is(changed.status, 200);
  assert.is(changed.body.nome, 'Mudou');
  assert.is.not(changed.headers.get('etag'), etag);
  const long = await get(`/teste/produtos/${id}`, { 'if-none-match': `"${'a'.repeat(99)}"` });
  assert.is(long.status, 400, 'If-None-Match over 100 characters');
});

test('Idempotency-Key: a repetition replays the status and the resource read again, marked as replayed', async () => {
  const first = await post('/teste/idempotente', { nome: 'Canal idempotente' }, { 'idempotency-key': 'chave-1' });
  assert.is(first.status, 201);
  assert.is(first.headers.get('idempotent-replayed'), null);
  const again = await post('/teste/idempotente', { nome: 'Canal idempotente' }, { 'idempotency-key': 'chave-1' });
  assert.is(again.status, 201);
  assert.equal(again.body, first.body);
  assert.is(again.headers.get('idempotent-replayed'), 'true');
  const count = await app.db.pool.oneFirst(sql.unsafe`SELECT count(*)::int FROM canais WHERE conta_id = ${account.contaId} AND nome = 'Canal idempotente'`);
  assert.is(count, 1);
  const stored = await app.db.pool.one(sql.type(z.object({ status_code: z.number(), resource_id: z.string(), expires_in: z.number() }))`
    SELECT status_code, resource_id, extract(epoch FROM expires_at - now())::int AS expires_in FROM idempotency_keys WHERE key = 'chave-1'`);
  assert.is(stored.status_code, 201);
  assert.is(stored.resource_id, first.body.id);
  assert.ok(stored.expires_in > 86000 && stored.expires_in <= 86400, 'kept 24 hours');
});

test('Idempotency-Key: key order and spacing of the body do not make a conflict; another body does', async () => {
  const body = '{"nome":"Ordem","esperar_ms":0}';
  const reordered = '{ "esperar_ms" : 0 ,\n "nome" : "Ordem" }';
  const raw = (text: string) => request(`${app.baseUrl}/teste/idempotente`, {
    token: account.token, rawBody: text, headers: { 'content-type': 'application/json', 'idempotency-key': 'chave-ordem' },
  });
  assert.is((await raw(body)).status, 201);
  const same = await raw(reordered);
  assert.is(same.status, 201);
  assert.is(same.headers.get('idempotent-replayed'), 'true');
  const conflict = await post('/teste/idempotente', { nome: 'Outro' }, { 'idempotency-key': 'chave-ordem' });
  assert.is(conflict.status, 422);
  assert.is(conflict.body.codigo, 'idempotencia_conflito');
});

test('Idempotency-Key: a business refusal is kept and replayed; a server error frees the key', async () => {
  const refused = await post('/teste/idempotente', { nome: 'recusar' }, { 'idempotency-key': 'chave-recusa' });
  assert.is(refused.status, 422);
  assert.is(refused.body.motivo, 'saldo_insuficiente');
  const replay = await post('/teste/idempotente', { nome: 'recusar' }, { 'idempotency-key': 'chave-recusa' });
  assert.is(replay.status, 422);
  assert.is(replay.body.codigo, 'saldo_insuficiente');
  assert.is(replay.body.motivo, 'saldo_insuficiente');
  assert.is(replay.headers.get('idempotent-replayed'), 'true');

  const failed = await post('/teste/idempotente', { nome: 'falhar' }, { 'idempotency-key': 'chave-500' });
  assert.is(failed.status, 500);
  const remaining = await app.db.pool.oneFirst(sql.unsafe`SELECT count(*)::int FROM idempotency_keys WHERE key = 'chave-500'`);
  assert.is(remaining, 0, 'a retry after a 500 runs again');
});

test('a refusal the database raises in a POST is kept with its key and replayed, and costs the pool no connection', async () => {
  const cotacao = await novaCotacao(app.db.pool, account.contaId);
  const webBackends = () => app.db.pool.anyFirst(sql.type(z.object({ pid: z.number() }))`
    SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'web'`);
  assert.is((await post(`/cotacoes/${cotacao}/status`, { status: 'aprovada' }, { 'idempotency-key': 'aquecer' })).status, 422);
  const before = await webBackends();
  for (let i = 0; i < 10; i++) {
    // rascunho → aprovada: refused by the quotation's trigger (transicao_invalida, a check_violation).
    const refused = await post(`/cotacoes/${cotacao}/status`, { status: 'aprovada' }, { 'idempotency-key': `recusa-do-banco-${i}` });
    assert.is(refused.status, 422);
    assert.is(refused.body.motivo, 'transicao_invalida');
  }
  const replay = await post(`/cotacoes/${cotacao}/status`, { status: 'aprovada' }, { 'idempotency-key': 'recusa-do-banco-3' });
  assert.equal([replay.status, replay.body.motivo, replay.headers.get('idempotent-replayed')], [422, 'transicao_invalida', 'true']);
  const after = await webBackends();
  assert.equal(before.filter((pid) => !after.includes(pid)), [], 'no connection of the web pool was closed by a refusal');
});

test('every POST of the API requires an Idempotency-Key: without one it is 400 naming the header', async () => {
  const posts = routes.filter((r) => r.method === 'POST');
  assert.ok(posts.length >= 4);
  for (const route of posts) {
    assert.is(route.idempotency, 'required', route.operationId);
    const path = route.path.replace(/\{\w+\}/g, () => crypto.randomUUID());
    const res = await post(path, {});
    assert.is(res.status, 400, `${route.operationId}: ${res.text}`);
    assert.ok(res.body.erros.some((e: { campo: string }) => e.campo === 'idempotency-key'), `${route.operationId}: ${res.text}`);
  }
});

test('Idempotency-Key is bound to the method and the concrete path: the same key on another resource is a conflict', async () => {
  const [a, b] = [await novaCotacao(app.db.pool, account.contaId), await novaCotacao(app.db.pool, account.contaId)];
  const first = await post(`/cotacoes/${a}/status`, { status: 'enviada' }, { 'idempotency-key': 'uma-por-recurso' });
  assert.is(first.status, 200);
  const elsewhere = await post(`/cotacoes/${b}/status`, { status: 'enviada' }, { 'idempotency-key': 'uma-por-recurso' });
  assert.is(elsewhere.status, 422, elsewhere.text);
  assert.is(elsewhere.body.codigo, 'idempotencia_conflito');
  assert.is((await get(`/cotacoes/${b}`)).body.status, 'rascunho', 'nothing was done to B');
  const again = await post(`/cotacoes/${a}/status`, { status: 'enviada' }, { 'idempotency-key': 'uma-por-recurso' });
  assert.equal([again.status, again.headers.get('idempotent-replayed')], [200, 'true']);
});

test('Idempotency-Key as integrators send it: spaces inside, or the quoted form of the IETF draft, which is the same key', async () => {
  assert.is((await post('/teste/idempotente', { nome: 'Com espaço' }, { 'idempotency-key': 'pedido 42 do ERP' })).status, 201);
  const quoted = await post('/teste/idempotente', { nome: 'Entre aspas' }, { 'idempotency-key': '"8e03978e-40d5-43e8-bc93-6894a57f9324"' });
  assert.is(quoted.status, 201);
  const bare = await post('/teste/idempotente', { nome: 'Entre aspas' }, { 'idempotency-key': '8e03978e-40d5-43e8-bc93-6894a57f9324' });
  assert.equal([bare.status, bare.headers.get('idempotent-replayed')], [201, 'true'], 'the quoted and the bare form are one key');
  for (const bad of ['"sem fim', '"acentuação"', 'x'.repeat(65), '"' + 'x'.repeat(65) + '"']) {
    const res = await post('/teste/idempotente', { nome: 'Ruim' }, { 'idempotency-key': bad });
    assert.is(res.status, 400, bad);
    const erro = res.body.erros.find((e: { campo: string }) => e.campo === 'idempotency-key');
    assert.match(erro?.mensagem ?? '', /de 1 a 64 caracteres ASCII visíveis ou espaços, ou essa chave entre aspas/, bad);
  }
});

test('Idempotency-Key: 20 concurrent requests with one key create once; the others are 409 or a replay', async () => {
  const results = await Promise.all(Array.from({ length: 20 }, () =>
    post('/teste/idempotente', { nome: 'Concorrente', esperar_ms: 200 }, { 'idempotency-key': 'chave-concorrente' })));
  const statuses = results.map((r) => r.status);
  assert.is(statuses.filter((s) => s === 201).length >= 1, true);
  assert.ok(statuses.every((s) => s === 201 || s === 409), String(statuses));
  assert.ok(statuses.includes(409));
  for (const r of results.filter((r) => r.status === 409)) assert.is(r.body.codigo, 'idempotencia_em_andamento');
  const count = await app.db.pool.oneFirst(sql.unsafe`SELECT count(*)::int FROM canais WHERE conta_id = ${account.contaId} AND nome = 'Concorrente'`);
  assert.is(count, 1);
});

test('Idempotency-Key: required where the route says so, at most 64 characters; a key is free again as soon as the request holding it ends', async () => {
  const missing = await post('/teste/idempotente', { nome: 'Sem chave' });
  assert.is(missing.status, 400);
  assert.ok(missing.body.erros.some((e: { campo: string }) => e.campo === 'idempotency-key'));
  const long = await post('/teste/idempotente', { nome: 'Longa' }, { 'idempotency-key': 'k'.repeat(65) });
  assert.is(long.status, 400);
  assert.is((await post('/teste/idempotente', { nome: 'Exata' }, { 'idempotency-key': 'k'.repeat(64) })).status, 201);

  // A request still running holds its key; once its transaction ends (here: its process is gone and
  // the transaction rolled back) the key is free at once, nothing to clean up.
  let release: () => void = () => undefined;
  let claimed: () => void = () => undefined;
  const taken = new Promise<void>((resolve) => (claimed = resolve));
  const held = app.db.pool.transaction(async (tx) => {
    await tx.query(sql.unsafe`SELECT * FROM api_write_claim(${account.contaId}, ${account.chaveId}, 'chave-orfa', 'teste', NULL)`);
    claimed();
    await new Promise<void>((resolve) => (release = resolve));
    throw new Error('the process died');
  }).catch(() => undefined);
  await taken;
  assert.is((await post('/teste/idempotente', { nome: 'Orfa' }, { 'idempotency-key': 'chave-orfa' })).status, 409);
  release();
  await held;
  assert.is((await post('/teste/idempotente', { nome: 'Orfa' }, { 'idempotency-key': 'chave-orfa' })).status, 201);
});

test.run();
