// Every ceiling of contract §8.1 for every plan: the q-th call is admitted, the (q+1)-th refused.
// Admission is driven exactly as the pipeline drives it, inside one transaction so the database
// clock stands still (no refill between calls); each test rolls back.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { sql, type Tx } from '#shared/db/pool.ts';
import { createTestDatabase, rolledBack as rollBack, type TestDatabase } from './helpers/db.ts';
import { addKey, createAccount } from './helpers/fixtures.ts';
import { admitOnce, admitSequence, raisePlan } from './helpers/limits.ts';

const test = suite('limits: every ceiling of every plan');
let db: TestDatabase;

test.before(async () => {
  db = await createTestDatabase();
});
test.after(async () => db.close());

const rolledBack = (work: (tx: Tx) => Promise<void>) => rollBack(db.pool, work);

const PLANOS = {
  bancada: { rajada: 5, leituras: 30, escritas: 10, mes: 50000, chave: 2, conta: 3 },
  oficina: { rajada: 10, leituras: 60, escritas: 20, mes: 150000, chave: 3, conta: 3 },
  farm: { rajada: 20, leituras: 180, escritas: 60, mes: 750000, chave: 3, conta: 3 },
} as const;
const HUGE = 1_000_000;

for (const [plano, q] of Object.entries(PLANOS)) {
  test(`${plano}: the burst admits ${q.rajada} calls at one instant and refuses the next`, async () => {
    await rolledBack(async (tx) => {
      const account = await createAccount(tx, { plano });
      await raisePlan(tx, plano, { leituras_por_minuto: HUGE });
      const results = await admitSequence(tx, account.token, q.rajada + 1);
      assert.equal(results.slice(0, q.rajada).map((r) => r.outcome), Array(q.rajada).fill('ok'));
      assert.is(results[q.rajada]?.outcome, 'limite_excedido');
      assert.is(results[q.rajada]?.reason, 'rajada');
    });
  });

  test(`${plano}: reads per minute admit ${q.leituras} and refuse the next`, async () => {
    await rolledBack(async (tx) => {
      const account = await createAccount(tx, { plano });
      await raisePlan(tx, plano, { rajada: HUGE });
      const results = await admitSequence(tx, account.token, q.leituras + 1);
      assert.is(results.filter((r) => r.outcome === 'ok').length, q.leituras);
      assert.is(results[q.leituras]?.reason, 'minuto');
    });
  });

  test(`${plano}: writes per minute admit ${q.escritas} and refuse the next, apart from reads`, async () => {
    await rolledBack(async (tx) => {
      const account = await createAccount(tx, { plano });
      await raisePlan(tx, plano, { rajada: HUGE });
      const writes = await admitSequence(tx, account.token, q.escritas + 1, { classe: 'escrita' });
      assert.is(writes.filter((r) => r.outcome === 'ok').length, q.escritas);
      assert.is(writes[q.escritas]?.reason, 'minuto');
      const read = await admitSequence(tx, account.token, 1, { classe: 'leitura' });
      assert.is(read[0]?.outcome, 'ok', 'reads have their own counter');
    });
  });

  test(`${plano}: the month admits call ${q.mes} and refuses call ${q.mes + 1}`, async () => {
    await rolledBack(async (tx) => {
      const account = await createAccount(tx, { plano });
      await tx.query(sql.unsafe`
        INSERT INTO monthly_usage (conta_id, month, calls)
        VALUES (${account.contaId}, date_trunc('month', now() AT TIME ZONE 'UTC')::date, ${q.mes - 1})`);
      const results = await admitSequence(tx, account.token, 2);
      assert.is(results[0]?.outcome, 'ok');
      assert.is(results[0]?.mes_r, 0);
      assert.is(results[1]?.reason, 'mes');
    });
  });

  test(`${plano}: a key holds ${q.chave} simultaneous requests and the account ${q.conta}`, async () => {
    await rolledBack(async (tx) => {
      const account = await createAccount(tx, { plano });
      await raisePlan(tx, plano, { rajada: HUGE, leituras_por_minuto: HUGE });
      const held = [];
      for (let i = 0; i < q.chave; i++) held.push(await admitOnce(tx, account.token));
      assert.ok(held.every((r) => r.outcome === 'ok'));
      const refused = await admitOnce(tx, account.token);
      assert.is(refused.reason, 'simultaneas');
      const released = await admitOnce(tx, account.token, { release: [account.chaveId] });
      assert.is(released.outcome, 'ok', 'a released slot is free again');

      // The account's ceiling counts every key of the account.
      await raisePlan(tx, plano, { simultaneas_por_chave: 1 });
      await tx.query(sql.unsafe`DELETE FROM request_slots WHERE conta_id = ${account.contaId}`);
      const keys = [account.token];
      for (let i = 1; i <= q.conta; i++) {
        await tx.query(sql.unsafe`UPDATE planos SET chaves_ativas = 20 WHERE id = ${plano}`);
        keys.push((await addKey(tx, account)).token);
      }
      const outcomes = [];
      for (const token of keys) outcomes.push((await admitOnce(tx, token)).outcome);
      assert.is(outcomes.filter((o) => o === 'ok').length, q.conta);
    });
  });
}

