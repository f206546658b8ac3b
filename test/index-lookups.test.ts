// The hot path's functions (admission, the Idempotency-Key's claim, a batch of movements) and the
// webhook pipeline's statements find every row by key with an index, whatever the statistics said
// when a connection first planned them. A connection plans a statement once; planned while a table
// was small, it was a sequential scan, kept as the table grew
// (docs/decisions/0015-hot-statements-planned-by-key.md).
import { randomUUID } from 'node:crypto';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { bodyHash } from '../api/writes/idempotency.ts';
import { movimentoDoLote, movimentosEmLote, type MovimentoPedido } from '#shared/db/estoque.ts';
import { gatherStatistics, PIPELINE_SESSION_SETTINGS, renewLeases, takeDeliveries, type TakeLimits, type TakenDelivery } from '#shared/db/deliveries.ts';
import { recordResults, type Outcomes } from '#shared/db/outcomes.ts';
import { relayOutbox } from '#shared/db/outbox.ts';
import { createDatabasePool, sql, type Pool } from '#shared/db/pool.ts';
import { criarProdutoCompleto, definirSaldo } from './helpers/catalogo.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import { createAccount, type TestAccount } from './helpers/fixtures.ts';
import { admitBatch } from './helpers/limits.ts';
import { plantDeliveries, plantEndpoint, plantEvents } from './helpers/planted.ts';
import { emit } from './helpers/receiver.ts';
import { capturedLog } from './helpers/log-lines.ts';
import { startStatistics } from '../worker/webhooks/statistics.ts';

const test = suite('hot-path lookups by index');
let db: TestDatabase;
/** One connection: the one whose plans are judged. */
let one: Pool;
let conta: TestAccount;
let variacao: string;
let sku: string;
let skuDoProduto: string;

test.before(async () => {
  db = await createTestDatabase();
  conta = await createAccount(db.pool);
  await db.pool.query(sql.unsafe`UPDATE planos SET rajada = 1000 WHERE id = 'farm'`);
  const produto = await criarProdutoCompleto(db.pool, conta.contaId, { variacoes: [{}] });
  variacao = produto.variacoes[0]?.id ?? '';
  sku = produto.variacoes[0]?.sku ?? '';
  skuDoProduto = produto.sku;
  await definirSaldo(db.pool, conta.contaId, variacao, 1000);
  // Statistics of small tables, as a new installation has them: a sequential scan is the cheapest
  // plan for any of them.
  await db.pool.query(sql.unsafe`ANALYZE`);
  one = await createDatabasePool(db.url, { size: 1, statementTimeoutMs: 30_000, applicationName: 'test-plans' });
});
test.after(async () => {
  await one.end();
  await db.close();
});

const TABLES = ['chaves_api', 'contas', 'usuarios', 'planos', 'rate_buckets', 'minute_windows', 'monthly_usage', 'month_advances',
  'request_slots', 'idempotency_keys', 'produtos', 'variacoes', 'locais', 'estoque_saldos', 'estoque_movimentos', 'outbox',
  'deliveries', 'delivery_attempts'];

/** Sequential scans of each table so far, with the judged connection's counts flushed first. */
async function seqScans(judged: Pool = one): Promise<Record<string, number>> {
  await judged.query(sql.unsafe`SELECT pg_stat_force_next_flush()`);
  await judged.query(sql.unsafe`SELECT 1`);
  const rows = await db.pool.any(sql.type(z.object({ relname: z.string(), seq_scan: z.number() }))`
    SELECT relname::text, seq_scan FROM pg_stat_user_tables WHERE relname = ANY (${sql.array(TABLES, 'text')})`);
  return Object.fromEntries(rows.map((r) => [r.relname, r.seq_scan]));
}

// By id, by a variation's SKU or by its product's (estoque_variacao_do_sku): every lookup by key.
const movimento = (por: { variacao_id: string } | { sku: string } = { variacao_id: variacao }): MovimentoPedido => {
  const body = { tipo: 'saida' as const, ...por, quantidade: 1, motivo: 'venda_loja' as const };
  return { ...body, contaId: conta.contaId, chaveId: conta.chaveId, chave: { key: randomUUID(), route: 'postEstoqueMovimento', hash: bodyHash(body) } };
};

