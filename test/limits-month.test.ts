// The month counter charged ahead in durable blocks (sql/migrations/0007_limites.sql): monthly_usage is written only when a
// block is charged, the calls made are exact, a crash can only leave calls counted that were not
// made, and the ceiling is exact whatever the blocks.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { sql, type Db } from '#shared/db/pool.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import { createAccount, createPlan, type TestAccount } from './helpers/fixtures.ts';
import { admitOnce, admitSequence } from './helpers/limits.ts';

const test = suite('limits: the month counter in durable blocks');
let db: TestDatabase;

// 3,000 calls a month: blocks of 3. Every other ceiling out of the way.
const PLANO = 'blocos';
test.before(async () => {
  db = await createTestDatabase();
  await createPlan(db.pool, PLANO, {
    chamadas_por_mes: 3000, rajada: 1_000_000, rajada_recarga_por_segundo: 1_000_000,
    leituras_por_minuto: 1_000_000, escritas_por_minuto: 1_000_000, simultaneas_por_chave: 1000, simultaneas_por_conta: 1000,
  });
});
test.after(async () => db.close());

const Month = z.object({ charged: z.number(), calls: z.number(), unspent: z.number(), xmin: z.string() });
/** monthly_usage (durable, with the advance), the calls made (the view), and the row's version. */
const month = (pool: Db, account: TestAccount) => pool.one(sql.type(Month)`
  SELECT u.calls AS charged, e.calls, e.unspent, u.xmin::text AS xmin
    FROM monthly_usage u JOIN effective_monthly_usage e USING (conta_id, month)
   WHERE u.conta_id = ${account.contaId}`);

test('a block is charged to monthly_usage once; the calls that spend it leave the durable row untouched', async () => {
  const account = await createAccount(db.pool, { plano: PLANO });
  const first = await admitSequence(db.pool, account.token, 1);
  assert.is(first[0]?.mes_r, 2999);
  const charged = await month(db.pool, account);
  assert.equal({ charged: charged.charged, calls: charged.calls, unspent: charged.unspent }, { charged: 3, calls: 1, unspent: 2 });

  const next = await admitSequence(db.pool, account.token, 2);
  assert.equal(next.map((r) => r.mes_r), [2998, 2997], 'the headers count the calls made');
  const spent = await month(db.pool, account);
  assert.equal({ charged: spent.charged, calls: spent.calls, unspent: spent.unspent }, { charged: 3, calls: 3, unspent: 0 });
  assert.is(spent.xmin, charged.xmin, 'no new version of the monthly_usage row: nothing durable written');

  await admitSequence(db.pool, account.token, 1);
  const again = await month(db.pool, account);
  assert.is(again.charged, 6, 'the next block');
  assert.is(again.calls, 4);
  assert.is.not(again.xmin, charged.xmin);
});

test('a crash forgets the advance: what was left of the block stays counted, nothing is given back', async () => {
  const account = await createAccount(db.pool, { plano: PLANO });
  await admitSequence(db.pool, account.token, 1);
  // What crash recovery does to an UNLOGGED table.
  await db.pool.query(sql.unsafe`DELETE FROM month_advances WHERE conta_id = ${account.contaId}`);
  const after = await month(db.pool, account);
  assert.equal({ charged: after.charged, calls: after.calls }, { charged: 3, calls: 3 });
  const [next] = await admitSequence(db.pool, account.token, 1);
  assert.is(next?.mes_r, 3000 - 4);
});

test('near the ceiling a block is cut to what is left: the 3,000th call admitted, the next refused', async () => {
  const account = await createAccount(db.pool, { plano: PLANO });
  await db.pool.query(sql.unsafe`
    INSERT INTO monthly_usage (conta_id, month, calls) VALUES (${account.contaId}, date_trunc('month', now() AT TIME ZONE 'UTC')::date, 2995)`);
  const results = await admitSequence(db.pool, account.token, 6);
  assert.equal(results.map((r) => r.outcome), ['ok', 'ok', 'ok', 'ok', 'ok', 'limite_excedido']);
  assert.equal(results.map((r) => r.mes_r), [4, 3, 2, 1, 0, 0]);
  assert.is(results[5]?.reason, 'mes');
  const full = await month(db.pool, account);
  assert.equal({ charged: full.charged, calls: full.calls, unspent: full.unspent }, { charged: 3000, calls: 3000, unspent: 0 });
});

test('a call that costs more than the advance charges a block of at least its cost', async () => {
  const account = await createAccount(db.pool, { plano: PLANO });
  await admitSequence(db.pool, account.token, 1);
  const [big] = await admitSequence(db.pool, account.token, 1, { custo: 5 });
  assert.is(big?.mes_r, 3000 - 6);
  const after = await month(db.pool, account);
  assert.equal({ charged: after.charged, calls: after.calls, unspent: after.unspent }, { charged: 6, calls: 6, unspent: 0 });
});

test('a refund goes back to the advance and the next calls spend it', async () => {
  const account = await createAccount(db.pool, { plano: PLANO });
  await admitSequence(db.pool, account.token, 3);
  await db.pool.query(sql.unsafe`
    SELECT api_settle(ARRAY[${account.chaveId}]::uuid[], ARRAY[${account.contaId}]::uuid[], ARRAY['leitura'],
                      ARRAY[date_trunc('minute', now())], ARRAY[date_trunc('month', now() AT TIME ZONE 'UTC')::date],
                      ARRAY[0], ARRAY[0], ARRAY[1], ARRAY[0])`);
  const refunded = await month(db.pool, account);
  assert.equal({ charged: refunded.charged, calls: refunded.calls, unspent: refunded.unspent }, { charged: 3, calls: 2, unspent: 1 });
  const ok = await admitOnce(db.pool, account.token);
  assert.is(ok.mes_r, 2997);
  assert.is((await month(db.pool, account)).xmin, refunded.xmin, 'spent from the refund, no block charged');
});

test.run();
