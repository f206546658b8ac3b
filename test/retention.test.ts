// Every retention of the service, proven by moving timestamps (never by waiting): what is due goes,
// what is not stays; a large backlog goes in short batches, each its own transaction, that never
// wait on a row someone else holds and never hold up a concurrent insert. The purges are run as
// the worker runs them: the jobs' handlers, on the suite's own database.
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import type { PgBoss } from 'pg-boss';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { createBoss } from '#shared/boss.ts';
import { projectRoot } from '#shared/config.ts';
import { sql, type Db } from '#shared/db/pool.ts';
import { createLogger } from '#shared/log.ts';
import { archiveEnded, FROM_THE_START } from '#shared/db/archive.ts';
import { purge } from '#shared/db/retention.ts';
import { idempotencyPurge } from '../worker/jobs/idempotency.ts';
import { jobs } from '../worker/jobs/index.ts';
import { requestLogRetention } from '../worker/jobs/retention.ts';
import type { AnyJob, WorkerDeps } from '../worker/jobs/types.ts';
import { restartArchiveScan, webhookMaintenance } from '../worker/jobs/webhook-maintenance.ts';
import { testConfig } from './helpers/app.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import { createAccount, type TestAccount } from './helpers/fixtures.ts';
import { plantDeliveries, plantEndpoint, plantEvents, plantRequests } from './helpers/planted.ts';
import { eventually } from './helpers/receiver.ts';

const test = suite('retention: every purge, by moved timestamps, in short batches without long locks');
let db: TestDatabase;
let boss: PgBoss;
let deps: WorkerDeps;
let account: TestAccount;
let endpointId: string;

const N = z.object({ n: z.number() });
const count = (db: Db, from: ReturnType<typeof sql.fragment>) => db.oneFirst(sql.type(N)`SELECT count(*)::int AS n FROM ${from}`);
const run = (job: AnyJob) => {
  // Each test plants events relayed long ago: the maintenance's scan of relayed events starts over,
  // as in a new worker process.
  restartArchiveScan();
  return job.handler([], deps);
};

// A test-only trigger on each purged table records how many rows every DELETE statement took and
// in which transaction; while the test holds PAUSE, a statement waits inside its transaction.
const PAUSE = 74_102_042;
const PROBED = ['request_log', 'idempotency_keys', 'outbox', 'delivery_attempts'];

test.before(async () => {
  db = await createTestDatabase();
  const config = await testConfig({ DATABASE_URL: db.url });
  boss = createBoss(db.url, { max: 3, supervise: false, schedule: false, applicationName: 'test' });
  boss.on('error', () => undefined);
  await boss.start();
  deps = { pool: db.pool, config, log: createLogger('silent', 'test'), boss };
  account = await createAccount(db.pool, { plano: 'farm' });
  endpointId = await plantEndpoint(db.pool, account);
  await db.pool.query(sql.unsafe`CREATE TABLE purge_probe (tabela text NOT NULL, tx xid8 NOT NULL, n int NOT NULL)`);
  await db.pool.query(sql.unsafe`
    CREATE FUNCTION purge_probe() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO purge_probe SELECT TG_TABLE_NAME, pg_current_xact_id(), count(*) FROM gone;
      PERFORM pg_advisory_xact_lock_shared(${sql.literalValue(String(PAUSE))}::bigint);
      RETURN NULL;
    END $$`);
  for (const table of PROBED) {
    await db.pool.query(sql.unsafe`
      CREATE TRIGGER purge_probe AFTER DELETE ON ${sql.identifier([table])}
        REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION purge_probe()`);
  }
});
// Every test starts from empty tables, whatever the previous one left.
test.before.each(async () => {
  await db.pool.query(sql.unsafe`TRUNCATE request_log, idempotency_keys, webhook_hourly_usage, outbox, deliveries, delivery_attempts, suspensions, purge_probe,
                                     outbox_archive, deliveries_archive, delivery_attempts_archive`);
});
test.after(async () => {
  await boss.stop({ graceful: false });
  await db.close();
});

/** Rows each transaction deleted from a table since the probe was last cleared (transactions that deleted nothing left out). */
async function batches(table: string): Promise<number[]> {
  const rows = await db.pool.any(sql.type(N)`
    SELECT sum(n)::int AS n FROM purge_probe WHERE tabela = ${table} GROUP BY tx HAVING sum(n) > 0 ORDER BY 1 DESC`);
  return rows.map((r) => r.n);
}

/** Sessions of this database waiting for a lock other than the test's own pause. */
const lockWaits = () => db.pool.oneFirst(sql.type(N)`
  SELECT count(*)::int AS n FROM pg_stat_activity
   WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event <> 'advisory'`);

