// The outbox relay and the fan-out of events into deliveries (DESIGN §11): one delivery per
// endpoint of the account that is active, subscribed to the type (all types when it chose none)
// and whose creator holds the type's permission; webhook.teste goes only to its own endpoint.
import { z } from 'zod';
import { TIPOS_DE_EVENTO } from '../domain/eventos.ts';
import { sql, type Db, type Tx } from './pool.ts';

// Only one relay runs at a time across all workers: events of an account are relayed in the order
// their transactions made them visible, and a batch of a few hundred rows takes milliseconds.
const RELAY_LOCK = 7_410_203_006;
/** NOTIFY channels of the webhook pipeline (emit_event notifies 'outbox' itself). */
export const CHANNEL_JOBS = 'webhook_jobs';
export const CHANNEL_DUE = 'webhook_delivery_due';

/** A delivery created with the pg-boss job id that will carry its first attempt. */
export const NewDelivery = z.object({ conta_id: z.string(), id: z.string(), job_id: z.string() });
export type NewDelivery = z.infer<typeof NewDelivery>;

// The type → permission table of contract §6.2, from the one catalog in shared/domain/eventos.ts.
const permissoes = sql.fragment`
  unnest(${sql.array(TIPOS_DE_EVENTO.map((t) => t.tipo), 'text')}::text[],
         ${sql.array(TIPOS_DE_EVENTO.map((t) => t.permissao), 'text')}::text[]) AS p (tipo, permissao)`;

type Fragment = ReturnType<typeof sql.fragment>;

/**
 * INSERT … SELECT of the deliveries for the events `source` lists (conta_id, id, tipo, endpoint_id,
 * seq), with `jobId` as their job (a new id when the caller enqueues them at once, else NULL).
 */
function fanOut(source: Fragment, jobId: Fragment) {
  return sql.fragment`
    INSERT INTO deliveries (conta_id, event_id, endpoint_id, job_id)
    SELECT ev.conta_id, ev.id, e.id, ${jobId}
      FROM ${source} ev
      JOIN ${permissoes} ON p.tipo = ev.tipo
      JOIN webhook_endpoints e ON e.conta_id = ev.conta_id AND e.ativo
                              AND (ev.endpoint_id IS NULL OR e.id = ev.endpoint_id)
      JOIN usuarios u ON u.conta_id = e.conta_id AND u.id = e.usuario_id
     WHERE (ev.endpoint_id IS NOT NULL OR cardinality(e.tipos) = 0 OR ev.tipo = ANY (e.tipos))
       AND (p.permissao IS NULL OR (u.ativo AND p.permissao = ANY (u.permissoes)))
     ORDER BY ev.seq, e.id
    ON CONFLICT (conta_id, event_id, endpoint_id) DO NOTHING
    RETURNING conta_id, id, job_id`;
}

const Relayed = z.object({ locked: z.boolean(), relayed: z.number(), deliveries: z.array(NewDelivery) });

/**
 * Relays up to `limit` available events in seq order, in one statement: takes the relay lock (or
 * does nothing when another worker holds it), marks the events relayed, creates their deliveries
 * and wakes the dispatchers at commit. Rows locked by a writer refreshing a grouped event are
 * skipped and taken by a later pass. The caller inserts the deliveries' jobs in the same transaction.
 */
export async function relayOutbox(tx: Tx, limit: number): Promise<z.infer<typeof Relayed>> {
  return tx.one(sql.type(Relayed)`
    WITH relay_lock AS MATERIALIZED (
      SELECT pg_try_advisory_xact_lock(${RELAY_LOCK}) AS held
    ), claimed AS MATERIALIZED (
      SELECT o.conta_id, o.id, o.tipo, o.endpoint_id, o.seq FROM outbox o
       WHERE (SELECT held FROM relay_lock) AND o.relayed_at IS NULL AND o.available_at <= now()
       ORDER BY o.seq LIMIT ${limit}
         FOR UPDATE OF o SKIP LOCKED
    ), marked AS (
      UPDATE outbox o SET relayed_at = now() FROM claimed c
       WHERE o.conta_id = c.conta_id AND o.id = c.id
      RETURNING o.id
    ), created AS (${fanOut(sql.fragment`claimed`, sql.fragment`gen_random_uuid()`)})
    SELECT (SELECT held FROM relay_lock) AS locked,
           (SELECT count(*) FROM marked)::int AS relayed,
           coalesce((SELECT json_agg(created) FROM created), '[]'::json) AS deliveries,
           (SELECT count(*) FROM (SELECT pg_notify(${CHANNEL_JOBS}, '') WHERE EXISTS (SELECT FROM created)) n) AS notified`);
}

/**
 * Replays one event: its deliveries that are not on their way already go back to pending, due now
 * with a fresh retry schedule, and endpoints that should receive it now but never did get one.
 * The worker's scheduler enqueues them (the caller notifies it). Returns how many are due.
 */
export async function replayEvent(tx: Tx, contaId: string, eventId: string): Promise<number> {
  const event = sql.fragment`(SELECT conta_id, id, tipo, endpoint_id, seq FROM outbox WHERE conta_id = ${contaId} AND id = ${eventId})`;
  await tx.query(sql.typeAlias('void')`WITH created AS (${fanOut(event, sql.fragment`NULL::uuid`)}) SELECT FROM created`);
  const reset = await tx.query(sql.typeAlias('void')`
    UPDATE deliveries
       SET status = 'pending', completed_at = NULL, run_attempts = 0, next_attempt_at = now(),
           last_error = NULL, job_id = NULL
     WHERE conta_id = ${contaId} AND event_id = ${eventId}
       AND NOT (status = 'pending' AND job_id IS NOT NULL)`);
  return reset.rowCount;
}

export async function eventExists(db: Db, contaId: string, eventId: string): Promise<boolean> {
  return db.exists(sql.type(z.object({}))`SELECT FROM outbox WHERE conta_id = ${contaId} AND id = ${eventId}`);
}
