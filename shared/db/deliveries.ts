// Queries of the delivery pipeline: enqueueing due deliveries, loading what a job needs, the hourly
// cap, and recording outcomes. They run a few times per delivery, so each is a named prepared
// statement, planned once per connection (the worker's connections are direct, never pooled). A delivery's job_id is a fence: a job is acted on only while the
// delivery still names it, so a stale or duplicated job can never record a second outcome.
import { z } from 'zod';
import type { MotivoDesativacao } from '../domain/webhooks.ts';
import { BOSS_SCHEMA } from '../boss.ts';
import { CHANNEL_JOBS, NewDelivery } from './outbox.ts';
import { Nothing, sql, type Db, type Tx } from './pool.ts';

/**
 * Due deliveries with no job (retries, deliveries held by the hourly cap, replays) get a job id,
 * and the dispatchers are woken at commit. The caller inserts the jobs in the same transaction.
 */
export async function claimDueDeliveries(tx: Tx, limit: number): Promise<readonly NewDelivery[]> {
  return tx.any(sql.prepared('claim_due_deliveries', NewDelivery)`
    WITH due AS (
      SELECT conta_id, id FROM deliveries
       WHERE status = 'pending' AND job_id IS NULL AND next_attempt_at <= now()
       ORDER BY next_attempt_at LIMIT ${limit}
         FOR UPDATE SKIP LOCKED
    ), claimed AS (
      UPDATE deliveries d SET job_id = gen_random_uuid() FROM due
       WHERE d.conta_id = due.conta_id AND d.id = due.id
      RETURNING d.conta_id, d.id, d.job_id
    ), woken AS (
      SELECT pg_notify(${CHANNEL_JOBS}, '') WHERE EXISTS (SELECT FROM claimed)
    )
    SELECT conta_id, id, job_id FROM claimed LEFT JOIN woken ON true`);
}

export const LoadedDelivery = z.object({
  conta_id: z.string(),
  id: z.string(),
  job_id: z.string(),
  endpoint_id: z.string(),
  run_attempts: z.number(),
  event_id: z.string(),
  tipo: z.string(),
  dados: z.record(z.string(), z.unknown()),
  criado_em: z.string(),
  url: z.string(),
  ativo: z.boolean(),
  segredo: z.string(),
  segredo_anterior: z.string().nullable(),
  falhando_desde: z.string().nullable(),
  /** Deliveries of the current hour granted to the account for this batch (hourly cap). */
  concedidas: z.number(),
});
export type LoadedDelivery = z.infer<typeof LoadedDelivery>;

export type JobRef = { contaId: string; deliveryId: string; jobId: string };

/**
 * The pending deliveries these jobs still carry, with their event and endpoint, and, in the same
 * round trip, the hourly quota reserved for them: each row says how many of its account's
 * deliveries to active endpoints may go out now.
 */
export async function loadDeliveries(db: Db, jobs: readonly JobRef[]): Promise<readonly LoadedDelivery[]> {
  if (jobs.length === 0) return [];
  return db.any(sql.prepared('load_deliveries', LoadedDelivery)`
    WITH loaded AS MATERIALIZED (
      SELECT d.conta_id, d.id, d.job_id, d.endpoint_id, d.run_attempts,
             o.id AS event_id, o.tipo, o.dados, o.criado_em,
             e.url, e.ativo, e.segredo,
             CASE WHEN e.segredo_anterior_ate > now() THEN e.segredo_anterior END AS segredo_anterior,
             e.falhando_desde
        FROM ${sql.unnest(jobs.map((j) => [j.contaId, j.deliveryId, j.jobId]), ['uuid', 'uuid', 'uuid'])} AS j (conta_id, id, job_id)
        JOIN deliveries d ON d.conta_id = j.conta_id AND d.id = j.id AND d.job_id = j.job_id AND d.status = 'pending'
        JOIN outbox o ON o.conta_id = d.conta_id AND o.id = d.event_id
        JOIN webhook_endpoints e ON e.conta_id = d.conta_id AND e.id = d.endpoint_id
    ), wanted AS (
      SELECT conta_id, count(*)::int AS n FROM loaded WHERE ativo GROUP BY conta_id
    ), granted AS MATERIALIZED (
      SELECT * FROM reservar_entregas_webhook(
        (SELECT array_agg(conta_id ORDER BY conta_id) FROM wanted),
        (SELECT array_agg(n ORDER BY conta_id) FROM wanted))
    )
    SELECT l.*, coalesce(g.concedidas, 0) AS concedidas
      FROM loaded l LEFT JOIN granted g ON g.conta_id = l.conta_id`);
}

