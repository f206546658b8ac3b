// Every operator view (sql/code/operator_views.sql; README, "Operator views"), row by row: real rows
// planted in the tables they read, and every column of every row checked. Each test runs in a
// transaction that is rolled back, so the database clock stands still: a timestamp is shown as the
// seconds before now() (negative: in the future) and an interval as seconds, exactly.
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { createBoss } from '#shared/boss.ts';
import { projectRoot } from '#shared/config.ts';
import { sql, type Tx } from '#shared/db/pool.ts';
import { createTestDatabase, rolledBack, type TestDatabase } from './helpers/db.ts';
import { addKey, createAccount, type TestAccount } from './helpers/fixtures.ts';
import { admitSequence } from './helpers/limits.ts';
import { plantDeliveries, plantEndpoint, plantEvents, plantRequests } from './helpers/planted.ts';

const test = suite('operator views: the rows of each');
let db: TestDatabase;
const QUEUE = 'fila-de-operador';

test.before(async () => {
  db = await createTestDatabase();
  const boss = createBoss(db.url, { max: 2, supervise: false, schedule: false, applicationName: 'test' });
  boss.on('error', () => undefined);
  await boss.start();
  await boss.createQueue(QUEUE);
  await boss.stop({ graceful: false });
});
test.after(async () => db.close());

const inTx = (work: (tx: Tx) => Promise<void>) => rolledBack(db.pool, work);
const Column = z.object({ column_name: z.string(), data_type: z.string() });
type Row = Record<string, unknown>;

/**
 * The view's rows matching `where`, in `order` (of the values shown), after checking its columns are
 * exactly `columns`: timestamps as seconds before now(), intervals as seconds.
 */
async function rows(tx: Tx, view: string, columns: string[], where: ReturnType<typeof sql.fragment>, order: string): Promise<readonly Row[]> {
  const found = await tx.any(sql.type(Column)`
    SELECT column_name::text, data_type::text FROM information_schema.columns
     WHERE table_schema = 'code' AND table_name = ${view} ORDER BY ordinal_position`);
  assert.equal(found.map((c) => c.column_name), columns, `the columns of ${view}`);
  const select = found.map((c) => {
    const id = sql.identifier([c.column_name]);
    if (c.data_type === 'timestamp with time zone') return sql.fragment`round(extract(epoch FROM now() - ${id}), 3)::float8 AS ${id}`;
    if (c.data_type === 'interval') return sql.fragment`round(extract(epoch FROM ${id}), 3)::float8 AS ${id}`;
    return id;
  });
  return tx.any(sql.type(z.record(z.string(), z.unknown()))`
    SELECT ${sql.join(select, sql.fragment`, `)} FROM ${sql.identifier([view])} WHERE ${where}
     ORDER BY ${sql.join(order.split(',').map((o) => sql.identifier([o.trim()])), sql.fragment`, `)}`);
}

const HOUR = 3600;
const DAY = 24 * HOUR;