/** Scans of idempotency_keys' expiry index so far (the retention's index: a key's lookup reading it reads every live key). */
async function expiryIndexScans(): Promise<number> {
  await one.query(sql.unsafe`SELECT pg_stat_force_next_flush()`);
  await one.query(sql.unsafe`SELECT 1`);
  return Number(await db.pool.oneFirst(sql.type(z.object({ idx_scan: z.number() }))`
    SELECT idx_scan::int FROM pg_stat_user_indexes WHERE indexrelname = 'idempotency_keys_expires'`));
}

test('admission and a batch of movements with their keys read no table sequentially, and find keys by their primary key', async () => {
  const before = await seqScans();
  const expiryBefore = await expiryIndexScans();
  for (let i = 0; i < 10; i++) {
    // Alone and in a batch of two (api_admit), each giving back the slots the one before took.
    const slot = { contaId: conta.contaId, chaveId: conta.chaveId };
    const [admitted] = await admitBatch(one, [{ token: conta.token, custo: 2, classe: 'escrita' }], { release: i > 0 ? [slot, slot] : [] });
    assert.is(admitted?.outcome, 'ok');
    const pair = await admitBatch(one, [{ token: conta.token }, { token: conta.token }], { release: [slot] });
    assert.equal(pair.map((r) => r.outcome), ['ok', 'ok']);
    const json = await one.oneFirst(sql.type(z.object({ j: z.string() }))`
      SELECT (${movimentosEmLote([movimento(), movimento({ sku }), movimento({ sku: skuDoProduto }), movimento()])})::text AS j`);
    const answers = JSON.parse(json) as unknown[];
    assert.ok(answers.every((a) => movimentoDoLote(a).status_code === 201));
  }
  const after = await seqScans();
  const scanned = TABLES.filter((t) => (after[t] ?? 0) > (before[t] ?? 0)).map((t) => `${t} (${(after[t] ?? 0) - (before[t] ?? 0)})`);
  assert.equal(scanned, [], `read sequentially: ${scanned.join(', ')}`);
  assert.is(await expiryIndexScans() - expiryBefore, 0, 'Idempotency-Keys looked up through the expiry index');
});

/** Index scans of each of deliveries' indexes so far, flushed as seqScans does. */
async function deliveriesIndexScans(pool: Pool): Promise<Record<string, number>> {
  await pool.query(sql.unsafe`SELECT pg_stat_force_next_flush()`);
  await pool.query(sql.unsafe`SELECT 1`);
  const rows = await db.pool.any(sql.type(z.object({ name: z.string(), idx_scan: z.number() }))`
    SELECT indexrelname::text AS name, idx_scan FROM pg_stat_user_indexes WHERE relname = 'deliveries'`);
  return Object.fromEntries(rows.map((r) => [r.name, r.idx_scan]));
}

/**
 * Twelve rounds of what a worker does to one endpoint's backlog, on one connection of its own (more
 * calls than PostgreSQL plans a statement for before it keeps a generic plan): relays a new event
 * and takes it, takes ten more, renews their leases and records their outcomes.
 */
