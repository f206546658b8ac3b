// Idempotency records partitioned by day, or not
// (docs/decisions/0020-retention-in-short-batches.md): the table lives 24 hours and is read on
// every write that carries an Idempotency-Key (admission's check and the claim) and written once.
// Partitioned by day, the purge would drop a day instead of deleting every 15 minutes; what every
// write would pay instead is measured here, side by side in one run: the claim's lookup and the
// record's insert on the table as it is and on a copy partitioned by day (yesterday, today,
// tomorrow and a default partition), each call its own transaction on one connection; then the
// 15-minute purge of the table as it is (deleted 5,000 at a time, as the worker does) against
// dropping a day's partition. Figures are reported, never asserted.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { sql, createDatabasePool } from '#shared/db/pool.ts';
import { inBatches } from '#shared/db/retention.ts';
import { createAccount } from '../test/helpers/fixtures.ts';
import { benchDatabase, writeSection, writtenMark, writtenSince } from './lib.ts';

const ROWS = Number(process.env.BENCH_IDEMPOTENCY_ROWS ?? 4_000_000);
const CALLS = Number(process.env.BENCH_IDEMPOTENCY_CALLS ?? 20_000);
const ROUNDS = 3;
const started = performance.now();
const log = (line: string) => process.stdout.write(`[${((performance.now() - started) / 1000).toFixed(0).padStart(4)} s] ${line}\n`);

const db = await benchDatabase('idempotency');
const pool = await createDatabasePool(db.url, { size: 2, statementTimeoutMs: 3_600_000, applicationName: 'bench' });
const conta = await createAccount(pool);

// 24 hours of records of one key at an even rate, as the table holds them at any time; the copy
// partitioned by day of created_at holds the same rows (the primary key takes the partition key).
log(`filling ${ROWS.toLocaleString('en-US')} records over 24 hours, and the partitioned copy`);
await pool.query(sql.unsafe`
  INSERT INTO idempotency_keys (conta_id, chave_id, key, route, request_hash, status_code, created_at, expires_at)
  SELECT ${conta.contaId}, ${conta.chaveId}, 'k' || g, 'postEstoqueMovimento', sha256(g::text::bytea), 201, t, t + interval '24 hours'
    FROM generate_series(1, ${ROWS}) g, LATERAL (SELECT now() - (g::float8 / ${ROWS}) * interval '24 hours' AS t) x`);
const day = (offset: number) => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10);
await pool.query(sql.unsafe`
  CREATE TABLE idempotency_por_dia (LIKE idempotency_keys INCLUDING DEFAULTS INCLUDING CONSTRAINTS) PARTITION BY RANGE (created_at)`);
await pool.query(sql.unsafe`ALTER TABLE idempotency_por_dia ADD PRIMARY KEY (conta_id, chave_id, key, created_at)`);
await pool.query(sql.unsafe`CREATE INDEX ON idempotency_por_dia (expires_at)`);
await pool.query(sql.unsafe`ALTER TABLE idempotency_por_dia ADD FOREIGN KEY (conta_id, chave_id) REFERENCES chaves_api (conta_id, id) ON DELETE CASCADE`);
await pool.query(sql.unsafe`CREATE TABLE idempotency_por_dia_padrao PARTITION OF idempotency_por_dia DEFAULT`);
for (const [name, from, to] of [['ontem', -1, 0], ['hoje', 0, 1], ['amanha', 1, 2]] as const) {
  await pool.query(sql.unsafe`CREATE TABLE ${sql.identifier([`idempotency_por_dia_${name}`])} PARTITION OF idempotency_por_dia
    FOR VALUES FROM (${sql.literalValue(`${day(from)} 00:00:00+00`)}) TO (${sql.literalValue(`${day(to)} 00:00:00+00`)})`);
}
await pool.query(sql.unsafe`INSERT INTO idempotency_por_dia SELECT * FROM idempotency_keys`);
// The claim's lookup (api_write_claim, sql/code/idempotency.sql) on either table; the partitioned
// one also bounds created_at, which prunes it to the days a live record can be in.
await pool.query(sql.unsafe`
  CREATE FUNCTION bench_claim_heap(p_conta uuid, p_chave uuid, p_key text) RETURNS boolean LANGUAGE plpgsql AS $$
  BEGIN
    PERFORM FROM idempotency_keys i WHERE i.conta_id = p_conta AND i.chave_id = p_chave AND i.key = p_key AND i.expires_at > now();
    RETURN FOUND;
  END $$`);
