// Periodic upkeep of the webhook tables: deliveries whose job was lost, old hourly counters, and
// the retention of relayed events (their deliveries and attempts go with them).
import { z } from 'zod';
import { sql, type Db } from './pool.ts';

export const OUTBOX_RETENTION_DAYS = 30;

const Enqueued = z.object({ conta_id: z.string(), id: z.string(), job_id: z.string() });

/** Pending deliveries enqueued over an hour ago: their job should long have run. */
export async function longEnqueuedDeliveries(db: Db, limit: number): Promise<readonly z.infer<typeof Enqueued>[]> {
  return db.any(sql.type(Enqueued)`
    SELECT conta_id, id, job_id FROM deliveries
     WHERE status = 'pending' AND job_id IS NOT NULL AND run_attempts >= 0 -- matches deliveries_enqueued
       AND next_attempt_at < now() - interval '1 hour'
     ORDER BY next_attempt_at LIMIT ${limit}`);
}

/** Takes a lost job off its delivery (if it still names it) so the scheduler enqueues a new one. */
export async function forgetJob(db: Db, contaId: string, deliveryId: string, jobId: string): Promise<boolean> {
  const result = await db.query(sql.typeAlias('void')`
    UPDATE deliveries SET job_id = NULL
     WHERE conta_id = ${contaId} AND id = ${deliveryId} AND job_id = ${jobId} AND status = 'pending'`);
  return result.rowCount > 0;
}

export async function deleteOldHourlyCounters(db: Db): Promise<number> {
  const result = await db.query(sql.typeAlias('void')`
    DELETE FROM webhook_uso_por_hora WHERE hora < now() - interval '2 days'`);
  return result.rowCount;
}

/** Deletes one batch of events relayed before the retention period with no delivery still pending. */
export async function deleteOldEvents(db: Db, batch: number): Promise<number> {
  const result = await db.query(sql.typeAlias('void')`
    DELETE FROM outbox WHERE (conta_id, id) IN (
      SELECT o.conta_id, o.id FROM outbox o
       WHERE o.relayed_at < now() - make_interval(days => ${OUTBOX_RETENTION_DAYS})
         AND NOT EXISTS (SELECT 1 FROM deliveries d
                          WHERE d.conta_id = o.conta_id AND d.event_id = o.id AND d.status = 'pending')
       LIMIT ${batch})`);
  return result.rowCount;
}