/** Settles `work`, or says it waited for a lock (a purge that queues behind a writer, or a writer behind a purge). */
async function withoutWaiting(work: Promise<unknown>): Promise<'done' | 'waited'> {
  let settled = false;
  const watched = work.then(() => void (settled = true), (error: unknown) => {
    settled = true;
    throw error;
  });
  while (!settled) {
    if ((await lockWaits()) > 0) return 'waited';
    await Promise.race([watched, new Promise((r) => setTimeout(r, 20))]);
  }
  await watched;
  return 'done';
}

/** A connection of its own, outside the pool (slonik refuses pool queries inside another connection's callback). */
async function client(): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: db.url });
  await c.connect();
  return c;
}

const hour = (ago: string) => sql.fragment`date_trunc('hour', now(), 'UTC') - ${ago}::interval`;

test('idempotency records are kept 24 hours: an expired record goes, one a minute from expiry stays', async () => {
  const record = (key: string) => db.pool.query(sql.unsafe`
    SELECT api_idempotency_record(${account.contaId}, ${account.chaveId}, ${key}, 'POST /v1/cotacoes',
                                  sha256(${key}::bytea), 201, NULL, NULL, NULL)`);
  for (const key of ['fresh', 'expired', 'young']) await record(key);
  const kept = await db.pool.oneFirst(sql.type(N)`
    SELECT extract(epoch FROM expires_at - created_at)::int AS n FROM idempotency_keys WHERE key = 'fresh'`);
  assert.is(kept, 24 * 3600);
  await db.pool.query(sql.unsafe`
    UPDATE idempotency_keys SET created_at = created_at - interval '24 hours 1 second',
                                expires_at = expires_at - interval '24 hours 1 second' WHERE key = 'expired'`);
  await db.pool.query(sql.unsafe`
    UPDATE idempotency_keys SET created_at = created_at - interval '23 hours 59 minutes',
                                expires_at = expires_at - interval '23 hours 59 minutes' WHERE key = 'young'`);
  // Before any purge, the expired record is already forgotten by the claim; the young one replays.
  const claim = (key: string) => db.pool.oneFirst(sql.type(z.object({ claim: z.string() }))`
    SELECT (api_write_claim(${account.contaId}, ${account.chaveId}, ${key}, 'POST /v1/cotacoes', sha256(${key}::bytea))).claim`);
  assert.is(await claim('expired'), 'new');
  assert.is(await claim('young'), 'done');
  await run(idempotencyPurge);
  const left = await db.pool.anyFirst(sql.type(z.object({ key: z.string() }))`SELECT key FROM idempotency_keys ORDER BY key`);
  assert.equal(left, ['fresh', 'young']);
});

test('the request log is kept 30 days: a row 30 days and a minute old goes, one a minute younger than 30 days stays', async () => {
  await plantRequests(db.pool, { contaId: account.contaId, ago: '30 days 1 minute', route: '/velho' });
  await plantRequests(db.pool, { contaId: null, ago: '31 days', status: 401, codigo: 'nao_autenticado', route: '/velho' });
  await plantRequests(db.pool, { contaId: account.contaId, ago: '29 days 23 hours 59 minutes', route: '/novo' });
  await plantRequests(db.pool, { contaId: account.contaId, ago: '1 second', route: '/novo' });
  await run(requestLogRetention);
  const routes = await db.pool.anyFirst(sql.type(z.object({ route: z.string() }))`SELECT route FROM request_log`);
  assert.equal(routes, ['/novo', '/novo']);
});

test('suspensions of keys are kept 30 days from their start', async () => {
  const plant = (ago: string, limite: string) => db.pool.query(sql.unsafe`
    INSERT INTO suspensions (conta_id, chave_id, started_at, ends_at, limit_name, retry_after, refusals, notified)
    VALUES (${account.contaId}, ${account.chaveId}, now() - ${ago}::interval, now() - ${ago}::interval + interval '15 minutes',
            ${limite}, 1, 20, false)`);
  await plant('30 days 1 minute', 'mes');
  await plant('29 days 23 hours 59 minutes', 'rajada');
  await run(requestLogRetention);
  const left = await db.pool.anyFirst(sql.type(z.object({ limit_name: z.string() }))`SELECT limit_name FROM suspensions`);
  assert.equal(left, ['rajada']);
});