test('webhook_deliveries_pending and webhook_deliveries_failed: each delivery with its last attempt', async () => {
  await inTx(async (tx) => {
    const a = await createAccount(tx, { plano: 'oficina' });
    const e1 = await plantEndpoint(tx, a, 'https://erp.example.com/a');
    const e2 = await plantEndpoint(tx, a, 'https://erp.example.com/b');
    const event = async (relayedAgo: string) => (await plantEvents(tx, a.contaId, { relayedAgo }))[0] ?? '';
    const deliver = async (input: Omit<Parameters<typeof plantDeliveries>[1], 'contaId' | 'eventIds'> & { eventId: string }) =>
      (await plantDeliveries(tx, { contaId: a.contaId, eventIds: [input.eventId], ...input }))[0] ?? '';

    const ev1 = await event('2 hours');
    const retrying = await deliver({ eventId: ev1, endpointId: e1, status: 'pending', createdAgo: '2 hours', nextAttemptAt: '30 minutes',
      attempts: [{ ago: '2 hours', status: 500 }, { ago: '1 hour', error: 'timeout' }] });
    const ev2 = await event('1 hour');
    const leased = await deliver({ eventId: ev2, endpointId: e1, status: 'pending', createdAgo: '1 hour', nextAttemptAt: '8 seconds', leaseIds: [randomUUID()] });
    const ev3 = await event('3 days');
    const failed = await deliver({ eventId: ev3, endpointId: e2, status: 'failed', createdAgo: '3 days', completedAgo: '10 minutes',
      attempts: [{ ago: '3 days', status: 503 }, { ago: '10 minutes', status: 503 }] });
    const ev4 = await event('3 days');
    const failedUnsent = await deliver({ eventId: ev4, endpointId: e2, status: 'failed', createdAgo: '3 days', completedAgo: '20 minutes' });
    await tx.query(sql.unsafe`UPDATE deliveries SET last_error = 'endpoint desativado' WHERE id = ${failedUnsent}`);
    await deliver({ eventId: await event('1 hour'), endpointId: e1, status: 'succeeded', attempts: [{ ago: '59 minutes', status: 200 }] });
    await tx.query(sql.unsafe`
      UPDATE webhook_endpoints SET ativo = false, desativado_em = now(), desativado_motivo = 'falhas_5_dias' WHERE id = ${e2}`);

    const common = { conta_id: a.contaId, tipo: 'cotacao.criada' };
    assert.equal(await rows(tx, 'webhook_deliveries_pending', [
      'conta_id', 'delivery_id', 'event_id', 'tipo', 'endpoint_id', 'url', 'attempts', 'run_attempts', 'next_attempt_at', 'leased',
      'created_at', 'age', 'last_response_status', 'last_error', 'last_attempt_at',
    ], sql.fragment`conta_id = ${a.contaId}`, 'next_attempt_at'), [
      { ...common, delivery_id: retrying, event_id: ev1, endpoint_id: e1, url: 'https://erp.example.com/a', attempts: 2, run_attempts: 2,
        next_attempt_at: -1800, leased: false, created_at: 2 * HOUR, age: 2 * HOUR, last_response_status: null, last_error: 'timeout',
        last_attempt_at: HOUR },
      { ...common, delivery_id: leased, event_id: ev2, endpoint_id: e1, url: 'https://erp.example.com/a', attempts: 0, run_attempts: 0,
        next_attempt_at: -8, leased: true, created_at: HOUR, age: HOUR, last_response_status: null, last_error: null, last_attempt_at: null },
    ]);
    assert.equal(await rows(tx, 'webhook_deliveries_failed', [
      'conta_id', 'delivery_id', 'event_id', 'tipo', 'endpoint_id', 'url', 'endpoint_active', 'attempts', 'created_at', 'failed_at',
      'last_response_status', 'last_error',
    ], sql.fragment`conta_id = ${a.contaId}`, 'failed_at'), [
      { ...common, delivery_id: failed, event_id: ev3, endpoint_id: e2, url: 'https://erp.example.com/b', endpoint_active: false, attempts: 2,
        created_at: 3 * DAY, failed_at: 600, last_response_status: 503, last_error: null },
      { ...common, delivery_id: failedUnsent, event_id: ev4, endpoint_id: e2, url: 'https://erp.example.com/b', endpoint_active: false,
        attempts: 0, created_at: 3 * DAY, failed_at: 1200, last_response_status: null, last_error: 'endpoint desativado' },
    ]);
  });
});