test('a cost larger than one unit is charged whole to every counter', async () => {
  await rolledBack(async (tx) => {
    const account = await createAccount(tx, { plano: 'oficina' });
    const first = await admitOnce(tx, account.token, { custo: 3 });
    assert.is(first.rajada_r, 7);
    assert.is(first.minuto_r, 57);
    assert.is(first.mes_r, 150000 - 3);
    await tx.query(sql.unsafe`DELETE FROM request_slots WHERE conta_id = ${account.contaId}`);
    const second = await admitOnce(tx, account.token, { custo: 5 });
    assert.is(second.rajada_r, 2);
    await tx.query(sql.unsafe`DELETE FROM request_slots WHERE conta_id = ${account.contaId}`);
    const third = await admitOnce(tx, account.token, { custo: 3 });
    assert.is(third.reason, 'rajada', 'two tokens left do not pay for three');
  });
});

test('the burst refills at the plan rate as time passes (moved, not waited)', async () => {
  const account = await createAccount(db.pool, { plano: 'oficina' });
  await db.pool.transaction(async (tx) => {
    const results = await admitSequence(tx, account.token, 11);
    assert.is(results[10]?.reason, 'rajada');
    assert.is(results[10]?.retry_after, 1, 'one token comes back in half a second: Retry-After rounds up');
  });
  // Three seconds later at 2 tokens per second: six calls pass, the seventh does not.
  await db.pool.query(sql.unsafe`UPDATE rate_buckets SET refreshed_at = refreshed_at - interval '3 seconds' WHERE chave_id = ${account.chaveId}`);
  await db.pool.transaction(async (tx) => {
    const results = await admitSequence(tx, account.token, 7);
    assert.is(results.filter((r) => r.outcome === 'ok').length, 6);
    assert.is(results[6]?.reason, 'rajada');
  });
});

