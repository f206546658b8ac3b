// Queries of the delivery pipeline, where the deliveries table is its own queue
// (docs/decisions/0034-deliveries-queue-under-leases.md): taking due deliveries under a lease,
// renewing and giving back leases, and recording
// outcomes. They run many times a second under load, so each is a named prepared statement, planned
// once per connection (the worker's connections are direct, never pooled). A delivery's lease_id is
// a fence: a worker writes to a delivery only while it still names the worker's lease, so a worker
// whose lease ran out can never record a second outcome. A lease implies a pending delivery
// (deliveries_lease_pending): lookups by key and lease never say status = 'pending', which would let
// the planner scan the due index instead (the partial index's statistics lag behind a backlog).
import { z } from 'zod';
import { NO_OUTCOMES, recordCtes, recordedIds, type Lease, type Outcomes } from './outcomes.ts';
import { sql, type Db } from './pool.ts';
import { pacedBound, paceCtes, withoutTimes } from './throttle.ts';

type Fragment = ReturnType<typeof sql.fragment>;

/**
 * The worker's sessions (worker/main.ts). The pipeline's statements look rows up by key from arrays
 * the worker sends and are prepared once per session; PostgreSQL plans a prepared statement for its
 * values five times, then keeps one generic plan unless that looks costlier. Three settings make that
 * plan the one kept, and keep it finding rows by key (test/index-lookups.test.ts; BENCHMARKS.md, "Webhooks"):
 * - random_page_cost 1.1, not a disk's 4: the working tables are small and cached. At 4 the
 *   outcomes' generic plan read the whole deliveries table of a few thousand rows instead of its
 *   primary key, and PostgreSQL planned that statement anew at every call.
 * - plan_cache_mode force_generic_plan: a generic plan guesses ten elements in each array. With one
 *   endpoint's backlog, "not one of ten endpoints" reads as no row at all, so the take's generic plan
 *   looked costlier than one planned for an empty list, and the take was planned at every call, to
 *   the same plan. No other statement of the worker needs a plan made for its values: their partial
 *   indexes name constants, and its partitioned tables are pruned when a plan starts.
 * - enable_seqscan off: a working table the archive emptied and autovacuum then recorded as empty
 *   reads as empty to the planner, whatever it holds when a plan is made, until autovacuum comes
 *   back. A sequential scan of it looks free, and was chosen for every lookup by key planned then:
 *   the foreign keys' checks of each delivery and attempt inserted, the take's lookups of events,
 *   each reading the table whole, so a backlog drained after a quiet spell cost PostgreSQL several times
 *   as much per delivery, growing with the backlog. A lookup by key is an index scan whatever the
 *   statistics; what they still get wrong in the statements' joins, the worker corrects by gathering
 *   them again when a backlog begins (worker/webhooks/statistics.ts).
 */
export const PIPELINE_SESSION_SETTINGS = { random_page_cost: '1.1', plan_cache_mode: 'force_generic_plan', enable_seqscan: 'off' } as const;

/** The NOTIFY channel that wakes the workers when deliveries become due (new, replayed, moved). */
export const CHANNEL_DUE = 'webhook_delivery_due';

/** What a worker may take at once (takeDeliveries). */
export type TakeLimits = {
  /** Deliveries to take at most. */
  limit: number;
  /** Due deliveries the statement reads and chooses from (the per-endpoint bounds may leave some). */
  scan: number;
  /** Deliveries to take at most per endpoint, unless `endpoints` says otherwise. */
  perEndpoint: number;
  /** Endpoints the worker already holds deliveries of, with how many more it may take of each (0: none, not even scanned). */
  endpoints: ReadonlyMap<string, number>;
  /** The lease: how long the deliveries stay this worker's unless it renews them. */
  leaseMs: number;
};

/**
 * The places the worker has left at the endpoint `endpointId` names: those the worker said for the
 * endpoints it holds deliveries of, `perEndpoint` for any other; takeDeliveries and the relay's take
 * (shared/db/outbox.ts) bound themselves alike. A lookup in a jsonb object, not a join: the
 * planner guesses the rows of the statement's own steps, and joined to them this was a nested loop,
 * every candidate against every endpoint held.
 */
export function placesLeft(t: Pick<TakeLimits, 'endpoints' | 'perEndpoint'>, endpointId: Fragment) {
  return sql.fragment`coalesce((${sql.jsonb(Object.fromEntries(t.endpoints))} ->> (${endpointId})::text)::int, ${t.perEndpoint})`;
}