test('queue_depth: events waiting for the relay or their window, deliveries by stage, pg-boss jobs by queue and state', async () => {
  await inTx(async (tx) => {
    const a = await createAccount(tx, { plano: 'oficina' });
    const e1 = await plantEndpoint(tx, a);
    await plantEvents(tx, a.contaId, { relayedAgo: null, criadoAgo: '4 minutes' });
    await plantEvents(tx, a.contaId, { relayedAgo: null, criadoAgo: '3 minutes' });
    const [grouping] = await plantEvents(tx, a.contaId, { relayedAgo: null, criadoAgo: '20 seconds' });
    await tx.query(sql.unsafe`UPDATE outbox SET available_at = now() + interval '40 seconds', group_key = 'estoque:v1' WHERE id = ${grouping ?? ''}`);
    const pending = async (nextAttemptAt: string, leaseId: string | null = null) => plantDeliveries(tx, {
      contaId: a.contaId, endpointId: e1, eventIds: await plantEvents(tx, a.contaId), status: 'pending', nextAttemptAt, leaseIds: [leaseId] });
    // A lease that ran out five minutes ago (its worker died): due again.
    await pending('-5 minutes', randomUUID());
    await pending('-1 minute');
    await pending('-2 minutes');
    await pending('8 seconds', randomUUID());
    await pending('10 minutes');
    await tx.query(sql.unsafe`
      INSERT INTO pgboss.job (name, data, state, created_on)
      VALUES (${QUEUE}, '{}', 'created', now() - interval '2 minutes'), (${QUEUE}, '{}', 'created', now() - interval '1 minute'),
             (${QUEUE}, '{}', 'active', now() - interval '30 seconds'), (${QUEUE}, '{}', 'completed', now() - interval '1 hour')`);

    assert.equal(await rows(tx, 'queue_depth', ['queue', 'state', 'items', 'oldest'], sql.fragment`true`, 'queue, state'), [
      { queue: 'deliveries', state: 'due', items: 3, oldest: 300 },
      { queue: 'deliveries', state: 'leased', items: 1, oldest: -8 },
      { queue: 'deliveries', state: 'scheduled', items: 1, oldest: -600 },
      { queue: QUEUE, state: 'active', items: 1, oldest: 30 },
      { queue: QUEUE, state: 'created', items: 2, oldest: 120 },
      { queue: 'outbox', state: 'grouping', items: 1, oldest: 20 },
      { queue: 'outbox', state: 'ready', items: 2, oldest: 240 },
    ]);
  });
});

const NEAR_CAPS = ['conta_id', 'endpoint_id', 'url', 'plano_id', 'endpoints_active', 'endpoints_allowed', 'deliveries_this_hour',
  'deliveries_per_hour', 'failing_since', 'disabled_after', 'reasons'];

test('webhook_endpoints_near_caps: endpoints at 80 % of the endpoints or deliveries of the plan, or failing a day or more', async () => {
  await inTx(async (tx) => {
    const bancada = await createAccount(tx, { plano: 'bancada' });
    const onlyOne = await plantEndpoint(tx, bancada);
    const farm = await createAccount(tx, { plano: 'farm' });
    const f1 = await plantEndpoint(tx, farm, 'https://farm.example.com/1');
    const f2 = await plantEndpoint(tx, farm, 'https://farm.example.com/2');
    await tx.query(sql.unsafe`UPDATE webhook_endpoints SET falhando_desde = now() - interval '2 days' WHERE id = ${f2}`);
    await tx.query(sql.unsafe`INSERT INTO webhook_hourly_usage (conta_id, hour, deliveries) VALUES (${farm.contaId}, date_trunc('hour', now(), 'UTC'), 4000)`);
    // Below every threshold: 2 of Oficina's 3 endpoints, 799 of 1,000 deliveries, failing for 23 hours; and a disabled endpoint.
    const oficina = await createAccount(tx, { plano: 'oficina' });
    const o1 = await plantEndpoint(tx, oficina);
    await plantEndpoint(tx, oficina);
    await tx.query(sql.unsafe`UPDATE webhook_endpoints SET falhando_desde = now() - interval '23 hours' WHERE id = ${o1}`);
    await tx.query(sql.unsafe`INSERT INTO webhook_hourly_usage (conta_id, hour, deliveries) VALUES (${oficina.contaId}, date_trunc('hour', now(), 'UTC'), 799)`);
    const o3 = await plantEndpoint(tx, oficina);
    await tx.query(sql.unsafe`
      UPDATE webhook_endpoints SET ativo = false, desativado_em = now(), desativado_motivo = 'operador', falhando_desde = now() - interval '4 days'
       WHERE id = ${o3}`);

    const accounts = sql.array([bancada.contaId, farm.contaId, oficina.contaId], 'uuid');
    assert.equal(await rows(tx, 'webhook_endpoints_near_caps', NEAR_CAPS, sql.fragment`conta_id = ANY (${accounts})`, 'plano_id, url'), [
      { conta_id: bancada.contaId, endpoint_id: onlyOne, url: 'https://erp.example.com/hooks', plano_id: 'bancada', endpoints_active: 1,
        endpoints_allowed: 1, deliveries_this_hour: 0, deliveries_per_hour: 300, failing_since: null, disabled_after: null, reasons: ['endpoints'] },
      { conta_id: farm.contaId, endpoint_id: f1, url: 'https://farm.example.com/1', plano_id: 'farm', endpoints_active: 2, endpoints_allowed: 10,
        deliveries_this_hour: 4000, deliveries_per_hour: 5000, failing_since: null, disabled_after: null, reasons: ['deliveries_per_hour'] },
      { conta_id: farm.contaId, endpoint_id: f2, url: 'https://farm.example.com/2', plano_id: 'farm', endpoints_active: 2, endpoints_allowed: 10,
        deliveries_this_hour: 4000, deliveries_per_hour: 5000, failing_since: 2 * DAY, disabled_after: -3 * DAY,
        reasons: ['deliveries_per_hour', 'failing'] },
    ]);
  });
});

