// Every minute: the webhook pipeline's ended work moves to its archive (shared/db/archive.ts), the
// archive's days past their retention are dropped (and what its default partitions kept of them
// deleted in batches), and hourly counters go after two days. (A dead worker's deliveries need
// nothing here: their leases run out.)
//
// The scan of relayed events goes on from where this process's last pass stopped, and from the
// start once a day: an event whose relay committed behind the scan (ARCHIVE_AFTER_SECONDS) is
// archived then.
import { archiveEnded, FROM_THE_START, type ArchiveCursor } from '#shared/db/archive.ts';
import { ARCHIVE_TABLES, dropExpiredPartitions } from '#shared/db/partitions.ts';
import { purge, RETENTION } from '#shared/db/retention.ts';
import type { JobDef } from './types.ts';

const FULL_SCAN_EVERY_MS = 86_400_000;

let cursor: ArchiveCursor = FROM_THE_START;
let fullScanAt = 0;

/** The next pass scans relayed events from the start, as the first pass of a process does. */
export function restartArchiveScan(): void {
  fullScanAt = 0;
}

export const webhookMaintenance: JobDef = {
  name: 'webhook-maintenance',
  cron: '* * * * *',
  handler: async (_jobs, { pool, log }) => {
    if (Date.now() - fullScanAt >= FULL_SCAN_EVERY_MS) {
      cursor = FROM_THE_START;
      fullScanAt = Date.now();
    }
    const archived = await archiveEnded(pool, cursor);
    cursor = archived.cursor;
    const dropped: string[] = [];
    for (const tabela of ARCHIVE_TABLES) dropped.push(...(await dropExpiredPartitions(pool, tabela, RETENTION.outboxDays)));
    const purged = await purge(pool, 'delivery_attempts_archive') + await purge(pool, 'deliveries_archive') + await purge(pool, 'outbox_archive');
    const counters = await purge(pool, 'webhook_hourly_usage');
    if (archived.deliveries + archived.events + dropped.length + purged + counters > 0) {
      log.info({ archived: { deliveries: archived.deliveries, events: archived.events }, dropped, purged, counters }, 'webhook maintenance');
    }
  },
};
