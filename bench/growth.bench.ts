// Growth (issue 21, item 1): the request log and the archive of events filled to tens of millions
// of rows, as 30 days at a few hundred requests a second leave them. Admission (GET /v1/saude) and
// stock movements are measured through a real web process on the empty tables and again on the full
// ones; then one day's purge of each: by dropping its day's partitions, against the same day's rows
// deleted in batches from an unpartitioned copy (what retention did before). While each purge runs,
// a probe inserts a request log row every millisecond and notes the longest wait. Figures are
// reported, never asserted.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { z } from 'zod';
import { ARCHIVE_TABLES, dropExpiredPartitions } from '#shared/db/partitions.ts';
import { inBatches } from '#shared/db/retention.ts';
import { createDatabasePool, sql, type Pool } from '#shared/db/pool.ts';
import { criarProdutoCompleto, definirSaldo } from '../test/helpers/catalogo.ts';
import { createAccount, createPlan } from '../test/helpers/fixtures.ts';
import { benchDatabase, cpuCell, load, procfileNodeArgs, spawnServer, writeSection, writtenMark, writtenSince, type LoadResult } from './lib.ts';

const ACCOUNTS = 20;
const DAYS = 30;
const LOG_ROWS = Number(process.env.BENCH_GROWTH_LOG_ROWS ?? 20_000_000);
const OUTBOX_ROWS = Number(process.env.BENCH_GROWTH_OUTBOX_ROWS ?? 10_000_000);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 12);
const started = performance.now();
const log = (line: string) => process.stdout.write(`[${((performance.now() - started) / 1000).toFixed(0).padStart(4)} s] ${line}\n`);

const db = await benchDatabase('growth');
// The same service on an empty database beside the full one, on the same server: the two are
// measured in turn, so the machine's drift falls on both alike.
const emptyUrl = await db.sibling('empty');
const pool = await createDatabasePool(db.url, { size: 4, statementTimeoutMs: 3_600_000, applicationName: 'bench' });
const emptyPool = await createDatabasePool(emptyUrl, { size: 4, statementTimeoutMs: 3_600_000, applicationName: 'bench' });
type Account = { contaId: string; token: string; variacao: string };
async function setUp(p: Pool): Promise<Account[]> {
  await createPlan(p, 'bench_growth', {
    chaves_ativas: 10, leituras_por_minuto: 100_000_000, escritas_por_minuto: 100_000_000, chamadas_por_mes: 2_000_000_000,
    rajada: 1_000_000, rajada_recarga_por_segundo: 1_000_000, simultaneas_por_chave: 1000, simultaneas_por_conta: 1000,
  });
  const made: Account[] = [];
  for (let i = 0; i < ACCOUNTS; i++) {
    const account = await createAccount(p, { plano: 'bench_growth', escopos: ['estoque:escrever'] });
    const produto = await criarProdutoCompleto(p, account.contaId, { variacoes: Array.from({ length: 10 }, () => ({})) });
    const variacao = produto.variacoes[0]?.id ?? '';
    await definirSaldo(p, account.contaId, variacao, 100_000_000);
    made.push({ contaId: account.contaId, token: account.token, variacao });
  }
  return made;
}
const accounts = await setUp(pool);
const emptyAccounts = await setUp(emptyPool);

const webFlags = await procfileNodeArgs('web');
const server = await spawnServer('api/main.ts', { DATABASE_URL: db.url }, '/v1/openapi.json', webFlags);
const emptyServer = await spawnServer('api/main.ts', { DATABASE_URL: emptyUrl }, '/v1/openapi.json', webFlags);