test('webhook_endpoint_deliveries_this_hour: each endpoint\'s attempts this UTC hour against its account\'s hourly cap', async () => {
  await inTx(async (tx) => {
    const a = await createAccount(tx, { plano: 'oficina' });
    const busy = await plantEndpoint(tx, a, 'https://erp.example.com/ocupado');
    const idle = await plantEndpoint(tx, a, 'https://erp.example.com/parado');
    const gone = await plantEndpoint(tx, a, 'https://erp.example.com/desativado');
    const disable = (id: string) => tx.query(sql.unsafe`
      UPDATE webhook_endpoints SET ativo = false, desativado_em = now(), desativado_motivo = 'recebedor_410' WHERE id = ${id}`);
    const deliver = async (endpointId: string, status: 'pending' | 'succeeded' | 'failed', attempts: { status?: number; error?: string }[]) =>
      plantDeliveries(tx, { contaId: a.contaId, endpointId, eventIds: await plantEvents(tx, a.contaId), status,
        attempts: attempts.map((x) => ({ ago: '0 seconds', ...x })) });
    await deliver(busy, 'succeeded', [{ status: 200 }]);
    await deliver(busy, 'succeeded', [{ status: 500 }, { status: 200 }]);
    await deliver(busy, 'pending', [{ error: 'timeout' }]);
    await deliver(gone, 'failed', [{ status: 410 }]);
    // Last hour's attempt counts for the hour it was made in.
    const [old] = await deliver(busy, 'succeeded', [{ status: 200 }]);
    await tx.query(sql.unsafe`UPDATE delivery_attempts SET started_at = date_trunc('hour', now(), 'UTC') - interval '1 second' WHERE delivery_id = ${old ?? ''}`);
    // Disabled endpoints: one that was sent something this hour is shown, one that was not is not.
    await disable(gone);
    await disable(await plantEndpoint(tx, a, 'https://erp.example.com/sem-entregas'));
    await tx.query(sql.unsafe`INSERT INTO webhook_hourly_usage (conta_id, hour, deliveries) VALUES (${a.contaId}, date_trunc('hour', now(), 'UTC'), 800)`);

    const row = { conta_id: a.contaId, plano_id: 'oficina', account_deliveries_this_hour: 800, deliveries_per_hour: 1000, account_pct_of_cap: 80 };
    assert.equal(await rows(tx, 'webhook_endpoint_deliveries_this_hour', [
      'conta_id', 'endpoint_id', 'url', 'active', 'plano_id', 'deliveries_this_hour', 'succeeded_this_hour', 'failed_this_hour', 'pending',
      'account_deliveries_this_hour', 'deliveries_per_hour', 'pct_of_cap', 'account_pct_of_cap',
    ], sql.fragment`conta_id = ${a.contaId}`, 'url'), [
      { ...row, endpoint_id: gone, url: 'https://erp.example.com/desativado', active: false, deliveries_this_hour: 1, succeeded_this_hour: 0,
        failed_this_hour: 1, pending: 0, pct_of_cap: 0.1 },
      { ...row, endpoint_id: busy, url: 'https://erp.example.com/ocupado', active: true, deliveries_this_hour: 4, succeeded_this_hour: 2,
        failed_this_hour: 2, pending: 1, pct_of_cap: 0.4 },
      { ...row, endpoint_id: idle, url: 'https://erp.example.com/parado', active: true, deliveries_this_hour: 0, succeeded_this_hour: 0,
        failed_this_hour: 0, pending: 0, pct_of_cap: 0 },
    ]);
  });
});

const USAGE = ['conta_id', 'chave_id', 'prefixo', 'nome', 'plano_id', 'burst_tokens_left', 'burst_size', 'reads_this_minute', 'reads_per_minute',
  'writes_this_minute', 'writes_per_minute', 'calls_this_month', 'calls_per_month', 'key_in_flight', 'key_concurrency', 'account_in_flight',
  'account_concurrency', 'near', 'at_ceiling'];
