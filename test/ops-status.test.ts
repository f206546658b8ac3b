// `npm run ops -- status` (ops/status/): on a seeded database, what it reports matches the request
// log, the pipeline's tables and the operator views it reads; the text screen shows those numbers;
// --watch redraws; --json and the text come from a real process too.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { sql, type Tx } from '#shared/db/pool.ts';
import { MINUTES, readSnapshot } from '../ops/status/snapshot.ts';
import { renderStatus, sparkline, watchStatus } from '../ops/status/render.ts';
import { createTestDatabase, rolledBack, type TestDatabase } from './helpers/db.ts';
import { addKey, createAccount, type TestAccount } from './helpers/fixtures.ts';
import { spawnOps } from './helpers/ops.ts';
import { plantDeliveries, plantEndpoint, plantEvents, plantRequests } from './helpers/planted.ts';

const test = suite('ops status');
let db: TestDatabase;
let conta: TestAccount;

test.before(async () => {
  db = await createTestDatabase();
  conta = await createAccount(db.pool);
});
test.after(async () => db.close());

/** Seeds one account's traffic inside `tx` (its clock stands still, so every minute is known). */
async function seed(tx: Tx) {
  await plantRequests(tx, { contaId: conta.contaId, count: 3, ago: '0 seconds' });
  await plantRequests(tx, { contaId: conta.contaId, count: 2, ago: '2 minutes', status: 429, codigo: 'limite_excedido', refusedBy: 'minuto' });
  await plantRequests(tx, { contaId: conta.contaId, count: 1, ago: '2 minutes', status: 429, codigo: 'limite_excedido', refusedBy: 'mes' });
  await plantRequests(tx, { contaId: null, count: 1, ago: '5 minutes', status: 401, codigo: 'nao_autenticado', refusedBy: 'nao_autenticado' });
  await plantRequests(tx, { contaId: conta.contaId, count: 7, ago: `${MINUTES + 5} minutes` });
  const endpoint = await plantEndpoint(tx, conta);
  await tx.query(sql.unsafe`UPDATE webhook_endpoints SET falhando_desde = now() - interval '2 hours' WHERE id = ${endpoint}`);
  const events = await plantEvents(tx, conta.contaId, { count: 3 });
  await plantEvents(tx, conta.contaId, { count: 4, criadoAgo: '3 minutes', relayedAgo: null });
  await plantDeliveries(tx, { contaId: conta.contaId, endpointId: endpoint, eventIds: events.slice(0, 2), status: 'succeeded', attempts: [{ ago: '1 minute', status: 200 }] });
  await plantDeliveries(tx, { contaId: conta.contaId, endpointId: endpoint, eventIds: events.slice(2), status: 'pending', nextAttemptAt: '-1 minute', attempts: [{ ago: '4 minutes', status: 500 }] });
  const suspensa = await addKey(tx, conta);
  await tx.query(sql.unsafe`UPDATE chaves_api SET suspensa_ate = now() + interval '10 minutes' WHERE id = ${suspensa.chaveId}`);
  return { endpoint, suspensa };
}

const series = (at: Record<number, number>) => Array.from({ length: MINUTES }, (_v, i) => at[i] ?? 0);
const last = MINUTES - 1;

test('what status reads matches the request log, the queues and the operator views', async () => {
  await rolledBack(db.pool, async (tx) => {
    const { endpoint, suspensa } = await seed(tx);
    const s = await readSnapshot(tx);
    assert.equal(s.requests, { '2xx': series({ [last]: 3 }), '4xx': series({ [last - 2]: 3, [last - 5]: 1 }) });
    assert.equal(s.refusals, { 'limite_excedido (minuto)': 2, 'limite_excedido (mes)': 1, nao_autenticado: 1 });
    assert.equal(s.deliveries, { falha: series({ [last - 4]: 1 }), sucesso: series({ [last - 1]: 2 }) });
    const depth = await tx.any(sql.type(z.object({ queue: z.string(), state: z.string(), items: z.number() }))`
      SELECT queue, state, items::int FROM queue_depth`);
    assert.equal(s.queues.map(({ queue, state, items }) => ({ queue, state, items })), [...depth]);
    assert.ok(depth.some((q) => q.queue === 'outbox' && q.items === 4), 'the unrelayed events are counted');
    assert.equal(s.endpoints.map((e) => [e.endpoint_id, e.estado]), [[endpoint, 'falhando']]);
    const suspended = await tx.anyFirst(sql.type(z.object({ prefixo: z.string() }))`SELECT prefixo FROM api_keys_suspended`);
    assert.equal(s.keys.filter((k) => k.estado === 'suspensa').map((k) => k.prefixo), [...suspended]);
    assert.equal(suspended.length, 1, `${suspensa.chaveId} is suspended`);
  });
});

test('the screen shows the figures, a trend line per series and a line for empty sections', async () => {
  await rolledBack(db.pool, async (tx) => {
    await seed(tx);
    const text = renderStatus(await readSnapshot(tx));
    assert.match(text, /2xx\s+▁+█\s+total 3\s+último minuto 3/);
    assert.match(text, /limite_excedido \(minuto\)\s+2/);
    assert.match(text, /outbox\/ready\s+4\s+mais antigo há 3 min/);
    assert.match(text, /falhando desde/);
    assert.match(text, /suspensa/);
  });
  const empty = renderStatus({ at: 'x', minutes: MINUTES, requests: {}, refusals: {}, queues: [], deliveries: {}, endpoints: [], keys: [] });
  assert.is(empty.match(/\(nada\)/g)?.length, 6);
});

test('sparkline scales to the series maximum', () => {
  assert.is(sparkline([0, 0, 0]), '▁▁▁');
  assert.is(sparkline([0, 7, 14]), '▁▄█');
});

test('--watch draws a screen per round, clearing the terminal first, and stops when aborted', async () => {
  const frames: string[] = [];
  await watchStatus(() => readSnapshot(db.pool), (t) => frames.push(t), { intervalMs: 1, rounds: 2 });
  assert.is(frames.length, 2);
  assert.ok(frames.every((f) => f.startsWith('\x1b[2J\x1b[H') && f.includes('Filas')));
  const stop = new AbortController();
  stop.abort();
  await watchStatus(() => readSnapshot(db.pool), (t) => frames.push(t), { intervalMs: 60_000, signal: stop.signal });
  assert.is(frames.length, 2);
});

test('from a real process: --json is the snapshot, and the text screen is printed as it is', async () => {
  await plantRequests(db.pool, { contaId: conta.contaId, count: 4, ago: '5 minutes', status: 201 });
  const json = await spawnOps(db.url, ['status', '--json']);
  assert.is(json.code, 0, json.stderr);
  assert.is(json.json.requests['2xx'].reduce((a: number, b: number) => a + b, 0), 4);
  const text = await spawnOps(db.url, ['status']);
  assert.is(text.code, 0, text.stderr);
  assert.is(text.json, null);
  assert.match(text.stdout, /Requisições por minuto[^\n]*\n\s+2xx\s+\S+\s+total 4 /);
  const usage = await spawnOps(db.url, ['status', '--intervalo', '0']);
  assert.is(usage.code, 64);
});

test.run();