function saude(of: readonly Account[]) {
  let n = 0;
  return (req: Record<string, any>) => ({ ...req, method: 'GET', path: '/v1/saude',
    headers: { authorization: `Bearer ${(of[n++ % ACCOUNTS] as Account).token}` } });
}
function movimentos(of: readonly Account[]) {
  let n = 0;
  return (req: Record<string, any>) => {
    const a = of[n++ % ACCOUNTS] as Account;
    return {
      ...req, method: 'POST', path: '/v1/estoque/movimentos',
      headers: { authorization: `Bearer ${a.token}`, 'content-type': 'application/json', 'idempotency-key': randomUUID() },
      body: JSON.stringify({ tipo: n % 2 ? 'saida' : 'entrada', variacao_id: a.variacao, quantidade: 1, motivo: 'correcao' }),
    };
  };
}
type Pair = { saude: LoadResult; movimentos: LoadResult };
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
/** The run with the median rate (the machine's speed drifts from run to run). */
const median = (runs: LoadResult[]) => [...runs].sort((a, b) => a.rps - b.rps)[Math.floor(runs.length / 2)] as LoadResult;
/** Each load on the empty and the full database in turn, ROUNDS times: the median run of each. */
async function measure(): Promise<{ empty: Pair; full: Pair }> {
  for (const p of [pool, emptyPool]) {
    await p.query(sql.unsafe`VACUUM ANALYZE`);
    await p.query(sql.unsafe`CHECKPOINT`);
  }
  const runs = { empty: { saude: [] as LoadResult[], movimentos: [] as LoadResult[] }, full: { saude: [] as LoadResult[], movimentos: [] as LoadResult[] } };
  const targets = [['empty', emptyServer.url, emptyAccounts], ['full', server.url, accounts]] as const;
  for (let i = 0; i < ROUNDS; i++) {
    for (const kind of ['saude', 'movimentos'] as const) {
      for (const [which, url, of] of targets) {
        runs[which][kind].push(await load({ url, connections: 50, seconds: SECONDS, setupRequest: kind === 'saude' ? saude(of) : movimentos(of) }));
      }
    }
  }
  for (const which of ['empty', 'full'] as const) {
    log(`${which}: GET /v1/saude ${runs[which].saude.map((r) => r.rps).join(', ')} req/s, POST /v1/estoque/movimentos ${runs[which].movimentos.map((r) => r.rps).join(', ')} req/s`);
  }
  return {
    empty: { saude: median(runs.empty.saude), movimentos: median(runs.empty.movimentos) },
    full: { saude: median(runs.full.saude), movimentos: median(runs.full.movimentos) },
  };
}

const Sizes = z.object({ request_log: z.number(), outbox: z.number(), log_mb: z.number(), outbox_mb: z.number() });
const sizes = () => pool.one(sql.type(Sizes)`
  SELECT (SELECT count(*) FROM request_log)::int AS request_log, (SELECT count(*) FROM eventos)::int AS outbox,
         (SELECT coalesce(sum(pg_total_relation_size(inhrelid)), 0) FROM pg_inherits WHERE inhparent = 'request_log'::regclass)::float8 / 1048576 AS log_mb,
         ((SELECT coalesce(sum(pg_total_relation_size(inhrelid)), 0) FROM pg_inherits WHERE inhparent = 'outbox_archive'::regclass)
           + pg_total_relation_size('outbox'))::float8 / 1048576 AS outbox_mb`);

const emptySizes = await sizes();

