// The webhook pipeline's archive (sql/code/archive.sql;
// docs/decisions/0022-webhook-history-in-a-daily-archive.md): what has ended leaves the working
// tables for partitioned history, in batches that each commit, and a replay brings an archived
// event back.
import { z } from 'zod';
import { inBatches } from './retention.ts';
import { sql, type Db } from './pool.ts';

/**
 * How far the archiver's scan of relayed events has gone: (relayed_at, seq) of the last event read,
 * the time as PostgreSQL's text (it may be -infinity, which a Date cannot hold).
 */
export type ArchiveCursor = { relayedAt: string; seq: number };

/** The cursor of a scan from the start: every relayed event in the working table. */
export const FROM_THE_START: ArchiveCursor = { relayedAt: '-infinity', seq: 0 };

/**
 * Work stays in the working tables this long after it ended: a replay soon after finds it there,
 * and the scan of relayed events stays well behind the relays still running (a relay's transaction
 * commits its events with the instant it started).
 */
export const ARCHIVE_AFTER_SECONDS = 300;

const Ended = z.object({ locked: z.boolean(), deliveries: z.number(), events: z.number() });
const Scanned = z.object({ locked: z.boolean(), scanned: z.number(), events: z.number(), last_at: z.string(), last_seq: z.coerce.number() });

export type ArchivePass = { deliveries: number; events: number; cursor: ArchiveCursor; skipped: boolean };

/**
 * Archives what ended `afterSeconds` ago or before, in batches of `batch` (each its own
 * transaction): ended deliveries with their attempts and the events they leave with no delivery,
 * then relayed events with no delivery from `cursor` on. `skipped` when another archiver (or a
 * replay) held the lock: the next pass does the work.
 */
export async function archiveEnded(db: Db, cursor: ArchiveCursor, options: { afterSeconds?: number; batch?: number } = {}): Promise<ArchivePass> {
  const { afterSeconds = ARCHIVE_AFTER_SECONDS, batch = 1_000 } = options;
  const before = sql.fragment`now() - make_interval(secs => ${afterSeconds})`;
  let skipped = false;
  let events = 0;
  const deliveries = await inBatches(batch, async (limit) => {
    const r = await db.one(sql.type(Ended)`SELECT * FROM archive_ended_deliveries(${before}, ${limit})`);
    skipped ||= !r.locked;
    events += r.events;
    return r.deliveries;
  });
  let at = cursor;
  if (!skipped) {
    await inBatches(batch, async (limit) => {
      const r = await db.one(sql.type(Scanned)`
        SELECT locked, scanned, events, last_at::text AS last_at, last_seq
          FROM archive_relayed_events(${at.relayedAt}::timestamptz, ${at.seq}, ${before}, ${limit})`);
      skipped ||= !r.locked;
      events += r.events;
      at = { relayedAt: r.last_at, seq: r.last_seq };
      return r.scanned;
    });
  }
  return { deliveries, events, cursor: at, skipped };
}

/**
 * Brings an archived event back to the working tables with its deliveries and attempts (nothing
 * when it is not archived), holding the archiver off until the caller's transaction ends.
 */
export async function restoreEvent(tx: Db, contaId: string, eventId: string): Promise<boolean> {
  return tx.oneFirst(sql.type(z.object({ restored: z.boolean() }))`SELECT restore_event(${contaId}, ${eventId}) AS restored`);
}

/**
 * Brings back every archived event with a delivery that failed since `desde` (of one account or
 * all); how many. Holds the archiver off until the caller's transaction ends even when nothing is
 * archived: a failed delivery still in the working table is not moved while the caller makes it due.
 */
export async function restoreFailedSince(tx: Db, filtro: { desde: Date; contaId?: string }): Promise<number> {
  await tx.query(sql.typeAlias('void')`SELECT pg_advisory_xact_lock_shared(archive_lock())`);
  return tx.oneFirst(sql.type(z.object({ n: z.number() }))`
    SELECT count(*) FILTER (WHERE restore_event(x.conta_id, x.event_id))::int AS n
      FROM (SELECT DISTINCT conta_id, event_id FROM deliveries_archive
             WHERE status = 'failed' AND completed_at >= ${sql.timestamp(filtro.desde)}
               AND (${filtro.contaId ?? null}::uuid IS NULL OR conta_id = ${filtro.contaId ?? null}::uuid)) x`);
}
