// request_log partitioned by day (issue 21, item 1; sql/code/partitions.sql): the release makes
// today's and tomorrow's partitions and the worker a week ahead, each once however many make them at
// once; a day with no partition never fails a request (its rows wait in the default partition and
// move into the day's partition when it comes); retention drops whole days, and deletes what the
// default partition kept of them.
import { randomUUID } from 'node:crypto';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { ensurePartitions, dropExpiredPartitions } from '#shared/db/partitions.ts';
import { sql } from '#shared/db/pool.ts';
import { purge } from '#shared/db/retention.ts';
import { createBoss } from '#shared/boss.ts';
import { createLogger } from '#shared/log.ts';
import { startWorker } from '../worker/main.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { createAccount, type TestAccount } from './helpers/fixtures.ts';

const test = suite('request_log partitioned by day');
let app: TestApp;
let conta: TestAccount;

test.before(async () => {
  app = await startTestApp();
  conta = await createAccount(app.db.pool);
});
test.after(() => app.stop());

const Names = z.object({ nomes: z.array(z.string()) });
const Count = z.object({ n: z.number() });

/** The partitions of every table partitioned by day (request_log and the webhook pipeline's archive), by name. */
const partitions = () => app.db.pool.oneFirst(sql.type(Names)`
  SELECT coalesce(array_agg(c.relname::text ORDER BY c.relname), '{}') AS nomes
    FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
   WHERE i.inhparent IN (SELECT t.table_name::regclass FROM daily_partitioned_tables() t)`);

/** The name of the partition `dias` days from today (UTC). */
const dia = (dias: number) => `request_log_${new Date(Date.now() + dias * 86_400_000).toISOString().slice(0, 10).replaceAll('-', '')}`;

const linhas = (tabela: string, requisicaoId?: string) => app.db.pool.oneFirst(sql.type(Count)`
  SELECT count(*)::int AS n FROM ${sql.identifier([tabela])} WHERE ${requisicaoId ? sql.fragment`requisicao_id = ${requisicaoId}` : sql.fragment`true`}`);

async function logRow(createdAt: string): Promise<string> {
  const id = randomUUID();
  await app.db.pool.query(sql.typeAlias('void')`
    INSERT INTO request_log (requisicao_id, conta_id, method, path, status, duration_ms, created_at)
    VALUES (${id}, ${conta.contaId}, 'GET', '/v1/saude', 200, 1, ${createdAt})`);
  return id;
}

test('the release made today\'s and tomorrow\'s partitions, beside the default one', async () => {
  const nomes = await partitions();
  assert.ok(nomes.includes(dia(0)) && nomes.includes(dia(1)) && nomes.includes('request_log_default'), nomes.join(', '));
});

test('the worker makes a week ahead, each partition once even when two make them at once', async () => {
  const antes = (await partitions()).length;
  const [a, b] = await Promise.all([ensurePartitions(app.db.pool), ensurePartitions(app.db.pool)]);
  const depois = await partitions();
  for (let d = 0; d <= 7; d++) assert.ok(depois.includes(dia(d)), `${dia(d)} made`);
  assert.is((a ?? 0) + (b ?? 0), depois.length - antes, 'each made once, by one of the two');
  assert.is(await ensurePartitions(app.db.pool), 0, 'and nothing when they all exist');
});

test('a day with no partition fails no request: its rows wait in the default partition, and move into the day\'s when it comes', async () => {
  await app.db.pool.query(sql.unsafe`DROP TABLE ${sql.identifier([dia(0)])}`);
  const res = await fetch(`${app.baseUrl}/saude`, { headers: { authorization: `Bearer ${conta.token}` } });
  assert.is(res.status, 200);
  const requisicaoId = res.headers.get('x-request-id') ?? '';
  await app.web.flush();
  assert.is(await linhas('request_log_default', requisicaoId), 1, 'logged in the default partition');

  assert.is(await ensurePartitions(app.db.pool), 1, 'today\'s partition made again');
  assert.is(await linhas('request_log_default', requisicaoId), 0);
  assert.is(await linhas(dia(0), requisicaoId), 1, 'the row moved into it');
  assert.is(await linhas('request_log', requisicaoId), 1, 'read through the table as before');
});

