// What the webhook pipeline's archive costs (issue 21, item 1; sql/code/archive.sql): events that
// ended, each with one delivery and its attempt, moved from the working tables to the archive by
// the worker's pass (archiveEnded), against what the same rows cost before the archive: deleted
// from the working tables 1,000 events at a time, the deliveries and attempts by cascade (the
// outbox's retention until then). Two databases of one embedded server, the same rows planted in
// each; time is one backend's (the passes run alone), WAL from the server. Reported, never asserted.
import pg from 'pg';
import { archiveEnded, FROM_THE_START } from '#shared/db/archive.ts';
import { createDatabasePool, sql, type Pool } from '#shared/db/pool.ts';
import { inBatches } from '#shared/db/retention.ts';
import { createAccount } from '../test/helpers/fixtures.ts';
import { plantDeliveries, plantEndpoint, plantEvents } from '../test/helpers/planted.ts';
import { benchDatabase, writeSection, writtenMark, writtenSince } from './lib.ts';

const EVENTS = Number(process.env.BENCH_ARCHIVE_EVENTS ?? 100_000);
const db = await benchDatabase('archive');
const beforeUrl = await db.sibling('delete');

async function plant(url: string): Promise<Pool> {
  const pool = await createDatabasePool(url, { size: 2, statementTimeoutMs: 3_600_000, applicationName: 'bench' });
  const account = await createAccount(pool);
  const endpointId = await plantEndpoint(pool, account);
  for (let done = 0; done < EVENTS; done += 10_000) {
    const events = await plantEvents(pool, account.contaId, { count: Math.min(10_000, EVENTS - done), relayedAgo: '31 days' });
    await plantDeliveries(pool, { contaId: account.contaId, endpointId, eventIds: events, status: 'succeeded', completedAgo: '31 days',
      attempts: [{ ago: '31 days', status: 200 }] });
  }
  await pool.query(sql.unsafe`VACUUM ANALYZE`);
  await pool.query(sql.unsafe`CHECKPOINT`);
  return pool;
}

async function measured(url: string, work: () => Promise<number>): Promise<{ rows: number; ms: number; wal: number }> {
  const mark = await writtenMark(url);
  const t = performance.now();
  const rows = await work();
  const ms = performance.now() - t;
  return { rows, ms, wal: (await writtenSince(url, mark, 1)).walBytes };
}

const archivePool = await plant(db.url);
const deletePool = await plant(beforeUrl);
const archived = await measured(db.url, async () => (await archiveEnded(archivePool, FROM_THE_START)).events);
// The outbox's purge before the archive (shared/db/retention.ts until then).
const deleted = await measured(beforeUrl, () => inBatches(1_000, async (limit) => (await deletePool.query(sql.unsafe`
  DELETE FROM outbox WHERE (conta_id, id) IN (
    SELECT conta_id, id FROM outbox WHERE relayed_at < now() - interval '30 days' LIMIT ${limit} FOR UPDATE SKIP LOCKED)`)).rowCount));
const admin = new pg.Client({ connectionString: db.url });
await admin.connect();
const size = async (tables: string[]) => Number((await admin.query<{ b: string }>(
  `SELECT sum(pg_total_relation_size(c.oid))::bigint AS b FROM pg_class c
    WHERE c.relname = ANY ($1) OR c.oid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent::regclass::text = ANY ($1))`, [tables])).rows[0]?.b ?? 0);
const archiveBytes = await size(['outbox_archive', 'deliveries_archive', 'delivery_attempts_archive']);
await admin.end();
await archivePool.end();
await deletePool.end();
await db.stop();

const per = (x: number, n: number) => x / Math.max(1, n);
await writeSection('archive', `## The webhook pipeline's archive: moving what has ended (issue 21)

${EVENTS.toLocaleString('en-US')} ended events, each with one delivery and its attempt, in the working tables of two databases of one
embedded PostgreSQL. In one, the worker's pass moves them to the archive partitioned by day (\`archiveEnded\`: 1,000
deliveries a statement, with their attempts and events); in the other, they are deleted 1,000 events at a time with their
deliveries and attempts by cascade, as the outbox's retention did before the archive. Each alone on the machine.

| per event (with its delivery and attempt) | moved to the archive | deleted (before the archive) |
| --- | ---: | ---: |
| time of one backend | **${Math.round(per(archived.ms * 1000, archived.rows))} µs** | ${Math.round(per(deleted.ms * 1000, deleted.rows))} µs |
| WAL | **${Math.round(per(archived.wal, archived.rows)).toLocaleString('en-US')} B** | ${Math.round(per(deleted.wal, deleted.rows)).toLocaleString('en-US')} B |
| events | ${archived.rows.toLocaleString('en-US')} | ${deleted.rows.toLocaleString('en-US')} |

The archive then holds them in ${Math.round(archiveBytes / 1048576)} MB (about ${Math.round(per(archiveBytes, archived.rows))} B an event with its delivery and
attempt, indexes included) until its day is dropped, which costs a catalog change (growth section). The move is paid once
per event, a few minutes after its end, in the worker's pass; the delete it replaces came 30 days later.`);