const prefixOf = (account: { token: string }) => account.token.slice(4, 12);

test('api_key_usage and api_keys_near_limits: every active key against each ceiling now, and those at 80 % or more', async () => {
  await inTx(async (tx) => {
    // Bancada: one token of 5 left (80 % used); an expired minute window counts nothing.
    const burst = await createAccount(tx, { plano: 'bancada' });
    await tx.query(sql.unsafe`INSERT INTO rate_buckets (conta_id, chave_id, tokens, refreshed_at) VALUES (${burst.contaId}, ${burst.chaveId}, 1, now())`);
    await tx.query(sql.unsafe`
      INSERT INTO minute_windows (conta_id, classe, window_start, used) VALUES (${burst.contaId}, 'leitura', date_trunc('minute', now()) - interval '1 minute', 30)`);
    // Oficina: 48 of 60 reads, every write of the minute, the whole month; a bucket emptied 3 s ago has 6 tokens back (2 a second).
    const account = await createAccount(tx, { plano: 'oficina' });
    await tx.query(sql.unsafe`INSERT INTO rate_buckets (conta_id, chave_id, tokens, refreshed_at) VALUES (${account.contaId}, ${account.chaveId}, 0, now() - interval '3 seconds')`);
    await tx.query(sql.unsafe`
      INSERT INTO minute_windows (conta_id, classe, window_start, used)
      VALUES (${account.contaId}, 'leitura', date_trunc('minute', now()), 48), (${account.contaId}, 'escrita', date_trunc('minute', now()), 20)`);
    await tx.query(sql.unsafe`INSERT INTO monthly_usage (conta_id, month, calls) VALUES (${account.contaId}, date_trunc('month', now() AT TIME ZONE 'UTC')::date, 150000)`);
    // Farm: the key holds its 3 slots (two live processes), which are also the account's 3; a dead process's slot does not count.
    const slots = await createAccount(tx, { plano: 'farm' });
    const second = await addKey(tx, slots);
    await tx.query(sql.unsafe`
      INSERT INTO request_slots (holder, chave_id, conta_id, in_flight, expires_at)
      VALUES ('web-1', ${slots.chaveId}, ${slots.contaId}, 2, now() + interval '20 seconds'), ('web-2', ${slots.chaveId}, ${slots.contaId}, 1, now() + interval '5 seconds'),
             ('morto', ${second.chaveId}, ${slots.contaId}, 3, now() - interval '1 second')`);
    // Farm, idle; and a revoked key, which is not shown.
    const idle = await createAccount(tx, { plano: 'farm' });
    const revoked = await addKey(tx, idle);
    await tx.query(sql.unsafe`UPDATE chaves_api SET revogada_em = now() WHERE id = ${revoked.chaveId}`);

    const key = (a: TestAccount, plano: string, chaveId = a.chaveId, prefixo = prefixOf(a), nome = 'chave de teste') =>
      ({ conta_id: a.contaId, chave_id: chaveId, prefixo, nome, plano_id: plano });
    const bancada = { burst_size: 5, reads_per_minute: 30, writes_per_minute: 10, calls_per_month: 50000, key_concurrency: 2, account_concurrency: 3 };
    const oficina = { burst_size: 10, reads_per_minute: 60, writes_per_minute: 20, calls_per_month: 150000, key_concurrency: 3, account_concurrency: 3 };
    const farm = { burst_size: 20, reads_per_minute: 180, writes_per_minute: 60, calls_per_month: 750000, key_concurrency: 3, account_concurrency: 3 };
    const zero = { reads_this_minute: 0, writes_this_minute: 0, calls_this_month: 0, key_in_flight: 0, account_in_flight: 0 };
    const expected: Row[] = [
      { ...key(burst, 'bancada'), ...bancada, ...zero, burst_tokens_left: 1, near: ['rajada'], at_ceiling: [] },
      { ...key(account, 'oficina'), ...oficina, burst_tokens_left: 6, reads_this_minute: 48, writes_this_minute: 20, calls_this_month: 150000,
        key_in_flight: 0, account_in_flight: 0, near: ['leituras_por_minuto', 'escritas_por_minuto', 'chamadas_por_mes'],
        at_ceiling: ['escritas_por_minuto', 'chamadas_por_mes'] },
      { ...key(slots, 'farm'), ...farm, ...zero, burst_tokens_left: 20, key_in_flight: 3, account_in_flight: 3,
        near: ['simultaneas_por_chave', 'simultaneas_por_conta'], at_ceiling: ['simultaneas_por_chave', 'simultaneas_por_conta'] },
      { ...key(slots, 'farm', second.chaveId, prefixOf(second), 'outra chave'), ...farm, ...zero, burst_tokens_left: 20, account_in_flight: 3,
        near: ['simultaneas_por_conta'], at_ceiling: ['simultaneas_por_conta'] },
      { ...key(idle, 'farm'), ...farm, ...zero, burst_tokens_left: 20, near: [], at_ceiling: [] },
    ];
    const mine = sql.fragment`conta_id = ANY (${sql.array([burst.contaId, account.contaId, slots.contaId, idle.contaId], 'uuid')})`;
    const byKey = (r: readonly Row[]) => [...r].sort((x, y) => expected.findIndex((e) => e.chave_id === x.chave_id) - expected.findIndex((e) => e.chave_id === y.chave_id));
    assert.equal(byKey(await rows(tx, 'api_key_usage', USAGE, mine, 'chave_id')), expected);
    assert.equal(byKey(await rows(tx, 'api_keys_near_limits', USAGE, mine, 'chave_id')), expected.slice(0, 4));
  });
});