test('request ids are time-ordered (UUIDv7), so a day\'s rows land at the right edge of its indexes', async () => {
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) {
    const res = await fetch(`${app.baseUrl}/saude`, { headers: { authorization: `Bearer ${conta.token}` } });
    ids.push(res.headers.get('x-request-id') ?? '');
  }
  for (const id of ids) assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  assert.equal([...ids].sort(), ids, 'in the order they came');
});

test('retention drops the days past 30 whole, and deletes what the default partition kept of them', async () => {
  const velho = new Date(Date.now() - 40 * 86_400_000);
  await app.db.pool.query(sql.typeAlias('void')`SELECT ensure_day_partition('request_log', ${velho.toISOString().slice(0, 10)}::date)`);
  const naParticao = await logRow(velho.toISOString());
  const noPadrao = await logRow(new Date(Date.now() - 35 * 86_400_000).toISOString());
  const recente = await logRow(new Date(Date.now() - 29 * 86_400_000).toISOString());
  assert.is(await linhas('request_log_default', noPadrao), 1, 'a day with no partition: in the default one');

  const removidas = await dropExpiredPartitions(app.db.pool, 'request_log', 30);
  assert.equal(removidas, [dia(-40)]);
  assert.is(await linhas('request_log', naParticao), 0);
  assert.ok(await purge(app.db.pool, 'request_log') >= 1);
  assert.is(await linhas('request_log', noPadrao), 0, 'the default partition\'s old row deleted');
  assert.is(await linhas('request_log', recente), 1, 'a row within the 30 days kept');
  assert.ok((await partitions()).includes(dia(0)), 'today\'s partition untouched');
});

test('two workers dropping expired days at once: each day dropped by one of them, neither fails', async () => {
  const dias = [45, 44, 43].map((d) => new Date(Date.now() - d * 86_400_000).toISOString().slice(0, 10));
  for (const d of dias) await app.db.pool.query(sql.typeAlias('void')`SELECT ensure_day_partition('request_log', ${d}::date)`);
  const [a, b] = await Promise.all([
    dropExpiredPartitions(app.db.pool, 'request_log', 30),
    dropExpiredPartitions(app.db.pool, 'request_log', 30),
  ]);
  assert.equal([...a, ...b].sort(), [dia(-45), dia(-44), dia(-43)], 'each dropped once, by one of the two');
  const nomes = await partitions();
  for (const d of [dia(-45), dia(-44), dia(-43)]) assert.not.ok(nomes.includes(d), `${d} gone`);
});

test('a worker retires the partitions job\'s old queue and schedule (particoes-adiante, before migration 0025), and schedules partitions-ahead', async () => {
  const boss = createBoss(app.db.url);
  await boss.start();
  await boss.createQueue('particoes-adiante');
  await boss.schedule('particoes-adiante', '41 */6 * * *');
  await boss.stop({ graceful: false });
  const schedules = () => app.db.pool.anyFirst(sql.type(z.object({ name: z.string() }))`SELECT name FROM pgboss.schedule ORDER BY name`);
  const queues = () => app.db.pool.anyFirst(sql.type(z.object({ name: z.string() }))`SELECT name FROM pgboss.queue ORDER BY name`);
  assert.ok((await schedules()).includes('particoes-adiante'), 'an older version\'s schedule');
  const worker = await startWorker(app.config, app.db.url, createLogger('silent', 'test'));
  try {
    assert.not.ok((await schedules()).includes('particoes-adiante'));
    assert.not.ok((await queues()).includes('particoes-adiante'));
    assert.ok((await schedules()).includes('partitions-ahead'));
  } finally {
    await worker.stop();
  }
});

test.run();