/**
 * Reserves the hourly cap (planos.entregas_webhook_por_hora) for the deliveries a relation `asked`
 * (conta_id, n: one row per account) asks for: a data-modifying statement for a CTE, returning
 * (conta_id, concedidas). The hour's row of each account is inserted or, when it exists, locked and
 * added to, in account order (two workers reserving for the same accounts never deadlock); a new
 * hour grants what its plan allows, an hour begun what is left of it. Each row keeps what this
 * reservation granted (last_reserved), which is what RETURNING can read. It runs inside the
 * statements that take deliveries and record their attempts' start (takeDeliveries, relayOutbox),
 * which commit durably for the attempts' sake; inline, not a PL/pgSQL function, which cost more.
 */
export function reserveFor(asked: string) {
  const from = sql.identifier([asked]);
  return sql.fragment`
    INSERT INTO webhook_hourly_usage AS u (conta_id, hour, deliveries, last_reserved)
    SELECT a.conta_id, date_trunc('hour', now(), 'UTC'), least(a.n, pl.entregas_webhook_por_hora), least(a.n, pl.entregas_webhook_por_hora)
      FROM ${from} a JOIN contas c ON c.id = a.conta_id JOIN planos pl ON pl.id = c.plano_id
     ORDER BY a.conta_id
    ON CONFLICT ON CONSTRAINT webhook_hourly_usage_pkey DO UPDATE
      SET (last_reserved, deliveries) = (
        SELECT g.n, u.deliveries + g.n
          FROM (SELECT least(excluded.last_reserved, greatest(0, pl.entregas_webhook_por_hora - u.deliveries)) AS n
                  FROM contas c JOIN planos pl ON pl.id = c.plano_id WHERE c.id = u.conta_id) g)
    RETURNING u.conta_id, u.last_reserved AS concedidas`;
}

/**
 * What the reservation (reserveFor, as the CTE `granted`) granted the account `contaId` names: a
 * lookup in a jsonb object of them all, not a join, for the reason placesLeft says.
 */
export function granted(contaId: Fragment) {
  return sql.fragment`coalesce(((SELECT jsonb_object_agg(g.conta_id, g.concedidas) FROM granted g) ->> (${contaId})::text)::int, 0)`;
}

/** Reserves the hourly cap for `asked` deliveries per account, alone (reserveFor): granted per account. */
export async function reserveDeliveries(db: Db, asked: ReadonlyMap<string, number>): Promise<Map<string, number>> {
  const rows = await db.any(sql.type(z.object({ conta_id: z.string(), concedidas: z.number() }))`
    WITH asked AS (SELECT * FROM ${sql.unnest([...asked], ['uuid', 'int4'])} AS a (conta_id, n)),
         granted AS (${reserveFor('asked')})
    SELECT conta_id, concedidas FROM granted`);
  return new Map(rows.map((r) => [r.conta_id, r.concedidas]));
}

export const TakenDelivery = z.object({
  conta_id: z.string(),
  id: z.string(),
  lease_id: z.string(),
  /** The attempt's number, already recorded as started. */
  attempt: z.number(),
  /** Attempts of the current run, this one included: picks the retry delay. */
  run_attempts: z.number(),
  endpoint_id: z.string(),
  event_id: z.string(),
  tipo: z.string(),
  dados: z.record(z.string(), z.unknown()),
  criado_em: z.string(),
  url: z.string(),
  segredo: z.string(),
  segredo_anterior: z.string().nullable(),
  falhando_desde: z.string().nullable(),
  /** When it may go out: its endpoint's throttle gave it this time (shared/db/throttle.ts); null, at once. */
  send_at: z.string().nullable(),
  /** The trace context of the change that emitted the event, when it was traced (the attempt continues it). */
  traceparent: z.string().nullable(),
});
export type TakenDelivery = z.infer<typeof TakenDelivery>;

/**
 * Takes due deliveries, in one statement that commits durably before any request goes out: the
 * due deliveries nobody holds (a lease that ran out makes its delivery due again) in next_attempt_at
 * order, within the worker's bounds per endpoint, locked once chosen (SKIP LOCKED); then, by the
 * hourly cap reserved for their accounts (reserveFor), each one is either taken (a
 * new lease token, next_attempt_at at the lease's end, one more attempt recorded as started in
 * delivery_attempts without an outcome), held until the next hour (over the cap: no attempt), or closed (its endpoint
 * was disabled). A delivery of a throttled endpoint is taken only within the times its throttle
 * has free, and gets one (send_at; shared/db/throttle.ts), its lease running from it. Returns the
 * deliveries taken, with their event and endpoint: all a request needs.
 * The same statement writes `outcomes`, the worker's finished attempts (shared/db/outcomes.ts).
 */
export async function takeDeliveries(db: Db, t: TakeLimits, outcomes: Outcomes = NO_OUTCOMES): Promise<readonly TakenDelivery[]> {
  return db.any(sql.prepared('take_deliveries', TakenDelivery)`
    WITH ${recordCtes(outcomes)}, ${boundedDue(t, outcomes)}, ${DECIDED_TAKE}, ${appliedTake(t)}
    ${TAKE_ANSWER}`);
}