async function workBacklog(endpointId: string): Promise<{ taken: number; scanned: string[]; byEndpoint: number; replanned: string[] }> {
  const worker = await createDatabasePool(db.url, { size: 1, statementTimeoutMs: 30_000, applicationName: 'test-pipeline', settings: PIPELINE_SESSION_SETTINGS });
  try {
    const before = await seqScans(worker);
    const indexesBefore = await deliveriesIndexScans(worker);
    const bounds = { limit: 10, scan: 40, perEndpoint: 20, endpoints: new Map<string, number>(), leaseMs: 30_000 };
    let taken = 0;
    for (let i = 0; i < 12; i++) {
      await emit(db.pool, conta.contaId, 'cotacao.criada', { objeto: 'cotacao', id: randomUUID(), codigo: 'COT-1', status: 'rascunho' });
      const relayed = await relayOutbox(worker, 500, bounds);
      const rows: TakenDelivery[] = [...relayed.taken, ...(await takeDeliveries(worker, bounds))];
      taken += rows.length;
      await renewLeases(worker, rows.map((r) => ({ contaId: r.conta_id, deliveryId: r.id, leaseId: r.lease_id })), 30_000);
      const recorded = await recordResults(worker, rows.map((r) => ({
        contaId: r.conta_id, deliveryId: r.id, leaseId: r.lease_id, endpointId: r.endpoint_id, status: 'succeeded' as const, nextAttemptAt: null, disable: null,
        attempt: { number: r.attempt, startedAt: new Date(), durationMs: 3, succeeded: true, responseStatus: 204, responseBody: null, error: null },
      })), { healthy: [{ contaId: conta.contaId, endpointId }], failing: [] });
      assert.is(recorded.size, rows.length);
    }
    const after = await seqScans(worker);
    const scanned = ['deliveries', 'delivery_attempts', 'outbox'].filter((t) => (after[t] ?? 0) > (before[t] ?? 0))
      .map((t) => `${t} (${(after[t] ?? 0) - (before[t] ?? 0)})`);
    const indexesAfter = await deliveriesIndexScans(worker);
    // PostgreSQL plans a statement for its values its first five times, then keeps the generic plan
    // unless that looks costlier: then it plans every call anew.
    const plans = await worker.any(sql.type(z.object({ name: z.string(), custom_plans: z.number() }))`
      SELECT name, custom_plans FROM pg_prepared_statements WHERE name = ANY (${sql.array(['relay_outbox', 'take_deliveries', 'renew_leases', 'record_results'], 'text')})`);
    assert.is(plans.length, 4, 'the statements are prepared by name');
    const replanned = plans.filter((p) => p.custom_plans > 5).map((p) => `${p.name} (${p.custom_plans})`);
    return { taken, scanned, byEndpoint: (indexesAfter['deliveries_endpoint'] ?? 0) - (indexesBefore['deliveries_endpoint'] ?? 0), replanned };
  } finally {
    await worker.end();
  }
}

test('the webhook pipeline takes, records and renews one endpoint\'s deliveries by their keys, however long its backlog', async () => {
  // A backlog of one endpoint. Both plans once read all of it: the take went through the
  // endpoint's index for every delivery it chose (statistics not yet gathered), and the outcomes'
  // statement read the table sequentially at the default random_page_cost (statistics gathered).
  const endpointId = await plantEndpoint(db.pool, conta, 'https://erp.example.com/hooks/backlog');
  const events = await plantEvents(db.pool, conta.contaId, { count: 3000 });
  // Retries, each with its first attempt in the log: the attempts' table is as long as the backlog.
  await plantDeliveries(db.pool, {
    contaId: conta.contaId, endpointId, eventIds: events, status: 'pending', nextAttemptAt: '-1 minute', attempts: [{ ago: '2 minutes', status: 503 }],
  });
  for (const statistics of ['not yet gathered', 'gathered']) {
    if (statistics === 'gathered') await db.pool.query(sql.unsafe`ANALYZE`);
    const { taken, scanned, byEndpoint, replanned } = await workBacklog(endpointId);
    assert.ok(taken >= 12 * 11, `statistics ${statistics}: each round takes its new event and ten of the backlog; ${taken} taken`);
    assert.equal(scanned, [], `statistics ${statistics}: read sequentially: ${scanned.join(', ')}`);
    assert.is(byEndpoint, 0, `statistics ${statistics}: deliveries found through their endpoint's index`);
    assert.equal(replanned, [], `statistics ${statistics}: planned at every call: ${replanned.join(', ')}`);
  }
});

/**
 * What the pipeline's tables were read for so far: their sequential scans, and the entries their
 * primary keys returned (a lookup by key returns a row's few versions; a join that reads the table
 * whole through its primary key returns every row). Entries of their other indexes are left out:
 * an index scan skips the entries of rows dead to every transaction, but on a busy server, while
 * some transaction still sees those rows, it reads them again.
 */