test('api_keys_suspended: a key suspended by its limit refusals, the run of refusals in the request log, what is at its ceiling and the e-mail', async () => {
  await inTx(async (tx) => {
    const a = await createAccount(tx, { plano: 'bancada' });
    // Refusals of an earlier run, then an admitted request that ended it.
    await plantRequests(tx, { contaId: a.contaId, chaveId: a.chaveId, count: 4, ago: '10 minutes', status: 429, codigo: 'limite_excedido', cost: 0 });
    await plantRequests(tx, { contaId: a.contaId, chaveId: a.chaveId, ago: '9 minutes' });
    // Five calls empty the burst; the next twenty are refused and the twentieth suspends the key (admission, at now()).
    const results = await admitSequence(tx, a.token, 25);
    assert.ok(results[24]?.suspended_until);
    for (let s = 20; s >= 1; s--) {
      await plantRequests(tx, { contaId: a.contaId, chaveId: a.chaveId, ago: `${s} seconds`, status: 429, codigo: 'limite_excedido', cost: 0,
        route: s % 2 ? '/cotacoes' : '/produtos' });
    }
    // A key an operator suspended by hand for a day, with no refusals; and a key whose suspension has ended.
    const manual = await createAccount(tx, { plano: 'farm' });
    await tx.query(sql.unsafe`UPDATE chaves_api SET suspensa_ate = now() + interval '1 day' WHERE id = ${manual.chaveId}`);
    const ended = await createAccount(tx, { plano: 'farm' });
    await tx.query(sql.unsafe`UPDATE chaves_api SET suspensa_ate = now() - interval '1 second', recusas_consecutivas = 20 WHERE id = ${ended.chaveId}`);

    const email = (contaId: string) => tx.oneFirst(sql.type(z.object({ email: z.string() }))`SELECT email FROM usuarios WHERE conta_id = ${contaId}`);
    const accounts = sql.array([a.contaId, manual.contaId, ended.contaId], 'uuid');
    assert.equal(await rows(tx, 'api_keys_suspended', [
      'conta_id', 'chave_id', 'prefixo', 'nome', 'plano_id', 'creator_email', 'suspended_until', 'time_left', 'consecutive_refusals',
      'suspended_at', 'limit_hit', 'retry_after_asked', 'suspensions_24h', 'refusals_logged', 'first_refusal_at', 'last_refusal_at', 'refused_routes', 'at_ceiling_now', 'last_notice_at', 'last_notice_status',
    ], sql.fragment`conta_id = ANY (${accounts})`, 'suspended_until'), [
      { conta_id: manual.contaId, chave_id: manual.chaveId, prefixo: prefixOf(manual), nome: 'chave de teste', plano_id: 'farm',
        creator_email: await email(manual.contaId), suspended_until: -DAY, time_left: DAY, consecutive_refusals: 0,
        suspended_at: null, limit_hit: null, retry_after_asked: null, suspensions_24h: 0, refusals_logged: 0,
        first_refusal_at: null, last_refusal_at: null, refused_routes: null, at_ceiling_now: [], last_notice_at: null, last_notice_status: null },
      { conta_id: a.contaId, chave_id: a.chaveId, prefixo: prefixOf(a), nome: 'chave de teste', plano_id: 'bancada', creator_email: await email(a.contaId),
        suspended_until: -900, time_left: 900, consecutive_refusals: 20,
        suspended_at: 0, limit_hit: 'rajada', retry_after_asked: 1, suspensions_24h: 1, refusals_logged: 20, first_refusal_at: 20, last_refusal_at: 1,
        refused_routes: ['GET /cotacoes', 'GET /produtos'], at_ceiling_now: ['rajada'], last_notice_at: 0, last_notice_status: 'pending' },
    ]);
  });
});