await pool.query(sql.unsafe`
  CREATE FUNCTION bench_claim_por_dia(p_conta uuid, p_chave uuid, p_key text) RETURNS boolean LANGUAGE plpgsql AS $$
  BEGIN
    PERFORM FROM idempotency_por_dia i WHERE i.conta_id = p_conta AND i.chave_id = p_chave AND i.key = p_key AND i.expires_at > now()
                                         AND i.created_at > now() - interval '24 hours';
    RETURN FOUND;
  END $$`);
await pool.query(sql.unsafe`VACUUM ANALYZE idempotency_keys`);
await pool.query(sql.unsafe`VACUUM ANALYZE idempotency_por_dia`);
await pool.query(sql.unsafe`CHECKPOINT`);

// Each call its own transaction, on one connection of its own (what a request's statement pays,
// locks included); the round trip is the same for both tables, so the difference is the table's.
const client = new pg.Client({ connectionString: db.url });
await client.connect();
await client.query('SET synchronous_commit = off');
async function timed(text: string, args: (i: number) => unknown[]): Promise<number> {
  for (let i = 0; i < 500; i++) await client.query({ name: text.slice(0, 60), text, values: args(i) });
  const t = performance.now();
  for (let i = 0; i < CALLS; i++) await client.query({ name: text.slice(0, 60), text, values: args(i) });
  return ((performance.now() - t) * 1000) / CALLS;
}
const existing = (i: number) => [conta.contaId, conta.chaveId, `k${1 + ((i * 7919) % ROWS)}`];
const fresh = (table: string) => (i: number) => [conta.contaId, conta.chaveId, `${table}-${i}-${randomUUID()}`];
const insert = (table: string) => `INSERT INTO ${table} (conta_id, chave_id, key, route, request_hash, status_code)
  VALUES ($1, $2, $3::text, 'postEstoqueMovimento', sha256(convert_to($3::text, 'UTF8')), 201)`;
const results = { heap: { claim: [] as number[], insert: [] as number[] }, porDia: { claim: [] as number[], insert: [] as number[] } };
for (let round = 1; round <= ROUNDS; round++) {
  results.heap.claim.push(await timed('SELECT bench_claim_heap($1, $2, $3)', existing));
  results.porDia.claim.push(await timed('SELECT bench_claim_por_dia($1, $2, $3)', existing));
  results.heap.insert.push(await timed(insert('idempotency_keys'), fresh('heap')));
  results.porDia.insert.push(await timed(insert('idempotency_por_dia'), fresh('por_dia')));
  log(`round ${round}: claim ${results.heap.claim.at(-1)?.toFixed(1)} / ${results.porDia.claim.at(-1)?.toFixed(1)} µs, insert ${results.heap.insert.at(-1)?.toFixed(1)} / ${results.porDia.insert.at(-1)?.toFixed(1)} µs`);
}
await client.end();
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

// The purge as the worker runs it every 15 minutes: the records that expired in 15 minutes.
await pool.query(sql.unsafe`UPDATE idempotency_keys SET expires_at = now() - interval '1 second'
  WHERE created_at < (SELECT min(created_at) FROM idempotency_keys) + interval '15 minutes'`);