test('events are kept 30 days after their relay and their last delivery\'s end, with their deliveries and attempts, archived or not; a pending or recently finished delivery keeps its event', async () => {
  const old = (relayedAgo: string | null, criadoAgo?: string) => plantEvents(db.pool, account.contaId, { relayedAgo, criadoAgo });
  const finished = async (eventIds: string[], status: 'succeeded' | 'failed', completedAgo: string) =>
    plantDeliveries(db.pool, { contaId: account.contaId, endpointId, eventIds, status, completedAgo, createdAgo: '32 days',
      attempts: [{ ago: '31 days', status: 500 }, { ago: completedAgo, status: status === 'succeeded' ? 200 : 500 }] });

  const due = await old('30 days 1 minute');
  await finished(due, 'succeeded', '30 days');
  const withoutDeliveries = await old('31 days');
  const young = await old('29 days 23 hours 59 minutes');
  await finished(young, 'succeeded', '29 days 23 hours 59 minutes');
  const retrying = await old('31 days');
  await plantDeliveries(db.pool, { contaId: account.contaId, endpointId, eventIds: retrying, status: 'pending', nextAttemptAt: '2 hours',
    attempts: [{ ago: '31 days', error: 'timeout' }] });
  const neverRelayed = await old(null, '40 days');
  // Failed long ago, replayed by an operator two days ago: its last attempts are two days old.
  const replayed = await old('31 days');
  await finished(replayed, 'succeeded', '2 days');

  await run(webhookMaintenance);
  const left = await db.pool.anyFirst(sql.type(z.object({ id: z.string() }))`SELECT id FROM eventos ORDER BY id`);
  const name = new Map(Object.entries({ due, withoutDeliveries, young, retrying, neverRelayed, replayed }).map(([k, [id]]) => [id, k]));
  assert.equal(left.map((id) => name.get(id)).sort(), ['neverRelayed', 'replayed', 'retrying', 'young']);
  assert.is(await count(db.pool, sql.fragment`all_deliveries WHERE event_id = ${due[0] ?? ''}`), 0, 'its deliveries went with it');
  assert.is(await count(db.pool, sql.fragment`all_delivery_attempts`), 2 + 1 + 2, 'and their attempts: young, retrying and replayed keep theirs');
  // What ended left the working tables; what goes on stays there.
  assert.equal(await db.pool.anyFirst(sql.type(z.object({ id: z.string() }))`SELECT id FROM outbox ORDER BY id`),
    [...neverRelayed, ...retrying].sort());
  assert.is(await count(db.pool, sql.fragment`outbox_archive`), 2, 'young and replayed are archived');
});

test('hourly delivery counters are kept 2 days', async () => {
  await db.pool.query(sql.unsafe`
    INSERT INTO webhook_hourly_usage (conta_id, hour, deliveries)
    VALUES (${account.contaId}, ${hour('49 hours')}, 7), (${account.contaId}, ${hour('47 hours')}, 8), (${account.contaId}, ${hour('0 hours')}, 9)`);
  await run(webhookMaintenance);
  const left = await db.pool.anyFirst(sql.type(N)`SELECT deliveries AS n FROM webhook_hourly_usage ORDER BY hour`);
  assert.equal(left, [8, 9]);
});

for (const [table, plant, job] of [
  ['request_log', () => plantRequests(db.pool, { contaId: account.contaId, count: 20_000, ago: '31 days' }), requestLogRetention],
  ['idempotency_keys', () => db.pool.query(sql.unsafe`
    INSERT INTO idempotency_keys (conta_id, chave_id, key, route, request_hash, status_code, created_at, expires_at)
    SELECT ${account.contaId}, ${account.chaveId}, 'velha-' || g, 'POST /v1/cotacoes', sha256(g::text::bytea), 201,
           now() - interval '25 hours', now() - interval '1 hour'
      FROM generate_series(1, 20000) g`), idempotencyPurge],
] as const) {
  test(`${table}: a backlog of 20,000 due rows goes in batches of at most 5,000, each its own transaction, and an insert meanwhile is not held up`, async () => {
    await plant();
    const fresh = () => table === 'request_log'
      ? plantRequests(db.pool, { contaId: account.contaId, ago: '0 seconds', route: '/durante' })
      : db.pool.query(sql.unsafe`
          SELECT api_idempotency_record(${account.contaId}, ${account.chaveId}, ${randomUUID()}, 'POST /v1/cotacoes',
                                        sha256('x'::bytea), 201, NULL, NULL, NULL)`);
    const pauser = await client();
    await pauser.query('SELECT pg_advisory_lock($1)', [PAUSE]);
    const purge = run(job);
    try {
      // The first batch has deleted its rows and waits, its transaction open, on the pause.
      await eventually(() => db.pool.oneFirst(sql.type(N)`
        SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event = 'advisory'`), (n) => n === 1);
      assert.is(await withoutWaiting(fresh()), 'done', 'an insert beside an open batch does not wait for it');
    } finally {
      await pauser.end();
      await purge;
    }
    const sizes = await batches(table);
    assert.is(sizes.reduce((a, b) => a + b, 0), 20_000);
    assert.ok(sizes.length >= 4 && sizes.every((n) => n <= 5_000), `rows per transaction: ${sizes.join(', ')}`);
    assert.is(await count(db.pool, sql.fragment`${sql.identifier([table])}`), 1, 'only the row inserted meanwhile is left');
  });
}