test('requests_last_hour: requests per account, status and codigo over the last hour', async () => {
  await inTx(async (tx) => {
    const a = await createAccount(tx, { plano: 'farm' });
    const b = await createAccount(tx, { plano: 'farm' });
    await plantRequests(tx, { contaId: a.contaId, chaveId: a.chaveId, count: 3, ago: '59 minutes', cost: 3 });
    await plantRequests(tx, { contaId: a.contaId, chaveId: a.chaveId, count: 2, ago: '1 minute', cost: 1 });
    await plantRequests(tx, { contaId: a.contaId, chaveId: a.chaveId, count: 2, ago: '30 seconds', status: 429, codigo: 'limite_excedido', cost: 0 });
    await plantRequests(tx, { contaId: a.contaId, chaveId: a.chaveId, count: 9, ago: '61 minutes' });
    await plantRequests(tx, { contaId: b.contaId, chaveId: b.chaveId, ago: '10 minutes', status: 422, codigo: 'saldo_insuficiente', cost: 2 });
    await tx.query(sql.unsafe`UPDATE request_log SET duration_ms = 80.25 WHERE conta_id = ${b.contaId}`);
    await plantRequests(tx, { contaId: null, count: 2, ago: '5 minutes', status: 401, codigo: 'nao_autenticado', cost: 0 });

    const columns = ['conta_id', 'status', 'codigo', 'requests', 'cost_units', 'avg_duration_ms', 'max_duration_ms', 'first_at', 'last_at'];
    const ours = sql.fragment`(conta_id IS NULL OR conta_id = ANY (${sql.array([a.contaId, b.contaId], 'uuid')}))`;
    const found = await rows(tx, 'requests_last_hour', columns, ours, 'status');
    const timing = { avg_duration_ms: 12.5, max_duration_ms: 12.5 };
    assert.equal(found, [
      { conta_id: a.contaId, status: 200, codigo: null, requests: 5, cost_units: 11, ...timing, first_at: 59 * 60, last_at: 60 },
      { conta_id: null, status: 401, codigo: 'nao_autenticado', requests: 2, cost_units: 0, ...timing, first_at: 300, last_at: 300 },
      { conta_id: b.contaId, status: 422, codigo: 'saldo_insuficiente', requests: 1, cost_units: 2, avg_duration_ms: 80.3, max_duration_ms: 80.3,
        first_at: 600, last_at: 600 },
      { conta_id: a.contaId, status: 429, codigo: 'limite_excedido', requests: 2, cost_units: 0, ...timing, first_at: 30, last_at: 30 },
    ]);
  });
});

test('the README lists every view of operator_views.sql, and this suite checks each', async () => {
  const code = await readFile(path.join(projectRoot, 'sql/code/operator_views.sql'), 'utf8');
  const views = [...code.matchAll(/^CREATE VIEW (\w+)/gm)].map((m) => m[1] ?? '');
  const readme = await readFile(path.join(projectRoot, 'README.md'), 'utf8');
  const section = readme.split('### Operator views')[1]?.split('\n## ')[0] ?? '';
  const suite = await readFile(path.join(projectRoot, 'test/operator-views.test.ts'), 'utf8');
  assert.ok(views.length >= 9);
  for (const view of views) {
    assert.match(section, `\`${view}\``, `README: ${view}`);
    assert.match(suite, `rows(tx, '${view}'`, `a test of the rows of ${view}`);
  }
});

test.run();