await pool.query(sql.unsafe`VACUUM ANALYZE idempotency_keys`);
await pool.query(sql.unsafe`CHECKPOINT`);
let mark = await writtenMark(db.url);
let t = performance.now();
const purged = await inBatches(5_000, async (limit) => (await pool.query(sql.unsafe`
  DELETE FROM idempotency_keys WHERE (conta_id, chave_id, key) IN (
    SELECT conta_id, chave_id, key FROM idempotency_keys WHERE expires_at <= now() LIMIT ${limit} FOR UPDATE SKIP LOCKED)`)).rowCount);
const purgeMs = performance.now() - t;
const purgeWal = (await writtenSince(db.url, mark, 1)).walBytes;
log(`purge of 15 minutes (${purged} records): ${Math.round(purgeMs)} ms, WAL ${Math.round(purgeWal / 1048576)} MB`);
await pool.query(sql.unsafe`CHECKPOINT`);
const dayRows = await pool.oneFirst(sql.unsafe`SELECT count(*)::int FROM idempotency_por_dia_ontem`) as number;
mark = await writtenMark(db.url);
t = performance.now();
await pool.query(sql.unsafe`DROP TABLE idempotency_por_dia_ontem`);
const dropMs = performance.now() - t;
const dropWal = (await writtenSince(db.url, mark, 1)).walBytes;
log(`drop of a day's partition (${dayRows} records): ${Math.round(dropMs)} ms, WAL ${Math.round(dropWal / 1024)} KB`);

await pool.end();
await db.stop();

const claimHeap = median(results.heap.claim);
const claimDia = median(results.porDia.claim);
const insertHeap = median(results.heap.insert);
const insertDia = median(results.porDia.insert);
const purgePerRow = (purgeMs * 1000) / Math.max(1, purged);
// A write with a key reads the table twice (admission's check, the claim) and inserts once.
const perWrite = 2 * (claimDia - claimHeap) + (insertDia - insertHeap);
await writeSection('idempotency', `## Idempotency records: partitioned by day, or not (issue 21)

${ROWS.toLocaleString('en-US')} records of one key over 24 hours, in \`idempotency_keys\` as it is and in a copy partitioned
by day of \`created_at\` (yesterday, today, tomorrow and a default partition; the primary key with \`created_at\`). PostgreSQL
embedded on the same machine; ${CALLS.toLocaleString('en-US')} calls per run, each its own transaction on one connection
(\`synchronous_commit\` off), the two tables in turn ${ROUNDS} times, medians shown. The round trip is the same for both: the
difference is the table's.

| per call | as it is | partitioned by day | difference |
| --- | ---: | ---: | ---: |
| the claim's lookup of a live record (\`api_write_claim\`'s, in PL/pgSQL) | ${claimHeap.toFixed(1)} µs | ${claimDia.toFixed(1)} µs | ${(claimDia - claimHeap).toFixed(1)} µs |
| the record's insert | ${insertHeap.toFixed(1)} µs | ${insertDia.toFixed(1)} µs | ${(insertDia - insertHeap).toFixed(1)} µs |

| retention | records | time | WAL | per record |
| --- | ---: | ---: | ---: | ---: |
| 15 minutes' expired records deleted 5,000 at a time (\`idempotency-purge\`, as it is) | ${purged.toLocaleString('en-US')} | ${Math.round(purgeMs).toLocaleString('en-US')} ms | ${Math.round(purgeWal / 1048576)} MB | ${purgePerRow.toFixed(1)} µs, ${Math.round(purgeWal / Math.max(1, purged))} B |
| a day's partition dropped | ${dayRows.toLocaleString('en-US')} | ${Math.round(dropMs)} ms | ${Math.round(dropWal / 1024)} KB | — |

A write with an Idempotency-Key reads the table twice (admission's check and the claim) and
inserts once: partitioned, it would pay about **${perWrite.toFixed(1)} µs** more of PostgreSQL, against the
**${purgePerRow.toFixed(1)} µs** the purge spends per record it deletes (every record is deleted once).`);
