// What operators ask about deliveries: listings with the last attempt, the attempts of one
// delivery, failures since a time (archived or not: the views of sql/code/archive.sql), and
// replays. Replayed deliveries become due at once; the workers, woken by a notification, take them.
import { z } from 'zod';
import { restoreFailedSince } from './archive.ts';
import { CHANNEL_DUE } from './deliveries.ts';
import { sql, type Db } from './pool.ts';

export const DeliverySummary = z.object({
  id: z.string(),
  conta_id: z.string(),
  event_id: z.string(),
  tipo: z.string(),
  endpoint_id: z.string(),
  url: z.string(),
  status: z.string(),
  attempts: z.number(),
  next_attempt_at: z.string(),
  created_at: z.string(),
  completed_at: z.string().nullable(),
  last_response_status: z.number().nullable(),
  last_error: z.string().nullable(),
});
export type DeliverySummary = z.infer<typeof DeliverySummary>;

const summary = sql.fragment`
  SELECT d.id, d.conta_id, d.event_id, o.tipo, d.endpoint_id, e.url, d.status, d.attempts, d.next_attempt_at,
         d.created_at, d.completed_at, a.response_status AS last_response_status,
         coalesce(a.error, d.last_error) AS last_error
    FROM all_deliveries d
    JOIN eventos o ON o.conta_id = d.conta_id AND o.id = d.event_id
    JOIN webhook_endpoints e ON e.conta_id = d.conta_id AND e.id = d.endpoint_id
    LEFT JOIN LATERAL (
      SELECT response_status, error FROM all_delivery_attempts
       WHERE conta_id = d.conta_id AND delivery_id = d.id ORDER BY attempt DESC LIMIT 1) a ON true`;

export async function listDeliveries(
  db: Db,
  filter: { contaId: string; endpointId?: string; eventId?: string; status?: string; limite: number },
): Promise<readonly DeliverySummary[]> {
  return db.any(sql.type(DeliverySummary)`
    ${summary}
     WHERE d.conta_id = ${filter.contaId}
       AND (${filter.endpointId ?? null}::uuid IS NULL OR d.endpoint_id = ${filter.endpointId ?? null}::uuid)
       AND (${filter.eventId ?? null}::uuid IS NULL OR d.event_id = ${filter.eventId ?? null}::uuid)
       AND (${filter.status ?? null}::text IS NULL OR d.status = ${filter.status ?? null}::text)
     ORDER BY d.created_at DESC, d.id
     LIMIT ${filter.limite}`);
}

/** Failed deliveries since a time, of one account or all, newest first. */
export async function listFailedDeliveries(
  db: Db,
  filter: { desde: Date; contaId?: string; limite: number },
): Promise<readonly DeliverySummary[]> {
  return db.any(sql.type(DeliverySummary)`
    ${summary}
     WHERE d.status = 'failed' AND d.completed_at >= ${sql.timestamp(filter.desde)}
       AND (${filter.contaId ?? null}::uuid IS NULL OR d.conta_id = ${filter.contaId ?? null}::uuid)
     ORDER BY d.completed_at DESC, d.id
     LIMIT ${filter.limite}`);
}

export const Attempt = z.object({
  attempt: z.number(),
  started_at: z.string(),
  /** Both null while the attempt has no outcome: going out now, or interrupted (deliveries.ts). */
  duration_ms: z.number().nullable(),
  succeeded: z.boolean().nullable(),
  response_status: z.number().nullable(),
  response_body: z.string().nullable(),
  error: z.string().nullable(),
});

export async function listAttempts(db: Db, contaId: string, deliveryId: string): Promise<readonly z.infer<typeof Attempt>[]> {
  return db.any(sql.type(Attempt)`
    SELECT attempt, started_at, duration_ms, succeeded, response_status, response_body, error
      FROM all_delivery_attempts WHERE conta_id = ${contaId} AND delivery_id = ${deliveryId} ORDER BY attempt`);
}

/**
 * Every failed delivery since a time (of one account or all) is due again, with a fresh schedule;
 * archived ones come back to the working tables with their events first (restoreFailedSince), in
 * one transaction (within the caller's, when it has one) that holds the archiver off.
 */
export async function redeliverFailures(db: Db, filter: { desde: Date; contaId?: string }): Promise<number> {
  return db.transaction(async (tx) => {
    await restoreFailedSince(tx, filter);
    const result = await tx.query(sql.typeAlias('void')`
      UPDATE deliveries
         SET status = 'pending', completed_at = NULL, run_attempts = 0, next_attempt_at = now(), last_error = NULL
       WHERE status = 'failed' AND completed_at >= ${sql.timestamp(filter.desde)}
         AND (${filter.contaId ?? null}::uuid IS NULL OR conta_id = ${filter.contaId ?? null}::uuid)`);
    return result.rowCount;
  });
}

/** Wakes the workers' dispatchers (delivered at commit). */
export async function notifyDeliveriesDue(db: Db): Promise<void> {
  await db.query(sql.typeAlias('void')`SELECT FROM pg_notify(${CHANNEL_DUE}, '')`);
}
