// A 304 and an idempotent repetition at each ceiling (contract §8.2: 1 in the burst, 0 in the
// month, counted as a read). Admission knows them before it charges (api/http/repetition.ts), so at the
// month ceiling, or with the writes of the minute used up, or with fewer tokens than the write
// costs, a client still gets its 304 or its replay; where the repetition's own price does not fit
// (an empty burst, the reads of the minute, every slot taken) it is a 429 like any request.
import { randomUUID } from 'node:crypto';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { sql } from '#shared/db/pool.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { criarProdutoCompleto } from './helpers/catalogo.ts';
import { createAccount, createPlan, type TestAccount } from './helpers/fixtures.ts';
import { request, type TestResponse } from './helpers/http.ts';
import { awayFromMinuteBoundary, minuteUsed, spendMinute } from './helpers/uso.ts';

const test = suite('limits: 304s and repetitions at every ceiling');
let app: TestApp;

test.before(async () => {
  app = await startTestApp();
  // Ceilings a test reaches in a few calls; the burst refills slowly enough to stay where it is put.
  await createPlan(app.db.pool, 'repeticoes', {
    rajada: 20, rajada_recarga_por_segundo: 1, leituras_por_minuto: 50, escritas_por_minuto: 10,
    chamadas_por_mes: 1000, simultaneas_por_chave: 3, simultaneas_por_conta: 3,
  });
});
test.after(async () => app.stop());

type Conta = TestAccount & { produto: string; etag: string; chave: string; quotation: unknown };

/** An account with a product whose ETag it holds, and a quotation created under an Idempotency-Key. */
async function conta(): Promise<Conta> {
  const account = await createAccount(app.db.pool, { plano: 'repeticoes' });
  const produto = (await criarProdutoCompleto(app.db.pool, account.contaId)).produtoId;
  const etag = (await get(account, `/produtos/${produto}`)).headers.get('etag') ?? '';
  const chave = randomUUID();
  const quotation = { cliente_nome: 'Zé', itens: [{ tipo: 'avulso', nome: 'Peça', quantidade: 1, preco_unitario_centavos: 100 }] };
  assert.is((await criar(account, chave, quotation)).status, 201);
  return { ...account, produto, etag, chave, quotation };
}

const get = (account: TestAccount, path: string, headers: Record<string, string> = {}) =>
  request(`${app.baseUrl}${path}`, { token: account.token, headers });
const criar = (account: TestAccount, chave: string, body: unknown) =>
  request(`${app.baseUrl}/cotacoes`, { token: account.token, body, headers: { 'idempotency-key': chave } });
const conditional = (c: Conta) => get(c, `/produtos/${c.produto}`, { 'if-none-match': c.etag });
const replay = (c: Conta) => criar(c, c.chave, c.quotation);

const counters = (c: TestAccount) => app.db.pool.one(sql.type(z.object({ mes: z.number(), leitura: z.number(), escrita: z.number() }))`
  SELECT coalesce((SELECT calls FROM effective_monthly_usage WHERE conta_id = ${c.contaId}), 0)::int AS mes,
         ${minuteUsed(c.contaId, 'leitura')} AS leitura,
         ${minuteUsed(c.contaId, 'escrita')} AS escrita`);

function limited(res: TestResponse, limite: RegExp) {
  assert.is(res.status, 429, res.text);
  assert.match(res.body.detail, limite);
}

test('at the month ceiling: the 304 and the replay are served, and the month does not move', async () => {
  const c = await conta();
  await awayFromMinuteBoundary(app.db.pool);
  await app.db.pool.query(sql.unsafe`UPDATE monthly_usage SET calls = 1000 WHERE conta_id = ${c.contaId}`);
  await app.db.pool.query(sql.unsafe`DELETE FROM month_advances WHERE conta_id = ${c.contaId}`);
  limited(await get(c, `/produtos/${c.produto}`), /mês/);
  // The current version with a digest this service did not make names nothing: charged in full.
  const version = c.etag.slice(1, c.etag.indexOf('-'));
  limited(await get(c, `/produtos/${c.produto}`, { 'if-none-match': `"${version}-inventado", "${version}-${'x'.repeat(22)}"` }), /mês/);
  limited(await criar(c, randomUUID(), c.quotation), /mês/);
  const before = await counters(c);
  assert.is((await conditional(c)).status, 304);
  assert.is((await get(c, `/produtos/${c.produto}`, { 'if-none-match': '*' })).status, 304);
  const again = await replay(c);
  assert.equal([again.status, again.headers.get('idempotent-replayed')], [201, 'true'], again.text);
  const after = await counters(c);
  assert.equal({ mes: after.mes, leitura: after.leitura - before.leitura }, { mes: before.mes, leitura: 3 }, 'three reads, nothing in the month');
});

test('with the writes of the minute used up: the replay counts as a read and is served', async () => {
  const c = await conta();
  await spendMinute(app.db.pool, c.contaId, 'escrita', 10);
  limited(await criar(c, randomUUID(), c.quotation), /por minuto/);
  const again = await replay(c);
  assert.equal([again.status, again.headers.get('idempotent-replayed')], [201, 'true'], again.text);
});

test('with fewer burst tokens than the write costs: the replay takes one and is served; an empty burst refuses even a 304', async () => {
  const c = await conta();
  await app.db.pool.query(sql.unsafe`UPDATE rate_buckets SET tokens = 1.5, refreshed_at = now() WHERE chave_id = ${c.chaveId}`);
  limited(await criar(c, randomUUID(), c.quotation), /rajada/);
  const again = await replay(c);
  assert.equal([again.status, again.headers.get('idempotent-replayed')], [201, 'true'], again.text);
  await app.db.pool.query(sql.unsafe`UPDATE rate_buckets SET tokens = 0, refreshed_at = now() WHERE chave_id = ${c.chaveId}`);
  limited(await conditional(c), /rajada/);
});

test('with the reads of the minute used up, or every slot taken, a 304 is refused like any request', async () => {
  const c = await conta();
  await spendMinute(app.db.pool, c.contaId, 'leitura', 50);
  limited(await conditional(c), /por minuto/);
  const d = await conta();
  await app.db.pool.query(sql.unsafe`
    INSERT INTO request_slots (holder, chave_id, conta_id, in_flight, expires_at)
    VALUES ('outro-processo', ${d.chaveId}, ${d.contaId}, 3, now() + interval '1 minute')`);
  limited(await conditional(d), /simultâneas/);
});

test('a tag of an old version, or a key not yet used, is charged in full', async () => {
  const c = await conta();
  await awayFromMinuteBoundary(app.db.pool);
  await app.db.pool.query(sql.unsafe`UPDATE produtos SET ativo = NOT ativo WHERE id = ${c.produto}`);
  const before = await counters(c);
  const changed = await conditional(c); // the tag it holds is of the version before
  assert.equal([changed.status, changed.headers.get('etag') === c.etag], [200, false]);
  assert.is((await criar(c, randomUUID(), c.quotation)).status, 201);
  await app.web.flush();
  const after = await counters(c);
  assert.equal({ mes: after.mes - before.mes, escrita: after.escrita - before.escrita }, { mes: 1 + 5, escrita: 5 });
});

test.run();
