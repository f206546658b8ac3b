// Every number of contract §8.1: the plans the migrations seed are exactly the contract's table (kept
// here as the contract writes it, so a change to either fails here), and each ceiling that
// test/limits-ceilings.test.ts does not drive through admission is exercised at its edge for every
// plan: active keys, webhook endpoints, deliveries per hour and the burst's refill rate. Each test
// runs in a transaction that is rolled back, on the plans as seeded.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { sql, type Tx } from '#shared/db/pool.ts';
import { reserveDeliveries } from '#shared/db/deliveries.ts';
import { createTestDatabase, rolledBack, type TestDatabase } from './helpers/db.ts';
import { addKey, createAccount } from './helpers/fixtures.ts';
import { admitSequence } from './helpers/limits.ts';
import { plantEndpoint } from './helpers/planted.ts';

const test = suite('plans: every number of contract §8.1');
let db: TestDatabase;

test.before(async () => {
  db = await createTestDatabase();
});
test.after(async () => db.close());

const PLANOS = {
  bancada: {
    nome: 'Bancada', api_disponivel: true, chaves_ativas: 2, webhook_endpoints: 1, leituras_por_minuto: 30, escritas_por_minuto: 10,
    chamadas_por_mes: 50000, rajada: 5, rajada_recarga_por_segundo: 1, simultaneas_por_chave: 2, simultaneas_por_conta: 3,
    entregas_webhook_por_hora: 300,
  },
  oficina: {
    nome: 'Oficina', api_disponivel: true, chaves_ativas: 3, webhook_endpoints: 3, leituras_por_minuto: 60, escritas_por_minuto: 20,
    chamadas_por_mes: 150000, rajada: 10, rajada_recarga_por_segundo: 2, simultaneas_por_chave: 3, simultaneas_por_conta: 3,
    entregas_webhook_por_hora: 1000,
  },
  farm: {
    nome: 'Farm', api_disponivel: true, chaves_ativas: 10, webhook_endpoints: 10, leituras_por_minuto: 180, escritas_por_minuto: 60,
    chamadas_por_mes: 750000, rajada: 20, rajada_recarga_por_segundo: 5, simultaneas_por_chave: 3, simultaneas_por_conta: 3,
    entregas_webhook_por_hora: 5000,
  },
} as const;
type Plano = keyof typeof PLANOS;
const NAMES = Object.keys(PLANOS) as Plano[];

const inTx = (work: (tx: Tx) => Promise<void>) => rolledBack(db.pool, work);

/** The message of a refusal raised in the database (slonik wraps the driver's error); run it under a savepoint. */
async function refusal(work: Promise<unknown>): Promise<string> {
  try {
    await work;
  } catch (error) {
    const e = error as Error & { cause?: Error };
    return `${e.message} ${e.cause?.message ?? ''}`;
  }
  return 'no refusal';
}

test('the plans the migrations seed hold exactly the numbers of §8.1, and no other plan', async () => {
  const Plan = z.object({ id: z.string() }).catchall(z.union([z.string(), z.number(), z.boolean()]));
  const rows = await db.pool.any(sql.type(Plan)`SELECT * FROM planos ORDER BY chamadas_por_mes`);
  assert.equal(Object.fromEntries(rows.map(({ id, ...plano }) => [id, plano])), PLANOS);
});

// Contract §8.1, as the contract that was handed over writes it.
const CONTRACT_8_1 = `
| Limit | Bancada | Oficina | Farm |
| --- | --- | --- | --- |
| API and webhooks available | yes | yes | yes |
| Active API keys | 2 | 3 | 10 |
| Webhook endpoints | 1 | 3 | 10 |
| Reads per minute (account) | 30 | 60 | 180 |
| Writes per minute (account) | 10 | 20 | 60 |
| Calls per month | 50000 | 150000 | 750000 |
| Burst per key | 5, refills 1 per second | 10, refills 2 per second | 20, refills 5 per second |
| Simultaneous requests (key / account) | 2 / 3 | 3 / 3 | 3 / 3 |
| Webhook deliveries per hour | 300 | 1000 | 5000 |
`;