// 30 days of history, one partition a day, rows in time order within each day, with ids that are
// UUIDv7 of their time (as the web process makes them).
/** Midnight (UTC) `ago` days ago, as the database's date. */
const day = (ago: number) => sql.fragment`${new Date(Date.now() - ago * 86_400_000).toISOString().slice(0, 10)}::date`;
log(`filling: ${LOG_ROWS} request log rows and ${OUTBOX_ROWS} events over ${DAYS} days`);
const perDayLog = Math.floor(LOG_ROWS / DAYS);
const perDayOutbox = Math.floor(OUTBOX_ROWS / DAYS);
const contas = sql.array(accounts.map((a) => a.contaId), 'uuid');
for (let ago = DAYS; ago >= 1; ago--) {
  await pool.query(sql.unsafe`SELECT ensure_day_partition('request_log', ${day(ago)})`);
  for (const tabela of ARCHIVE_TABLES) await pool.query(sql.unsafe`SELECT ensure_day_partition(${tabela}, ${day(ago)})`);
  await pool.query(sql.unsafe`
    INSERT INTO request_log (requisicao_id, conta_id, chave_id, method, route, path, status, codigo, cost, duration_ms, ip, created_at)
    SELECT (lpad(to_hex((extract(epoch FROM t) * 1000)::bigint), 12, '0') || '7' || substr(h, 1, 3) || '8' || substr(h, 4, 15))::uuid,
           (${contas}::uuid[])[1 + g % ${ACCOUNTS}], NULL, 'GET', '/saude', '/v1/saude', 200, NULL, 1, 1.5, '127.0.0.1', t
      FROM generate_series(1, ${perDayLog}) g,
           LATERAL (SELECT (${day(ago)})::timestamp AT TIME ZONE 'UTC' + (g::float8 / ${perDayLog}) * interval '1 day' AS t,
                           md5(g::text || ${ago}::text) AS h) x`);
  await pool.query(sql.unsafe`
    INSERT INTO outbox_archive (conta_id, id, seq, tipo, dados, available_at, relayed_at, criado_em, encerrado_em)
    SELECT (${contas}::uuid[])[1 + g % ${ACCOUNTS}], gen_random_uuid(), g, 'cotacao.criada',
           jsonb_build_object('objeto', 'cotacao', 'id', gen_random_uuid(), 'codigo', 'COT-' || g, 'status', 'enviada'), t, t, t, t
      FROM generate_series(1, ${perDayOutbox}) g,
           LATERAL (SELECT (${day(ago)})::timestamp AT TIME ZONE 'UTC' + (g::float8 / ${perDayOutbox}) * interval '1 day' AS t) x`);
  if (ago % 5 === 0) log(`  ${DAYS - ago + 1} of ${DAYS} days filled`);
}
const fullSizes = await sizes();
const { empty, full } = await measure();

// The longest an insert into the request log waited while `work` ran: a probe inserting a row every
// millisecond on its own connection.
async function probed<T>(work: () => Promise<T>): Promise<{ result: T; ms: number; longestInsertMs: number; inserts: number }> {
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  let stop = false;
  let longest = 0;
  let inserts = 0;
  const probe = (async () => {
    while (!stop) {
      const t = performance.now();
      await client.query(`INSERT INTO request_log (requisicao_id, method, path, status, duration_ms, created_at)
                          VALUES (gen_random_uuid(), 'GET', '/v1/saude', 200, 1, now())`);
      longest = Math.max(longest, performance.now() - t);
      inserts++;
      await new Promise((r) => setTimeout(r, 1));
    }
  })();
  await new Promise((r) => setTimeout(r, 200));
  const t = performance.now();
  const result = await work();
  const ms = performance.now() - t;
  stop = true;
  await probe;
  await client.end();
  return { result, ms, longestInsertMs: longest, inserts };
}

// The purge as it was: the oldest day's rows in an unpartitioned table with the request log's
// indexes (that day and the next), deleted 5,000 at a time, each batch its own transaction.
await pool.query(sql.unsafe`CREATE TABLE request_log_heap (LIKE request_log INCLUDING ALL)`);
await pool.query(sql.unsafe`INSERT INTO request_log_heap SELECT * FROM request_log
  WHERE created_at >= (${day(DAYS)})::timestamp AT TIME ZONE 'UTC' AND created_at < (${day(DAYS - 2)})::timestamp AT TIME ZONE 'UTC' ORDER BY created_at`);