async function rowsRead(judged: Pool): Promise<Record<string, { byKey: number; seqScans: number }>> {
  await judged.query(sql.unsafe`SELECT pg_stat_force_next_flush()`);
  await judged.query(sql.unsafe`SELECT 1`);
  const rows = await db.pool.any(sql.type(z.object({ relname: z.string(), by_key: z.number(), seq_scan: z.number() }))`
    SELECT t.relname::text, coalesce(i.idx_tup_read, 0)::float8 AS by_key, t.seq_scan
      FROM pg_stat_user_tables t LEFT JOIN pg_stat_user_indexes i ON i.relid = t.relid AND i.indexrelname = t.relname || '_pkey'
     WHERE t.relname IN ('outbox', 'deliveries', 'delivery_attempts')`);
  return Object.fromEntries(rows.map((r) => [r.relname, { byKey: r.by_key, seqScans: r.seq_scan }]));
}

/** Work on a connection of its own, closed after it: what it read is counted before the measure starts. */
async function onItsOwn<T>(work: (setup: Pool) => Promise<T>): Promise<T> {
  const setup = await createDatabasePool(db.url, { size: 1, statementTimeoutMs: 30_000, applicationName: 'test-setup' });
  try {
    return await work(setup);
  } finally {
    await setup.end();
  }
}

/** Every attempt answered at once with a 204: the outcomes the worker writes with its next statement. */
const answered = (rows: readonly TakenDelivery[]): Outcomes => ({
  results: rows.map((r) => ({
    contaId: r.conta_id, deliveryId: r.id, leaseId: r.lease_id, endpointId: r.endpoint_id, status: 'succeeded' as const, nextAttemptAt: null, disable: null,
    attempt: { number: r.attempt, startedAt: new Date(), durationMs: 3, succeeded: true, responseStatus: 204, responseBody: null, error: null },
  })),
  runs: { healthy: [], failing: [] },
});

/**
 * What a worker does to a backlog of the outbox, on one connection: relay passes of 500 that take
 * what the worker's bounds allow, then takes of what is left, each statement writing the outcomes
 * of the one before; statistics gathered after the first full pass, as worker/webhooks/statistics.ts
 * does. The deliveries made.
 */
async function drainLikeAWorker(worker: Pool): Promise<number> {
  const bounds: TakeLimits = { limit: 400, scan: 120, perEndpoint: 30, endpoints: new Map(), leaseMs: 30_000 };
  let held: readonly TakenDelivery[] = [];
  let made = 0;
  for (let pass = 0; ; pass++) {
    const relayed = await relayOutbox(worker, 500, bounds, answered(held));
    made += relayed.deliveries;
    held = relayed.taken;
    if (pass === 0 && relayed.relayed === 500) await gatherStatistics(worker);
    if (relayed.relayed < 500) break;
  }
  while (held.length > 0) held = await takeDeliveries(worker, bounds, answered(held));
  return made;
}

const PIPELINE_TABLES = ['outbox', 'deliveries', 'delivery_attempts'] as const;

test('after a quiet spell, a backlog\'s drain reads no working table whole, though its plans were made while the tables were empty', async () => {
  // The archive emptied the working tables, autovacuum recorded them empty, and the worker's
  // connection planned its statements then (a relay pass, a take). Planned so, the foreign keys'
  // checks of each delivery inserted read the outbox whole, and the outcomes' statement the
  // deliveries, however long the backlog had grown.
  const quiet = await createAccount(db.pool);
  await plantEndpoint(db.pool, quiet, 'https://erp.example.com/hooks/quiet');
  await onItsOwn(async (setup) => {
    await setup.query(sql.unsafe`DELETE FROM delivery_attempts`);
    await setup.query(sql.unsafe`DELETE FROM deliveries`);
    await setup.query(sql.unsafe`DELETE FROM outbox`);
    await setup.query(sql.unsafe`VACUUM ANALYZE outbox, deliveries, delivery_attempts`);
  });
  const worker = await createDatabasePool(db.url, { size: 1, statementTimeoutMs: 30_000, applicationName: 'test-pipeline', settings: PIPELINE_SESSION_SETTINGS });
  try {
    const idle: TakeLimits = { limit: 400, scan: 120, perEndpoint: 30, endpoints: new Map(), leaseMs: 30_000 };
    for (let i = 0; i < 6; i++) {
      await relayOutbox(worker, 500, idle);
      await takeDeliveries(worker, idle);
    }
    await onItsOwn((setup) => plantEvents(setup, quiet.contaId, { count: 10_000, relayedAgo: null }));
    const before = await rowsRead(worker);
    const made = await drainLikeAWorker(worker);
    const after = await rowsRead(worker);
    assert.is(made, 10_000);
    const read = PIPELINE_TABLES.map((table) => ({
      table,
      seqScans: (after[table]?.seqScans ?? 0) - (before[table]?.seqScans ?? 0),
      perDelivery: ((after[table]?.byKey ?? 0) - (before[table]?.byKey ?? 0)) / made,
    }));
    const summary = read.map((r) => `${r.table}: ${r.seqScans} sequential scans, ${r.perDelivery.toFixed(1)} entries of its primary key per delivery`).join('; ');
    for (const r of read) {
      assert.is(r.seqScans, 0, summary);
      assert.ok(r.perDelivery < 8, summary);
    }
  } finally {
    await worker.end();
  }
});

