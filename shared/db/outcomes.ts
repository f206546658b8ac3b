// Delivery outcomes: what a worker writes once a request has been answered (or has failed). They are
// written in the statements the worker runs anyway, the next take of due deliveries or relay pass
// (shared/db/deliveries.ts, shared/db/outbox.ts), or alone when none comes soon
// (worker/webhooks/recorder.ts). Every write is fenced by the delivery's lease: an outcome whose
// lease another worker holds now is dropped.
import { z } from 'zod';
import type { MotivoDesativacao } from '../domain/webhooks.ts';
import { sql, type Db } from './pool.ts';

/**
 * A delivery under a worker's lease: the token that fences every write the worker makes to it (its
 * outcome here; renewals and give-backs in shared/db/deliveries.ts).
 */
export type Lease = { contaId: string; deliveryId: string; leaseId: string };

/** What the log says of an attempt that has no outcome and never will: its worker stopped mid-request. */
export const INTERRUPTED = 'interrompida: o worker parou antes de registrar a resposta; o receptor pode tê-la recebido';

/** An HTTP attempt's outcome, and what follows for its delivery (shared/domain/webhooks.ts, decide). */
export type DeliveryResult = Lease & {
  endpointId: string;
  status: 'pending' | 'succeeded' | 'failed';
  nextAttemptAt: Date | null;
  /** The outcome asks for the endpoint to be disabled (a 410). */
  disable: MotivoDesativacao | null;
  attempt: {
    /** Its number, recorded as started when the delivery was taken. */
    number: number;
    startedAt: Date;
    durationMs: number;
    succeeded: boolean;
    responseStatus: number | null;
    responseBody: string | null;
    error: string | null;
  };
};

type EndpointRef = { contaId: string; endpointId: string };

/** What a batch of outcomes says of their endpoints' runs of failures (worker/webhooks/recorder.ts). */
export type EndpointRuns = {
  /** A success ends an endpoint's run of failures. */
  healthy: readonly EndpointRef[];
  /** A failure starts a run of failures unless one is running. */
  failing: readonly (EndpointRef & { since: Date })[];
};

/** Outcomes to write, with what they say of their endpoints. */
export type Outcomes = { results: readonly DeliveryResult[]; runs: EndpointRuns };

export const NO_OUTCOMES: Outcomes = { results: [], runs: { healthy: [], failing: [] } };

/**
 * The CTEs that write `o`, to open a WITH clause: each delivery moves on (next attempt, or done) and
 * leaves its lease, each attempt's row gets its outcome, any earlier attempt of the delivery still
 * without one is marked interrupted, and the endpoints' runs of failures follow `o.runs` (a request
 * that was answered says how its endpoint is, recorded or not). `recorded` (conta_id, id) lists the
 * deliveries written. A statement that also takes deliveries leaves these ones out (recordedIds):
 * a row changed twice in one statement keeps only the first change.
 */
export function recordCtes(o: Outcomes) {
  const tuples = o.results.map((r) => [
    r.contaId, r.deliveryId, r.leaseId, r.status, r.nextAttemptAt?.toISOString() ?? null,
    r.attempt.number, r.attempt.startedAt.toISOString(), r.attempt.durationMs, r.attempt.succeeded,
    r.attempt.responseStatus, r.attempt.responseBody, r.attempt.error,
  ]);
  const endpointRuns = [
    ...o.runs.healthy.map((h) => [h.contaId, h.endpointId, null]),
    ...o.runs.failing.map((f) => [f.contaId, f.endpointId, f.since.toISOString()]),
  ];
  return sql.fragment`
    outcome AS (
      SELECT * FROM ${sql.unnest(tuples, ['uuid', 'uuid', 'uuid', 'text', 'timestamptz', 'int4', 'timestamptz', 'int4', 'bool', 'int4', 'text', 'text'])}
        AS r (conta_id, delivery_id, lease_id, status, next_attempt_at,
              attempt, started_at, duration_ms, succeeded, response_status, response_body, error)
    ), recorded AS (
      UPDATE deliveries d SET
        status = r.status,
        next_attempt_at = coalesce(r.next_attempt_at, d.next_attempt_at),
        last_attempt_at = r.started_at,
        last_error = NULL,
        completed_at = CASE WHEN r.status = 'pending' THEN NULL ELSE now() END,
        lease_id = NULL
      FROM outcome r
      WHERE d.conta_id = r.conta_id AND d.id = r.delivery_id AND d.lease_id = r.lease_id
      RETURNING d.conta_id, d.id
    ), recorded_attempts AS (
      UPDATE delivery_attempts a SET
        started_at = CASE WHEN a.attempt = r.attempt THEN r.started_at ELSE a.started_at END,
        duration_ms = CASE WHEN a.attempt = r.attempt THEN r.duration_ms END,
        succeeded = CASE WHEN a.attempt = r.attempt THEN r.succeeded END,
        response_status = CASE WHEN a.attempt = r.attempt THEN r.response_status END,
        response_body = CASE WHEN a.attempt = r.attempt THEN r.response_body END,
        error = CASE WHEN a.attempt = r.attempt THEN r.error ELSE ${INTERRUPTED} END
        FROM recorded u JOIN outcome r ON r.conta_id = u.conta_id AND r.delivery_id = u.id
       WHERE a.conta_id = u.conta_id AND a.delivery_id = u.id AND a.succeeded IS NULL
         AND (a.attempt = r.attempt OR a.error IS NULL)
    ), endpoint_runs AS (
      -- Both kinds in one update driven by the endpoints named (a NULL since ends a run).
      UPDATE webhook_endpoints e SET falhando_desde = x.since
        FROM ${sql.unnest(endpointRuns, ['uuid', 'uuid', 'timestamptz'])} AS x (conta_id, id, since)
       WHERE e.conta_id = x.conta_id AND e.id = x.id
         AND CASE WHEN x.since IS NULL THEN e.falhando_desde IS NOT NULL ELSE e.falhando_desde IS NULL END
    )`;
}

/** The deliveries of `o`, which a statement writing them must not take as well (recordCtes). */
export const recordedIds = (o: Outcomes) => sql.array(o.results.map((r) => r.deliveryId), 'uuid');

/** Records outcomes alone, in one statement (recordCtes); the deliveries recorded. */
export async function recordResults(db: Db, results: readonly DeliveryResult[], runs: EndpointRuns): Promise<Set<string>> {
  if (results.length === 0) return new Set();
  const recorded = await db.anyFirst(sql.prepared('record_results', z.object({ id: z.string() }))`
    WITH ${recordCtes({ results, runs })}
    SELECT id FROM recorded`);
  return new Set(recorded);
}