/**
 * due and bounded: the due deliveries nobody holds, in order, within the worker's bounds per endpoint
 * and in all, and a throttled endpoint's within the times it has free.
 */
function boundedDue(t: TakeLimits, outcomes: Outcomes): Fragment {
  const full = [...t.endpoints].filter(([, n]) => n <= 0).map(([id]) => id);
  return sql.fragment`
    due AS MATERIALIZED (
      SELECT d.conta_id, d.id, d.endpoint_id, d.next_attempt_at
        FROM deliveries d
       WHERE d.status = 'pending' AND d.next_attempt_at <= now()
         AND NOT (d.endpoint_id = ANY (${sql.array(full, 'uuid')}::uuid[]))
         AND NOT (d.id = ANY (${recordedIds(outcomes)}::uuid[]))
         AND NOT ${withoutTimes('d')}
       ORDER BY d.next_attempt_at
       LIMIT ${t.scan}
    ), bounded AS MATERIALIZED (
      SELECT b.conta_id, b.id FROM (
        SELECT due.*, row_number() OVER (PARTITION BY due.endpoint_id ORDER BY due.next_attempt_at, due.id) AS nth,
               ${pacedBound('due', placesLeft(t, sql.fragment`due.endpoint_id`))} AS bound
          FROM due) b
       WHERE b.nth <= b.bound
       ORDER BY b.next_attempt_at, b.id
       LIMIT ${t.limit}
    )`;
}

/** chosen, wanted, granted and decided: those still due once locked, each taken, held for the next hour (over the cap) or closed. */
const DECIDED_TAKE = sql.fragment`
    chosen AS MATERIALIZED (
      -- Only the deliveries chosen are locked; one another worker took meanwhile is no longer due
      -- when its lock is granted, and one it is taking now is skipped. (completed_at IS NULL is
      -- status = 'pending', by deliveries_check, written so that the planner never reads the due
      -- index for these lookups by key: its statistics lag behind a backlog.)
      -- The endpoint is read per row, not joined: joined, the generic plan reached the deliveries
      -- through the endpoint's index and read all of one endpoint's backlog for each one chosen.
      SELECT d.conta_id, d.id, d.endpoint_id, d.event_id,
             (SELECT e.ativo FROM webhook_endpoints e WHERE e.conta_id = d.conta_id AND e.id = d.endpoint_id) AS ativo
        FROM bounded b
        JOIN deliveries d ON d.conta_id = b.conta_id AND d.id = b.id
       WHERE d.completed_at IS NULL AND d.next_attempt_at <= now()
         FOR UPDATE OF d SKIP LOCKED
    ), wanted AS (
      SELECT conta_id, count(*)::int AS n FROM chosen WHERE ativo GROUP BY conta_id
    ), granted AS (${reserveFor('wanted')}
    ), decided AS MATERIALIZED (
      SELECT c.conta_id, c.id, c.endpoint_id, c.event_id,
             CASE WHEN NOT c.ativo THEN 'closed'
                  WHEN row_number() OVER (PARTITION BY c.conta_id, c.ativo ORDER BY c.id) <= ${granted(sql.fragment`c.conta_id`)} THEN 'taken'
                  ELSE 'held' END AS kind
        FROM chosen c
    )`;

/**
 * The times of the throttled endpoints' deliveries (shared/db/throttle.ts), then updated and logged: the
 * deliveries as decided, a taken one leased (from its time, when it has one) with its attempt recorded as started.
 */
function appliedTake(t: TakeLimits): Fragment {
  return sql.fragment`
    ${paceCtes('decided')}, updated AS (
      UPDATE deliveries d SET
        lease_id = CASE WHEN x.kind = 'taken' THEN gen_random_uuid() END,
        next_attempt_at = CASE x.kind WHEN 'taken' THEN coalesce(s.send_at, now()) + make_interval(secs => ${t.leaseMs / 1000})
                                      WHEN 'held' THEN date_trunc('hour', now(), 'UTC') + interval '1 hour'
                                      ELSE d.next_attempt_at END,
        attempts = d.attempts + (x.kind = 'taken')::int,
        run_attempts = d.run_attempts + (x.kind = 'taken')::int,
        last_attempt_at = CASE WHEN x.kind = 'taken' THEN now() ELSE d.last_attempt_at END,
        status = CASE WHEN x.kind = 'closed' THEN 'failed' ELSE d.status END,
        completed_at = CASE WHEN x.kind = 'closed' THEN now() END,
        last_error = CASE WHEN x.kind = 'closed' THEN 'endpoint desativado' ELSE d.last_error END
        FROM decided x LEFT JOIN slots s ON s.conta_id = x.conta_id AND s.id = x.id
       WHERE d.conta_id = x.conta_id AND d.id = x.id
      RETURNING d.conta_id, d.id, d.lease_id, d.attempts, d.run_attempts, x.endpoint_id, x.event_id, s.send_at
    ), logged AS (
      INSERT INTO delivery_attempts (conta_id, delivery_id, attempt, started_at)
      SELECT conta_id, id, attempts, clock_timestamp() FROM updated WHERE lease_id IS NOT NULL
    )`;
}