await pool.query(sql.unsafe`VACUUM ANALYZE request_log_heap`);
await pool.query(sql.unsafe`CHECKPOINT`);
let mark = await writtenMark(db.url);
const deleted = await probed(() => inBatches(5_000, async (limit) => (await pool.query(sql.unsafe`
  DELETE FROM request_log_heap WHERE (requisicao_id, created_at) IN (
    SELECT requisicao_id, created_at FROM request_log_heap WHERE created_at < (${day(DAYS - 1)})::timestamp AT TIME ZONE 'UTC' LIMIT ${limit} FOR UPDATE SKIP LOCKED)`)).rowCount));
const deletedWal = await writtenSince(db.url, mark, 1);
log(`DELETE of one day (${deleted.result} rows) in batches: ${Math.round(deleted.ms)} ms, WAL ${Math.round(deletedWal.walBytes / 1048576)} MB; longest insert meanwhile ${deleted.longestInsertMs.toFixed(1)} ms`);

await pool.query(sql.unsafe`CHECKPOINT`);
mark = await writtenMark(db.url);
const dropped = await probed(() => dropExpiredPartitions(pool, 'request_log', DAYS - 1));
const droppedWal = await writtenSince(db.url, mark, 1);
log(`partition drop of one day (${dropped.result.join(', ')}): ${Math.round(dropped.ms)} ms, WAL ${Math.round(droppedWal.walBytes / 1024)} KB; longest insert meanwhile ${dropped.longestInsertMs.toFixed(1)} ms`);

// The events' archive, likewise: one day's partitions dropped, against the same day's events deleted
// 1,000 at a time from an unpartitioned copy (the outbox's retention before the archive).
await pool.query(sql.unsafe`CREATE TABLE outbox_heap (LIKE outbox_archive INCLUDING ALL)`);
await pool.query(sql.unsafe`INSERT INTO outbox_heap SELECT * FROM outbox_archive
  WHERE encerrado_em >= (${day(DAYS - 1)})::timestamp AT TIME ZONE 'UTC' AND encerrado_em < (${day(DAYS - 3)})::timestamp AT TIME ZONE 'UTC' ORDER BY encerrado_em`);
await pool.query(sql.unsafe`VACUUM ANALYZE outbox_heap`);
await pool.query(sql.unsafe`CHECKPOINT`);
mark = await writtenMark(db.url);
const outboxDeleted = await probed(() => inBatches(1_000, async (limit) => (await pool.query(sql.unsafe`
  DELETE FROM outbox_heap WHERE (conta_id, id) IN (
    SELECT conta_id, id FROM outbox_heap WHERE encerrado_em < (${day(DAYS - 2)})::timestamp AT TIME ZONE 'UTC' LIMIT ${limit} FOR UPDATE SKIP LOCKED)`)).rowCount));
const outboxDeletedWal = await writtenSince(db.url, mark, 1);
log(`events DELETE of one day (${outboxDeleted.result}) in batches: ${Math.round(outboxDeleted.ms)} ms, WAL ${Math.round(outboxDeletedWal.walBytes / 1048576)} MB`);
await pool.query(sql.unsafe`CHECKPOINT`);
mark = await writtenMark(db.url);
const outboxDropped = await probed(async () => {
  const names: string[] = [];
  for (const tabela of ARCHIVE_TABLES) names.push(...(await dropExpiredPartitions(pool, tabela, DAYS - 1)));
  return names;
});
const outboxDroppedWal = await writtenSince(db.url, mark, 1);
log(`archive partitions drop of one day (${outboxDropped.result.join(', ')}): ${Math.round(outboxDropped.ms)} ms, WAL ${Math.round(outboxDroppedWal.walBytes / 1024)} KB`);

await server.stop();
await emptyServer.stop();
await emptyPool.end();
await pool.end();
await db.stop();

const ratio = (a: number, b: number) => (b ? (a / b).toFixed(2) : '?');
const row = (name: string, e: LoadResult, f: LoadResult) =>
  `| ${name} | ${e.rps} | ${f.rps} | **${ratio(f.rps, e.rps)}** | ${e.p99} / ${f.p99} | ${cpuCell(e)} / ${cpuCell(f)} |`;