test('outbox: a backlog of 12,000 ended events leaves the working tables with their deliveries and attempts, at most 1,000 events to a transaction, and the archive\'s expired rows go', async () => {
  const events = await plantEvents(db.pool, account.contaId, { count: 12_000, relayedAgo: '31 days' });
  await plantDeliveries(db.pool, { contaId: account.contaId, endpointId, eventIds: events, status: 'succeeded', completedAgo: '31 days',
    attempts: [{ ago: '31 days', status: 200 }] });
  await run(webhookMaintenance);
  const sizes = await batches('outbox');
  assert.is(sizes.reduce((a, b) => a + b, 0), 12_000);
  assert.ok(sizes.length >= 12 && sizes.every((n) => n <= 1_000), `events per transaction: ${sizes.join(', ')}`);
  assert.ok((await batches('delivery_attempts')).every((n) => n <= 1_000), 'attempts go in the same short transactions');
  assert.is(await count(db.pool, sql.fragment`outbox`), 0);
  assert.is(await count(db.pool, sql.fragment`delivery_attempts`), 0);
  assert.is(await count(db.pool, sql.fragment`eventos`), 0, 'and expired in the archive');
  assert.is(await count(db.pool, sql.fragment`all_delivery_attempts`), 0);
});

test('two workers archiving and purging at once: every row moves or goes once, by one of them, and neither fails', async () => {
  const events = await plantEvents(db.pool, account.contaId, { count: 3_000, relayedAgo: '31 days' });
  await plantDeliveries(db.pool, { contaId: account.contaId, endpointId, eventIds: events, status: 'succeeded', completedAgo: '31 days',
    attempts: [{ ago: '31 days', status: 200 }] });
  await plantRequests(db.pool, { contaId: account.contaId, count: 12_000, ago: '31 days' });
  const [a, b] = await Promise.all([archiveEnded(db.pool, FROM_THE_START), archiveEnded(db.pool, FROM_THE_START)]);
  assert.is(a.events + b.events, 3_000, `${a.events} + ${b.events} events archived`);
  assert.is(await count(db.pool, sql.fragment`outbox_archive`), 3_000, 'each once');
  const [e, f] = await Promise.all([purge(db.pool, 'outbox_archive'), purge(db.pool, 'outbox_archive')]);
  assert.is(e + f, 3_000, `${e} + ${f} archived events deleted`);
  const [c, d] = await Promise.all([purge(db.pool, 'request_log'), purge(db.pool, 'request_log')]);
  assert.is(c + d, 12_000, `${c} + ${d} request log rows deleted`);
  assert.is(await count(db.pool, sql.fragment`outbox`), 0);
  assert.is(await count(db.pool, sql.fragment`request_log`), 0);
});

test('a purge never waits on a row someone holds: an expired record being replaced by a new request is skipped, and taken by the next run', async () => {
  await db.pool.query(sql.unsafe`
    INSERT INTO idempotency_keys (conta_id, chave_id, key, route, request_hash, status_code, created_at, expires_at)
    SELECT ${account.contaId}, ${account.chaveId}, 'k' || g, 'POST /v1/cotacoes', sha256(g::text::bytea), 201,
           now() - interval '25 hours', now() - interval '1 hour'
      FROM generate_series(1, 3) g`);
  const holder = await client();
  let outcome: 'done' | 'waited' = 'waited';
  let purge: Promise<void> = Promise.resolve();
  try {
    // The client reuses key k1 a day later: its new request replaces the expired record, and holds it until it commits.
    await holder.query('BEGIN');
    await holder.query(`SELECT api_idempotency_record($1, $2, 'k1', 'POST /v1/cotacoes', sha256('novo'::bytea), 201, NULL, NULL, NULL)`,
      [account.contaId, account.chaveId]);
    purge = run(idempotencyPurge);
    outcome = await withoutWaiting(purge);
    await holder.query('COMMIT');
  } finally {
    await holder.end();
    await purge;
  }
  assert.is(outcome, 'done', 'the purge waited for the request holding k1');
  const left = await db.pool.anyFirst(sql.type(z.object({ key: z.string() }))`SELECT key FROM idempotency_keys`);
  assert.equal(left, ['k1'], 'k1 now holds the new request (expiring in 24 hours)');
});

test('the README lists each purge with its job and schedule, as the worker registers them', async () => {
  const readme = await readFile(path.join(projectRoot, 'README.md'), 'utf8');
  const section = readme.split('### Retention and purges')[1]?.split('\n## ')[0] ?? '';
  for (const job of [idempotencyPurge, requestLogRetention, webhookMaintenance]) {
    assert.ok(jobs.includes(job), `${job.name} runs in the worker`);
    assert.match(section, `\`${job.name}\``);
    assert.match(section, `(\`${job.cron}\`)`);
  }
});

test.run();
