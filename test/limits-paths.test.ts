// A request is decided the same alone as in a batch with other requests (sql/code/admission.sql,
// api_admit): the same decision, the same answer and the same counters afterwards. Every scenario below
// runs twice, inside one transaction (one instant of the database clock) and between savepoints: each
// call alone, then each call in a batch between an unknown key's request and a bystander account's;
// the two runs are compared whole.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { sql, type Tx } from '#shared/db/pool.ts';
import type { Prova } from '../api/admission/admission-row.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import { admitBatch, type BatchItem } from './helpers/limits.ts';
import { addKey, createAccount, createPlan, type TestAccount } from './helpers/fixtures.ts';

const test = suite('limits: one request alone and in a batch, the same decision');
let db: TestDatabase;
/** An account of its own, whose requests share the batches of the 'many' path. */
let bystander: TestAccount;

test.before(async () => {
  db = await createTestDatabase();
  // Small ceilings everywhere, so a few calls reach each of them.
  await createPlan(db.pool, 'caminhos', {
    rajada: 6, rajada_recarga_por_segundo: 1, leituras_por_minuto: 5, escritas_por_minuto: 3,
    chamadas_por_mes: 4000, simultaneas_por_chave: 2, simultaneas_por_conta: 3, chaves_ativas: 5,
  });
  bystander = await createAccount(db.pool);
});
test.after(async () => db.close());

type Path = 'one' | 'many';
type Call = {
  token: string;
  custo?: number;
  custoMes?: number;
  classe?: 'leitura' | 'escrita';
  escopo?: string | null;
  permissao?: string | null;
  holder?: string;
  release?: { contaId: string; chaveId: string }[];
  prova?: Prova;
};

async function admit(tx: Tx, path: Path, call: Call): Promise<unknown> {
  const item: BatchItem = {
    token: call.token, custo: call.custo ?? 1, custoMes: call.custoMes ?? null, classe: call.classe ?? 'leitura',
    escopo: call.escopo ?? null, permissao: call.permissao ?? null, prova: call.prova ?? null,
  };
  const options = { holder: call.holder ?? 'test', release: call.release ?? [] };
  if (path === 'one') return (await admitBatch(tx, [item], options))[0];
  const unknown: BatchItem = { token: 'pft_ninguem' };
  return (await admitBatch(tx, [unknown, item, { token: bystander.token }], options))[1];
}

/** Every counter and key state admission writes, for the accounts given. */
async function state(tx: Tx, contas: string[]): Promise<unknown> {
  const ids = sql.array(contas, 'uuid');
  return tx.oneFirst(sql.type(z.object({ s: z.unknown() }))`
    SELECT json_build_object(
      'buckets', (SELECT json_agg(b ORDER BY chave_id) FROM rate_buckets b WHERE conta_id = ANY (${ids})),
      'minutes', (SELECT json_agg(w ORDER BY conta_id, classe) FROM minute_windows w WHERE conta_id = ANY (${ids})),
      'month', (SELECT json_agg(u ORDER BY conta_id) FROM monthly_usage u WHERE conta_id = ANY (${ids})),
      'advances', (SELECT json_agg(a ORDER BY conta_id) FROM month_advances a WHERE conta_id = ANY (${ids})),
      'slots', (SELECT json_agg(json_build_object('holder', holder, 'chave_id', chave_id, 'in_flight', in_flight,
                                                  'live', expires_at > now()) ORDER BY holder, chave_id)
                  FROM request_slots WHERE conta_id = ANY (${ids}) AND (in_flight > 0 OR expires_at > now())),
      'keys', (SELECT json_agg(json_build_object('id', id, 'recusas', recusas_consecutivas, 'suspensa', suspensa_ate,
                                                 'uso', ultimo_uso_em) ORDER BY id) FROM chaves_api WHERE conta_id = ANY (${ids})),
      'emails', (SELECT count(*) FROM outgoing_emails WHERE conta_id = ANY (${ids}))) AS s`);
}

type Scenario = (tx: Tx) => Promise<{ calls: (Call | ((tx: Tx) => Promise<void>))[]; contas: string[] }>;