test('right after a backlog, planned from its statistics, a relay pass of one event reads no working table whole', async () => {
  // Planned while the statistics said the outbox was a backlog, the relay read the whole outbox at
  // every pass, twice (its pending events, then to mark them), for as long as the plan lasted.
  const after = await createAccount(db.pool);
  await plantEndpoint(db.pool, after, 'https://erp.example.com/hooks/after');
  await onItsOwn(async (setup) => {
    await plantEvents(setup, after.contaId, { count: 20_000, relayedAgo: null });
    await setup.query(sql.unsafe`ANALYZE outbox, deliveries, delivery_attempts`);
  });
  const worker = await createDatabasePool(db.url, { size: 1, statementTimeoutMs: 30_000, applicationName: 'test-pipeline', settings: PIPELINE_SESSION_SETTINGS });
  try {
    await drainLikeAWorker(worker);
    const bounds: TakeLimits = { limit: 400, scan: 120, perEndpoint: 30, endpoints: new Map(), leaseMs: 30_000 };
    const before = await rowsRead(worker);
    let held: readonly TakenDelivery[] = [];
    for (let i = 0; i < 20; i++) {
      await plantEvents(worker, after.contaId, { count: 1, relayedAgo: null });
      held = (await relayOutbox(worker, 500, bounds, answered(held))).taken;
      assert.is(held.length, 1);
    }
    const read = await rowsRead(worker);
    for (const table of PIPELINE_TABLES) {
      const perPass = ((read[table]?.byKey ?? 0) - (before[table]?.byKey ?? 0)) / 20;
      assert.is((read[table]?.seqScans ?? 0) - (before[table]?.seqScans ?? 0), 0, `${table} read sequentially`);
      assert.ok(perPass < 10, `${table}: ${perPass.toFixed(1)} entries of its primary key per pass`);
    }
  } finally {
    await worker.end();
  }
});

test('a backlog has the working tables\' statistics gathered at once, by one worker at a time, and not again within the minute', async () => {
  const analyzed = async () => {
    const rows = await db.pool.any(sql.type(z.object({ relname: z.string(), n: z.number() }))`
      SELECT relname::text, analyze_count::int AS n FROM pg_stat_user_tables WHERE relname IN ('outbox', 'deliveries', 'delivery_attempts')`);
    return Object.fromEntries(rows.map((r) => [r.relname, r.n]));
  };
  const before = await analyzed();
  const { log, lines } = capturedLog();
  const statistics = startStatistics({ pool: db.pool, log });
  assert.equal([statistics.backlog(), statistics.backlog()], [true, false], 'a second backlog while the first gathers them');
  const deadline = Date.now() + 10_000;
  while (!lines.some((l) => String(l['msg']).includes('statistics gathered')) && Date.now() < deadline) await new Promise((r) => setImmediate(r));
  assert.ok(lines.some((l) => String(l['msg']).includes('statistics gathered')), JSON.stringify(lines));
  assert.is(statistics.backlog(), false, 'a backlog within the minute');
  const after = await analyzed();
  for (const table of PIPELINE_TABLES) assert.is((after[table] ?? 0) - (before[table] ?? 0), 1, `${table} analyzed`);
});

test.run();