test("the contract's table of §8.1 holds the same numbers", () => {
  const table = CONTRACT_8_1;
  const rows = new Map(table.split('\n').filter((l) => /^\| \w/.test(l)).map((l) => {
    const [label = '', ...cells] = l.split('|').slice(1, -1).map((c) => c.trim());
    return [label, cells];
  }));
  assert.equal(rows.get('Limit'), ['Bancada', 'Oficina', 'Farm']);
  const numbers = (label: string, i: number) => [...(rows.get(label)?.[i] ?? '').matchAll(/\d+/g)].map((m) => Number(m[0]));
  const fromContract = Object.fromEntries(NAMES.map((plano, i) => {
    const [rajada, recarga] = numbers('Burst per key', i);
    const [porChave, porConta] = numbers('Simultaneous requests (key / account)', i);
    return [plano, {
      nome: rows.get('Limit')?.[i],
      api_disponivel: rows.get('API and webhooks available')?.[i] === 'yes',
      chaves_ativas: numbers('Active API keys', i)[0],
      webhook_endpoints: numbers('Webhook endpoints', i)[0],
      leituras_por_minuto: numbers('Reads per minute (account)', i)[0],
      escritas_por_minuto: numbers('Writes per minute (account)', i)[0],
      chamadas_por_mes: numbers('Calls per month', i)[0],
      rajada, rajada_recarga_por_segundo: recarga,
      simultaneas_por_chave: porChave, simultaneas_por_conta: porConta,
      entregas_webhook_por_hora: numbers('Webhook deliveries per hour', i)[0],
    }];
  }));
  assert.equal(fromContract, PLANOS);
  assert.is(rows.size, 10, 'a row the test does not know was added to §8.1');
});

for (const plano of NAMES) {
  const q = PLANOS[plano];

  test(`${plano}: ${q.chaves_ativas} active API keys, the next refused; a revoked key frees its place`, async () => {
    await inTx(async (tx) => {
      const account = await createAccount(tx, { plano });
      const keys = [account.chaveId];
      for (let i = 1; i < q.chaves_ativas; i++) keys.push((await addKey(tx, account)).chaveId);
      assert.match(await refusal(tx.transaction((t) => addKey(t, account))), `the plan allows ${q.chaves_ativas} active API keys and the account has ${q.chaves_ativas}`);
      await tx.query(sql.unsafe`UPDATE chaves_api SET revogada_em = now() WHERE conta_id = ${account.contaId} AND id = ${keys[0] ?? ''}`);
      await addKey(tx, account);
    });
  });

  test(`${plano}: ${q.webhook_endpoints} active webhook endpoints, the next refused; a disabled one frees its place`, async () => {
    await inTx(async (tx) => {
      const account = await createAccount(tx, { plano });
      const endpoints = [];
      for (let i = 0; i < q.webhook_endpoints; i++) endpoints.push(await plantEndpoint(tx, account, `https://erp.example.com/h${i}`));
      assert.match(await refusal(tx.transaction((t) => plantEndpoint(t, account))),
        `the plan allows ${q.webhook_endpoints} active webhook endpoints and the account has ${q.webhook_endpoints}`);
      await tx.query(sql.unsafe`
        UPDATE webhook_endpoints SET ativo = false, desativado_em = now(), desativado_motivo = 'operador'
         WHERE conta_id = ${account.contaId} AND id = ${endpoints[0] ?? ''}`);
      await plantEndpoint(tx, account);
    });
  });

  test(`${plano}: ${q.entregas_webhook_por_hora} webhook deliveries an hour, none more that hour, the cap whole again the next`, async () => {
    await inTx(async (tx) => {
      const account = await createAccount(tx, { plano });
      const reserve = async (n: number) => (await reserveDeliveries(tx, new Map([[account.contaId, n]]))).get(account.contaId);
      assert.is(await reserve(q.entregas_webhook_por_hora - 1), q.entregas_webhook_por_hora - 1);
      assert.is(await reserve(2), 1, 'only the last one of the hour is granted');
      assert.is(await reserve(1), 0);
      await tx.query(sql.unsafe`UPDATE webhook_hourly_usage SET hour = hour - interval '1 hour' WHERE conta_id = ${account.contaId}`);
      assert.is(await reserve(q.entregas_webhook_por_hora + 1), q.entregas_webhook_por_hora);
    });
  });

  test(`${plano}: the burst refills ${q.rajada_recarga_por_segundo} per second`, async () => {
    await inTx(async (tx) => {
      const account = await createAccount(tx, { plano });
      const drained = await admitSequence(tx, account.token, q.rajada + 1);
      assert.is(drained[q.rajada]?.reason, 'rajada');
      // One second later (moved, within the transaction's fixed clock): exactly the refill is back.
      await tx.query(sql.unsafe`UPDATE rate_buckets SET refreshed_at = refreshed_at - interval '1 second' WHERE chave_id = ${account.chaveId}`);
      const refilled = await admitSequence(tx, account.token, q.rajada_recarga_por_segundo + 1);
      assert.equal(refilled.map((r) => r.outcome), [...Array(q.rajada_recarga_por_segundo).fill('ok'), 'limite_excedido']);
      assert.is(refilled[q.rajada_recarga_por_segundo]?.reason, 'rajada');
    });
  });
}

test.run();