/** A job about to make its attempt, as pg-boss handed it over (its retry count fences that fetch). */
export type Claimed = JobRef & { retryCount: number };

/**
 * What became of a start: `held` when the job was still this fetch's (active in pg-boss with the
 * same retry count), and then the attempt's number, or null when the job no longer carries its
 * delivery.
 */
const AttemptStarted = z.object({ jobId: z.string(), held: z.boolean(), attempt: z.number().nullable() });
export type AttemptStarted = z.infer<typeof AttemptStarted>;

/**
 * Records attempts before their requests go out, in one statement: of the jobs still held as
 * fetched (pg-boss's job row, read here; the dispatcher's heartbeat keeps it), each delivery still
 * carried by its job counts one more attempt (and one more in its run, which picks the next retry
 * delay) and gets a delivery_attempts row without an outcome. A request whose start is not recorded
 * is not sent, so every request that may have reached a receiver is in the log, even if its worker
 * dies; and a job another worker may hold now is never sent by this one.
 */
export async function startAttempts(db: Db, queue: string, jobs: readonly Claimed[]): Promise<readonly AttemptStarted[]> {
  if (jobs.length === 0) return [];
  return db.any(sql.prepared('start_attempts', AttemptStarted)`
    WITH j AS (
      SELECT * FROM ${sql.unnest(jobs.map((j) => [j.contaId, j.deliveryId, j.jobId, j.retryCount]), ['uuid', 'uuid', 'uuid', 'int4'])}
        AS j (conta_id, id, job_id, retry_count)
    ), held AS (
      SELECT j.* FROM j
       WHERE EXISTS (SELECT FROM ${sql.identifier([BOSS_SCHEMA, 'job'])} b
                      WHERE b.name = ${queue} AND b.id = j.job_id AND b.state = 'active' AND b.retry_count = j.retry_count)
    ), started AS (
      UPDATE deliveries d SET attempts = d.attempts + 1, run_attempts = d.run_attempts + 1, last_attempt_at = now()
        FROM held h
       WHERE d.conta_id = h.conta_id AND d.id = h.id AND d.job_id = h.job_id AND d.status = 'pending'
      RETURNING d.job_id, d.conta_id, d.id, d.attempts
    ), logged AS (
      INSERT INTO delivery_attempts (conta_id, delivery_id, attempt, started_at)
      SELECT conta_id, id, attempts, clock_timestamp() FROM started
    )
    SELECT j.job_id AS "jobId", h.job_id IS NOT NULL AS held, s.attempts AS attempt
      FROM j LEFT JOIN held h ON h.job_id = j.job_id LEFT JOIN started s ON s.job_id = j.job_id`);
}

/** What the log says of an attempt that has no outcome and never will: its worker stopped mid-request. */
export const INTERRUPTED = 'interrompida: o worker parou antes de registrar a resposta; o receptor pode tê-la recebido';

/**
 * What became of a job: an HTTP attempt (with its outcome), a delivery held back by the hourly
 * cap (no attempt), or a delivery closed without one (its endpoint was disabled).
 */
export type DeliveryResult = JobRef & {
  endpointId: string;
  kind: 'attempt' | 'deferred' | 'closed';
  status: 'pending' | 'succeeded' | 'failed';
  nextAttemptAt: Date | null;
  lastError: string | null;
  /** The outcome asks for the endpoint to be disabled (a 410). */
  disable: MotivoDesativacao | null;
  attempt: {
    /** Its number, from startAttempts. */
    number: number;
    startedAt: Date;
    durationMs: number;
    succeeded: boolean;
    responseStatus: number | null;
    responseBody: string | null;
    error: string | null;
  } | null;
};

/**
 * Records outcomes in one statement: the delivery moves on (next attempt, or done), each attempt's
 * row (startAttempts) gets its outcome, and any earlier attempt of the delivery still without one
 * is marked interrupted. Returns the deliveries recorded; results whose job no longer matches are
 * dropped.
 */