/** The deliveries taken, with their event and endpoint: all a request needs. */
const TAKE_ANSWER = sql.fragment`
    SELECT u.conta_id, u.id, u.lease_id, u.attempts AS attempt, u.run_attempts, u.endpoint_id,
           o.id AS event_id, o.tipo, o.dados, o.criado_em,
           e.url, e.segredo, CASE WHEN e.segredo_anterior_ate > now() THEN e.segredo_anterior END AS segredo_anterior,
           e.falhando_desde, u.send_at, o.traceparent
      FROM updated u
      JOIN outbox o ON o.conta_id = u.conta_id AND o.id = u.event_id
      JOIN webhook_endpoints e ON e.conta_id = u.conta_id AND e.id = u.endpoint_id
     WHERE u.lease_id IS NOT NULL`;

const leaseTuples = (leases: readonly Lease[]) =>
  sql.unnest(leases.map((l) => [l.contaId, l.deliveryId, l.leaseId]), ['uuid', 'uuid', 'uuid']);

/**
 * Renews these leases for another `leaseMs`; the deliveries still under them. One that is missing
 * was taken by another worker after its lease ran out (this one stalled): it must not be sent.
 */
export async function renewLeases(db: Db, leases: readonly Lease[], leaseMs: number): Promise<Set<string>> {
  if (leases.length === 0) return new Set();
  const renewed = await db.anyFirst(sql.prepared('renew_leases', z.object({ id: z.string() }))`
    UPDATE deliveries d SET next_attempt_at = now() + make_interval(secs => ${leaseMs / 1000})
      FROM ${leaseTuples(leases)} AS l (conta_id, id, lease_id)
     WHERE d.conta_id = l.conta_id AND d.id = l.id AND d.lease_id = l.lease_id
    RETURNING d.id`);
  return new Set(renewed);
}

/**
 * Gives back deliveries taken and never sent (the worker is stopping, or their lease grew too old to
 * trust): each is due again at once, and the attempt its take recorded is undone, since no request
 * went out. A delivery whose lease another worker holds now is left alone.
 */
export async function releaseLeases(db: Db, leases: readonly Lease[]): Promise<number> {
  if (leases.length === 0) return 0;
  const released = await db.query(sql.typeAlias('void')`
    WITH released AS (
      UPDATE deliveries d SET lease_id = NULL, next_attempt_at = now(),
                              attempts = d.attempts - 1, run_attempts = d.run_attempts - 1
        FROM ${leaseTuples(leases)} AS l (conta_id, id, lease_id)
       WHERE d.conta_id = l.conta_id AND d.id = l.id AND d.lease_id = l.lease_id
      RETURNING d.conta_id, d.id, d.attempts + 1 AS attempt
    )
    DELETE FROM delivery_attempts a USING released r
     WHERE a.conta_id = r.conta_id AND a.delivery_id = r.id AND a.attempt = r.attempt AND a.succeeded IS NULL`);
  return released.rowCount;
}

/**
 * Statistics of the pipeline's working tables, gathered now (worker/webhooks/statistics.ts, when a
 * backlog begins): each of the worker's connections plans its statements again from them. A role
 * that does not own the tables gets a warning and the statistics autovacuum gathers.
 */
export async function gatherStatistics(db: Db): Promise<void> {
  await db.query(sql.typeAlias('void')`ANALYZE outbox, deliveries, delivery_attempts`);
}

const Waiting = z.object({ waiting: z.boolean() });

/**
 * Whether anything is waiting to go out now: an event due to be relayed, or a due delivery that no
 * worker holds (one held is due again only when its lease runs out; a retry or a delivery held over
 * its hourly cap waits for a later time). Two index lookups: outbox_a_relayar and deliveries_due.
 */
export async function somethingWaiting(db: Db): Promise<boolean> {
  return db.oneFirst(sql.type(Waiting)`
    SELECT EXISTS (SELECT FROM outbox WHERE relayed_at IS NULL AND available_at <= now())
        OR EXISTS (SELECT FROM deliveries WHERE status = 'pending' AND next_attempt_at <= now()) AS waiting`);
}