await writeSection('growth', `## Growth: the request log and the events' archive at tens of millions of rows (issue 21)

One web process (Procfile flags, DB_POOL_SIZE 10), ${ACCOUNTS} accounts, 50 connections, ${SECONDS} s per run after 2 s of
warm-up, PostgreSQL embedded on the same machine. The same service on two databases of that server, one empty and one full,
each load run on both in turn ${ROUNDS} times and the median run of each shown. "Full" is ${fullSizes.request_log.toLocaleString('en-US')} request log rows (${Math.round(fullSizes.log_mb).toLocaleString('en-US')} MB with
indexes, ${DAYS} daily partitions of ${perDayLog.toLocaleString('en-US')}) and ${fullSizes.outbox.toLocaleString('en-US')} archived events (${Math.round(fullSizes.outbox_mb).toLocaleString('en-US')} MB, ${DAYS} daily partitions): a month at about
${Math.round(perDayLog / 86_400)} requests/s (a day at 500 requests/s is 43 million rows; what matters here is the tables' size); "empty" is the other database, as the full one was before its fill (${emptySizes.request_log} log rows,
${emptySizes.outbox} events). Both after VACUUM ANALYZE and a checkpoint. Goal: full within 10 % of empty.

| request | empty req/s | full req/s | full / empty | p99 ms empty / full | CPU µs per request, empty / full |
| --- | ---: | ---: | ---: | ---: | --- |
${row('GET /v1/saude (admission and the request log)', empty.saude, full.saude)}
${row('POST /v1/estoque/movimentos', empty.movimentos, full.movimentos)}

One day's purge, alone on the machine but for a probe inserting a request log row every millisecond
on its own connection (the longest of its inserts says what the purge held up):

| purge | rows | time | WAL | longest probe insert |
| --- | ---: | ---: | ---: | ---: |
| request log, partition dropped (\`drop_expired_partitions\`) | ${perDayLog.toLocaleString('en-US')} | ${Math.round(dropped.ms)} ms | ${Math.round(droppedWal.walBytes / 1024)} KB | ${dropped.longestInsertMs.toFixed(1)} ms (${dropped.inserts} inserts) |
| request log, the same day's rows deleted 5,000 at a time from an unpartitioned copy (the retention before) | ${deleted.result.toLocaleString('en-US')} | ${Math.round(deleted.ms).toLocaleString('en-US')} ms | ${Math.round(deletedWal.walBytes / 1048576)} MB | ${deleted.longestInsertMs.toFixed(1)} ms (${deleted.inserts} inserts) |
| events' archive, one day's partitions dropped (three tables, the day's deliveries and attempts partitions empty here) | ${perDayOutbox.toLocaleString('en-US')} | ${Math.round(outboxDropped.ms)} ms | ${Math.round(outboxDroppedWal.walBytes / 1024)} KB | ${outboxDropped.longestInsertMs.toFixed(1)} ms (${outboxDropped.inserts} inserts) |
| events, the same day's rows deleted 1,000 at a time from an unpartitioned copy (the outbox's retention before the archive) | ${outboxDeleted.result.toLocaleString('en-US')} | ${Math.round(outboxDeleted.ms).toLocaleString('en-US')} ms | ${Math.round(outboxDeletedWal.walBytes / 1048576)} MB | ${outboxDeleted.longestInsertMs.toFixed(1)} ms (${outboxDeleted.inserts} inserts) |

- Dropping a partition takes the parent's lock for the length of a catalog change, waiting at most
  2 s for it (\`lock_timeout\`; a drop that would wait longer is left to the next run); the DELETE
  locks rows 5,000 at a time, but writes every deleted row to the WAL and leaves the heap and its
  indexes to vacuum.
- The unpartitioned copy holds two days, not thirty: a DELETE's cost is per row deleted (its index
  entries and WAL), so a thirty-day heap would cost at least as much.`);
