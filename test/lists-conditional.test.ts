// Conditional lists (issue 19, item 6): every page of every list carries an ETag, and an
// If-None-Match that names it is a 304 at the price of §8.2 (1 in the burst, a read of the minute,
// 0 in the month), so a poller that finds nothing new pays nothing against its month; a page that
// changed is charged in full before it is answered, and is a 429 when a ceiling refuses that.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { routes } from '../api/routes/index.ts';
import { criarCanal } from '#shared/db/canais.ts';
import { PERMISSAO_CUSTOS } from '#shared/domain/acesso.ts';
import { sql } from '#shared/db/pool.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { novoPedido } from './helpers/cotacoes.ts';
import { createAccount, createPlan, type TestAccount } from './helpers/fixtures.ts';
import { request } from './helpers/http.ts';
import { awayFromMinuteBoundary, minuteUsed, spendMinute } from './helpers/uso.ts';

const test = suite('conditional lists');
let app: TestApp;

test.before(async () => {
  app = await startTestApp();
  await createPlan(app.db.pool, 'listas', {
    rajada: 50, rajada_recarga_por_segundo: 1, leituras_por_minuto: 40, chamadas_por_mes: 1000, simultaneas_por_chave: 3, simultaneas_por_conta: 3,
  });
});
test.after(async () => app.stop());

const get = (account: TestAccount, path: string, headers: Record<string, string> = {}, method = 'GET') =>
  request(`${app.baseUrl}${path}`, { token: account.token, headers, method });

async function account(): Promise<TestAccount> {
  const a = await createAccount(app.db.pool, { plano: 'listas' });
  for (let i = 0; i < 3; i++) await criarCanal(app.db.pool, a.contaId, { nome: `Canal ${i}`, tipo: 'outro' });
  return a;
}

const counters = (a: TestAccount) => app.db.pool.one(sql.type(z.object({ mes: z.number(), leitura: z.number() }))`
  SELECT coalesce((SELECT calls FROM effective_monthly_usage WHERE conta_id = ${a.contaId}), 0)::int AS mes,
         ${minuteUsed(a.contaId, 'leitura')} AS leitura`);

test('every list of the route table answers with an ETag and declares its 304', () => {
  const lists = routes.filter((r) => r.method === 'GET' && r.query && 'cursor' in ((z.toJSONSchema(r.query, { io: 'input', unrepresentable: 'any' }) as { properties?: object }).properties ?? {}));
  assert.ok(lists.length >= 8, `${lists.length} lists`);
  for (const route of lists) {
    assert.ok(route.conditional && 'lista' in route.conditional, `${route.operationId} is a conditional list`);
    assert.ok(route.responses[304], `${route.operationId} declares its 304`);
  }
});

test('an unchanged page is a 304 that costs nothing in the month; a changed one a 200 charged in full', async () => {
  const a = await account();
  await awayFromMinuteBoundary(app.db.pool);
  const first = await get(a, '/canais?limite=2');
  const etag = first.headers.get('etag') ?? '';
  assert.match(etag, /^"L-[\w-]+"$/);
  await app.web.flush();
  const before = await counters(a);
  const same = await get(a, '/canais?limite=2', { 'if-none-match': etag });
  assert.equal([same.status, same.text, same.headers.get('etag')], [304, '', etag]);
  const head = await get(a, '/canais?limite=2', { 'if-none-match': `"L-outra", ${etag}` }, 'HEAD');
  assert.is(head.status, 304);
  await app.web.flush();
  const after304 = await counters(a);
  assert.equal({ mes: after304.mes - before.mes, leitura: after304.leitura - before.leitura }, { mes: 0, leitura: 2 });

  await criarCanal(app.db.pool, a.contaId, { nome: 'Novo', tipo: 'outro' });
  const second = await get(a, '/canais?limite=2&cursor=' + first.body.proximo_cursor, { 'if-none-match': etag });
  assert.is(second.status, 200, 'another page, another tag');
  const changed = await get(a, '/canais?limite=100', { 'if-none-match': etag });
  assert.equal([changed.status, changed.body.dados.length], [200, 4]);
  assert.not.equal(changed.headers.get('etag'), etag);
  await app.web.flush();
  const afterChange = await counters(a);
  assert.equal({ mes: afterChange.mes - after304.mes, leitura: afterChange.leitura - after304.leitura }, { mes: 1 + 3, leitura: 1 + 3 },
    'the next page (1) and the list of 100 (3), each in full');
});

test('at the month ceiling an unchanged page is still a 304; a changed page is a 429 without its body', async () => {
  const a = await account();
  const etag = (await get(a, '/canais')).headers.get('etag') ?? '';
  await app.db.pool.query(sql.unsafe`UPDATE monthly_usage SET calls = 1000 WHERE conta_id = ${a.contaId}`);
  await app.db.pool.query(sql.unsafe`DELETE FROM month_advances WHERE conta_id = ${a.contaId}`);
  assert.is((await get(a, '/canais')).status, 429, 'without If-None-Match: refused at admission');
  assert.is((await get(a, '/canais', { 'if-none-match': etag })).status, 304);
  await criarCanal(app.db.pool, a.contaId, { nome: 'Novo', tipo: 'outro' });
  const changed = await get(a, '/canais', { 'if-none-match': etag });
  assert.is(changed.status, 429, changed.text);
  assert.match(changed.body.detail, /mês/);
  assert.not.ok(changed.text.includes('Novo'), 'the page is not sent');
});

test('with the reads of the minute used up even a 304 is refused: its read does not fit', async () => {
  const a = await account();
  const etag = (await get(a, '/canais')).headers.get('etag') ?? '';
  await spendMinute(app.db.pool, a.contaId, 'leitura', 40);
  const res = await get(a, '/canais', { 'if-none-match': etag });
  assert.is(res.status, 429);
  assert.match(res.body.detail, /por minuto/);
});

test('a page shows its caller what its permissions allow: another representation, another tag', async () => {
  const a = await account();
  const etag = (await get(a, '/canais')).headers.get('etag') ?? '';
  const b = await account(); // the same names, another account: other ids, another page
  assert.is((await get(b, '/canais', { 'if-none-match': etag })).status, 200);

  // The same orders read without custos.ver: the page hides valor_centavos, so its tag differs.
  await novoPedido(app.db.pool, a.contaId);
  const comCustos = await get(a, '/pedidos-producao');
  assert.ok(comCustos.text.includes('valor_centavos'), comCustos.text);
  await app.db.pool.query(sql.unsafe`UPDATE usuarios SET permissoes = array_remove(permissoes, ${PERMISSAO_CUSTOS}) WHERE id = ${a.usuarioId}`);
  const semCustos = await get(a, '/pedidos-producao', { 'if-none-match': comCustos.headers.get('etag') ?? '' });
  assert.is(semCustos.status, 200, 'the tag of the page with costs names nothing here');
  assert.not.ok(semCustos.text.includes('valor_centavos'), semCustos.text);
  assert.is((await get(a, '/pedidos-producao', { 'if-none-match': semCustos.headers.get('etag') ?? '' })).status, 304);
});

test.run();