export async function recordResults(tx: Tx, results: readonly DeliveryResult[]): Promise<Set<string>> {
  if (results.length === 0) return new Set();
  const tuples = results.map((r) => [
    r.contaId, r.deliveryId, r.jobId, r.kind, r.status, r.nextAttemptAt?.toISOString() ?? null, r.lastError,
    r.attempt?.number ?? null, r.attempt?.startedAt.toISOString() ?? null, r.attempt?.durationMs ?? null, r.attempt?.succeeded ?? null,
    r.attempt?.responseStatus ?? null, r.attempt?.responseBody ?? null, r.attempt?.error ?? null,
  ]);
  const recorded = await tx.anyFirst(sql.prepared('record_results', z.object({ id: z.string() }))`
    WITH r AS (
      SELECT * FROM ${sql.unnest(tuples, ['uuid', 'uuid', 'uuid', 'text', 'text', 'timestamptz', 'text', 'int4', 'timestamptz', 'int4', 'bool', 'int4', 'text', 'text'])}
        AS r (conta_id, delivery_id, job_id, kind, status, next_attempt_at, last_error,
              attempt, started_at, duration_ms, succeeded, response_status, response_body, error)
    ), updated AS (
      UPDATE deliveries d SET
        status = r.status,
        next_attempt_at = coalesce(r.next_attempt_at, d.next_attempt_at),
        last_attempt_at = coalesce(r.started_at, d.last_attempt_at),
        last_error = r.last_error,
        completed_at = CASE WHEN r.status = 'pending' THEN NULL ELSE now() END,
        job_id = NULL
      FROM r
      WHERE d.conta_id = r.conta_id AND d.id = r.delivery_id AND d.job_id = r.job_id AND d.status = 'pending'
      RETURNING d.conta_id, d.id
    ), attempts AS (
      UPDATE delivery_attempts a SET
        started_at = CASE WHEN a.attempt = r.attempt THEN r.started_at ELSE a.started_at END,
        duration_ms = CASE WHEN a.attempt = r.attempt THEN r.duration_ms END,
        succeeded = CASE WHEN a.attempt = r.attempt THEN r.succeeded END,
        response_status = CASE WHEN a.attempt = r.attempt THEN r.response_status END,
        response_body = CASE WHEN a.attempt = r.attempt THEN r.response_body END,
        error = CASE WHEN a.attempt = r.attempt THEN r.error ELSE ${INTERRUPTED} END
        FROM updated u JOIN r ON r.conta_id = u.conta_id AND r.delivery_id = u.id
       WHERE a.conta_id = u.conta_id AND a.delivery_id = u.id AND a.succeeded IS NULL
         AND (a.attempt = r.attempt OR a.error IS NULL)
    )
    SELECT id FROM updated`);
  return new Set(recorded);
}

type EndpointRef = { contaId: string; endpointId: string };
const endpointRefs = (refs: readonly EndpointRef[]) =>
  sql.unnest(refs.map((r) => [r.contaId, r.endpointId]), ['uuid', 'uuid']);

/** A success ends an endpoint's run of failures. */
export async function markEndpointsHealthy(tx: Tx, refs: readonly EndpointRef[]): Promise<void> {
  if (refs.length === 0) return;
  await tx.query(sql.prepared('mark_endpoints_healthy', Nothing)`
    UPDATE webhook_endpoints e SET falhando_desde = NULL
      FROM ${endpointRefs(refs)} AS r (conta_id, id)
     WHERE e.conta_id = r.conta_id AND e.id = r.id AND e.falhando_desde IS NOT NULL`);
}

/** A failure starts a run of failures unless one is running. */
export async function markEndpointsFailing(tx: Tx, refs: readonly (EndpointRef & { since: Date })[]): Promise<void> {
  if (refs.length === 0) return;
  await tx.query(sql.prepared('mark_endpoints_failing', Nothing)`
    UPDATE webhook_endpoints e SET falhando_desde = r.since
      FROM ${sql.unnest(refs.map((r) => [r.contaId, r.endpointId, r.since.toISOString()]), ['uuid', 'uuid', 'timestamptz'])}
           AS r (conta_id, id, since)
     WHERE e.conta_id = r.conta_id AND e.id = r.id AND e.falhando_desde IS NULL`);
}