/** Runs a scenario through each path between savepoints of one transaction; both runs compared. */
/** Runs a scenario through both paths and compares them; answers what they answered. */
async function samePaths(scenario: Scenario): Promise<unknown[]> {
  class Rollback extends Error {}
  let answers: unknown[] = [];
  await db.pool.transaction(async (tx) => {
    const { calls, contas } = await scenario(tx);
    const runs: Record<Path, { answers: unknown[]; after: unknown }> = {} as never;
    for (const path of ['one', 'many'] as const) {
      await tx.query(sql.unsafe`SAVEPOINT paths`);
      const answers: unknown[] = [];
      for (const call of calls) {
        if (typeof call === 'function') await call(tx);
        else answers.push(await admit(tx, path, call));
      }
      runs[path] = { answers, after: await state(tx, contas) };
      await tx.query(sql.unsafe`ROLLBACK TO SAVEPOINT paths`);
    }
    assert.equal(runs.one.answers, runs.many.answers, 'the same answers');
    assert.equal(runs.one.after, runs.many.after, 'the same counters afterwards');
    assert.ok(runs.one.answers.length > 0);
    answers = runs.one.answers;
    throw new Rollback();
  }).catch((error: unknown) => {
    if (!(error instanceof Rollback)) throw error;
  });
  return answers;
}

const seq = (account: TestAccount, n: number, call: Partial<Call> = {}): Call[] =>
  Array.from({ length: n }, () => ({ token: account.token, ...call }));
const released = (account: TestAccount) => [{ contaId: account.contaId, chaveId: account.chaveId }];

test('the burst, the minute of each class and the month through their ceilings', async () => {
  await samePaths(async (tx) => {
    const a = await createAccount(tx, { plano: 'caminhos' });
    await tx.query(sql.unsafe`
      INSERT INTO monthly_usage (conta_id, month, calls) VALUES (${a.contaId}, date_trunc('month', now() AT TIME ZONE 'UTC')::date, 3990)`);
    return {
      contas: [a.contaId],
      calls: [
        ...seq(a, 1), ...seq(a, 3, { release: released(a) }), ...seq(a, 2, { classe: 'escrita', release: released(a) }),
        ...seq(a, 2, { classe: 'escrita', custo: 2, release: released(a) }), ...seq(a, 3, { custo: 9, release: released(a) }),
      ],
    };
  });
});

test('the month through blocks, refunds and a hand-set counter', async () => {
  await samePaths(async (tx) => {
    const a = await createAccount(tx, { plano: 'caminhos' });
    await tx.query(sql.unsafe`UPDATE planos SET rajada = 1000, leituras_por_minuto = 1000 WHERE id = 'caminhos'`);
    const refund = async (t: Tx) => {
      await t.query(sql.unsafe`
        SELECT api_settle(ARRAY[${a.chaveId}]::uuid[], ARRAY[${a.contaId}]::uuid[], ARRAY['leitura'],
                          ARRAY[date_trunc('minute', now())], ARRAY[date_trunc('month', now() AT TIME ZONE 'UTC')::date],
                          ARRAY[0], ARRAY[0], ARRAY[2], ARRAY[0])`);
    };
    const byHand = async (t: Tx) => {
      await t.query(sql.unsafe`UPDATE monthly_usage SET calls = 3995 WHERE conta_id = ${a.contaId}`);
    };
    return {
      contas: [a.contaId],
      calls: [...seq(a, 3, { release: released(a) }), refund, ...seq(a, 4, { release: released(a) }), byHand,
        ...seq(a, 7, { release: released(a) })],
    };
  });
});

test('slots per key and per account, with releases of this and other keys and accounts', async () => {
  await samePaths(async (tx) => {
    const a = await createAccount(tx, { plano: 'caminhos' });
    const b = await createAccount(tx, { plano: 'caminhos' });
    const a2 = { ...a, ...(await addKey(tx, a)) };
    const expire = async (t: Tx) => {
      await t.query(sql.unsafe`UPDATE request_slots SET expires_at = now() - interval '1 second' WHERE holder = 'dead'`);
    };
    return {
      contas: [a.contaId, b.contaId],
      calls: [
        ...seq(a, 3), ...seq(a2, 2), ...seq(b, 1), { token: a.token, release: released(b) },
        { token: a.token, release: [...released(a), ...released(a2)] }, { token: b.token, release: released(a) },
        { token: a.token, holder: 'dead' }, expire, ...seq(a, 2, { holder: 'dead' }),
        { token: 'pft_revogada_ou_inexistente', release: released(a2) },
      ],
    };
  });
});

test('twenty refusals in a row suspend the key and e-mail its creator; an expired suspension is forgotten', async () => {
  await samePaths(async (tx) => {
    const a = await createAccount(tx, { plano: 'caminhos' });
    const lift = async (t: Tx) => {
      await t.query(sql.unsafe`UPDATE chaves_api SET suspensa_ate = now() - interval '1 second' WHERE id = ${a.chaveId}`);
    };
    return { contas: [a.contaId], calls: [...seq(a, 6), ...seq(a, 20), ...seq(a, 2), lift, ...seq(a, 1, { release: released(a) })] };
  });
});