test('waiting exactly Retry-After is enough for each limit', async () => {
  const account = await createAccount(db.pool, { plano: 'bancada' });
  let refusal = (await db.pool.transaction((tx) => admitSequence(tx, account.token, 6)))[5];
  assert.is(refusal?.reason, 'rajada');
  await db.pool.query(sql.unsafe`
    UPDATE rate_buckets SET refreshed_at = refreshed_at - make_interval(secs => ${refusal?.retry_after ?? 0}) WHERE chave_id = ${account.chaveId}`);
  assert.is((await admitOnce(db.pool, account.token)).outcome, 'ok', 'burst');

  await db.pool.query(sql.unsafe`DELETE FROM request_slots WHERE conta_id = ${account.contaId}`);
  await raisePlan(db.pool, 'bancada', { rajada: HUGE });
  await db.pool.query(sql.unsafe`DELETE FROM rate_buckets WHERE chave_id = ${account.chaveId}`);
  await db.pool.query(sql.unsafe`UPDATE minute_windows SET used = 30 WHERE conta_id = ${account.contaId}`);
  refusal = await admitOnce(db.pool, account.token);
  assert.is(refusal.reason, 'minuto');
  assert.ok((refusal.retry_after ?? 0) >= 1 && (refusal.retry_after ?? 0) <= 60);
  // The window it pointed to has passed: the minute counter starts again.
  await db.pool.query(sql.unsafe`
    UPDATE minute_windows SET window_start = window_start - make_interval(secs => ${refusal.retry_after ?? 0}) WHERE conta_id = ${account.contaId}`);
  assert.is((await admitOnce(db.pool, account.token)).outcome, 'ok', 'minute');
  await raisePlan(db.pool, 'bancada', { rajada: 5 });
});

test('the month rolls over on the first day of the next month (UTC)', async () => {
  const account = await createAccount(db.pool, { plano: 'bancada' });
  await db.pool.query(sql.unsafe`
    INSERT INTO monthly_usage (conta_id, month, calls) VALUES (${account.contaId}, date_trunc('month', now() AT TIME ZONE 'UTC')::date, 50000)`);
  const refused = await admitOnce(db.pool, account.token);
  assert.is(refused.reason, 'mes');
  const expected = await db.pool.oneFirst(sql.unsafe`
    SELECT ceil(extract(epoch FROM (date_trunc('month', now() AT TIME ZONE 'UTC') + interval '1 month') AT TIME ZONE 'UTC' - now()))::int`);
  assert.ok(Math.abs((refused.retry_after ?? 0) - Number(expected)) <= 1, 'Retry-After points at the next month');
  // That month is now the previous one: the new month starts from zero.
  await db.pool.query(sql.unsafe`UPDATE monthly_usage SET month = (month - interval '1 month')::date WHERE conta_id = ${account.contaId}`);
  const admitted = await admitOnce(db.pool, account.token);
  assert.is(admitted.outcome, 'ok');
  assert.is(admitted.mes_r, 50000 - 1);
});

test('the slots of a process that died free themselves within 30 s; a live process renews its own', async () => {
  const account = await createAccount(db.pool, { plano: 'bancada' });
  for (let i = 0; i < 2; i++) assert.is((await admitOnce(db.pool, account.token, { holder: 'dead' })).outcome, 'ok');
  assert.is((await admitOnce(db.pool, account.token)).reason, 'simultaneas');
  const ttl = await db.pool.oneFirst(sql.unsafe`
    SELECT max(extract(epoch FROM expires_at - now()))::int FROM request_slots WHERE holder = 'dead'`);
  assert.ok(Number(ttl) <= 30);
  await db.pool.query(sql.unsafe`UPDATE request_slots SET expires_at = expires_at - interval '30 seconds' WHERE holder = 'dead'`);
  assert.is((await admitOnce(db.pool, account.token)).outcome, 'ok');
});

test('a refusal changes no counter and a refused key is charged nothing', async () => {
  const account = await createAccount(db.pool, { plano: 'bancada' });
  await db.pool.query(sql.unsafe`
    INSERT INTO monthly_usage (conta_id, month, calls) VALUES (${account.contaId}, date_trunc('month', now() AT TIME ZONE 'UTC')::date, 50000)`);
  for (let i = 0; i < 3; i++) assert.is((await admitOnce(db.pool, account.token)).reason, 'mes');
  const used = await db.pool.oneFirst(sql.unsafe`SELECT calls FROM effective_monthly_usage WHERE conta_id = ${account.contaId}`);
  assert.is(used, 50000);
  const slots = await db.pool.oneFirst(sql.unsafe`SELECT count(*)::int FROM request_slots WHERE conta_id = ${account.contaId}`);
  assert.is(slots, 0);
});

test.run();