test('repetitions known before charging: a completed Idempotency-Key on its path, an ETag of the current version', async () => {
  const answers = await samePaths(async (tx) => {
    const a = await createAccount(tx, { plano: 'caminhos' });
    await tx.query(sql.unsafe`UPDATE planos SET rajada = 1000, leituras_por_minuto = 1000, escritas_por_minuto = 1000 WHERE id = 'caminhos'`);
    await tx.query(sql.unsafe`
      INSERT INTO monthly_usage (conta_id, month, calls) VALUES (${a.contaId}, date_trunc('month', now() AT TIME ZONE 'UTC')::date, 3996)`);
    await tx.query(sql.unsafe`
      INSERT INTO idempotency_keys (conta_id, chave_id, key, route, request_hash, status_code)
      VALUES (${a.contaId}, ${a.chaveId}, 'feita', 'POST /cotacoes', sha256('x'), 201)`);
    const produto = await tx.oneFirst(sql.type(z.object({ id: z.string() }))`
      INSERT INTO produtos (conta_id, sku, nome) VALUES (${a.contaId}, 'VASO', 'Vaso') RETURNING id`);
    const write = (prova: Prova): Call => ({ token: a.token, custo: 5, classe: 'escrita', prova, release: released(a) });
    const read = (versoes: number[]): Call => ({ token: a.token, prova: { tabela: 'produtos', id: produto, versoes }, release: released(a) });
    return {
      contas: [a.contaId],
      calls: [
        write({ chave: 'feita', rota: 'POST /cotacoes' }), write({ chave: 'feita', rota: 'POST /pedidos-producao' }),
        write({ chave: 'nova', rota: 'POST /cotacoes' }), read([1]), read([7, 1]), read([]), read([2]),
        { token: a.token, release: released(a) }, { token: a.token, release: released(a) }, write({ chave: 'feita', rota: 'POST /cotacoes' }),
        // Past the month's ceiling (a plan lowered by hand), a repetition still costs nothing there.
        async (t: Tx) => void (await t.query(sql.unsafe`UPDATE monthly_usage SET calls = 4100 WHERE conta_id = ${a.contaId}`)),
        write({ chave: 'feita', rota: 'POST /cotacoes' }), read([1]),
      ],
    };
  });
  // 3996 of 4000 used: each repetition costs 0 in the month; the others 1, or 5 for a write.
  assert.equal((answers as { outcome: string; reason: string | null; repeticao: boolean; mes_r: number }[]).map((r) => [r.outcome, r.reason, r.repeticao, r.mes_r]), [
    ['ok', null, true, 4], ['limite_excedido', 'mes', false, 4], ['limite_excedido', 'mes', false, 4],
    ['ok', null, true, 4], ['ok', null, true, 4], ['ok', null, true, 4], ['ok', null, false, 3],
    ['ok', null, false, 2], ['ok', null, false, 1], ['ok', null, true, 1],
    ['ok', null, true, 0], ['ok', null, true, 0],
  ]);
});

test('refusals before the counters: scope, permission, blocked account, module off, API off, revoked key', async () => {
  await samePaths(async (tx) => {
    const a = await createAccount(tx, { plano: 'caminhos', escopos: ['catalogo:ler'], permissoes: ['produtos.ver'] });
    const set = (change: ReturnType<typeof sql.unsafe>) => async (t: Tx) => void (await t.query(change));
    return {
      contas: [a.contaId],
      calls: [
        { token: a.token, escopo: 'estoque:ler' }, { token: a.token, permissao: 'estoque_produtos.ver' },
        { token: a.token, escopo: 'catalogo:ler', permissao: 'produtos.ver' },
        set(sql.unsafe`UPDATE platform SET api_enabled = false`), { token: a.token }, set(sql.unsafe`UPDATE platform SET api_enabled = true`),
        set(sql.unsafe`UPDATE contas SET api_ativa = false WHERE id = ${a.contaId}`), { token: a.token },
        set(sql.unsafe`UPDATE contas SET api_ativa = true, bloqueada = true WHERE id = ${a.contaId}`), { token: a.token },
        set(sql.unsafe`UPDATE contas SET bloqueada = false WHERE id = ${a.contaId}`),
        set(sql.unsafe`UPDATE chaves_api SET revogada_em = now() WHERE id = ${a.chaveId}`), { token: a.token, release: released(a) },
      ],
    };
  });
});

test.run();
