// The outbox relay and the fan-out of events into deliveries
// (docs/decisions/0032-events-by-trigger-relayed-once.md): one delivery per
// endpoint of the account that is active, subscribed to the type (all types when it chose none)
// and whose creator holds the type's permission; webhook.teste goes only to its own endpoint.
import { z } from 'zod';
import { TIPOS_DE_EVENTO } from '../domain/eventos.ts';
import { restoreEvent } from './archive.ts';
import { CHANNEL_DUE, granted, placesLeft, reserveFor, TakenDelivery, type TakeLimits } from './deliveries.ts';
import { NO_OUTCOMES, recordCtes, type Outcomes } from './outcomes.ts';
import { throttled } from './throttle.ts';
import { sql, type Db } from './pool.ts';

// Only one relay runs at a time across all workers: events of an account are relayed in the order
// their transactions made them visible, and a batch of a few hundred rows takes milliseconds.
const RELAY_LOCK = 7_410_203_006;

// The type → permission table of contract §6.2, from the one catalog in shared/domain/eventos.ts.
const permissoes = sql.fragment`
  unnest(${sql.array(TIPOS_DE_EVENTO.map((t) => t.tipo), 'text')}::text[],
         ${sql.array(TIPOS_DE_EVENTO.map((t) => t.permissao), 'text')}::text[]) AS p (tipo, permissao)`;

type Fragment = ReturnType<typeof sql.fragment>;

/**
 * Contract §6.2's last column, the one rule of who gets an event: its type needs no permission
 * (webhook.teste), or the user `u` is active and holds the permission of the type's row `p` of
 * `permissoes`. The fan-out applies it to each endpoint's creator, the event log of the API to the
 * key's creator (tiposQueRecebe), so a key sees exactly what its creator's endpoint would get.
 */
const recebe = sql.fragment`(p.permissao IS NULL OR (u.ativo AND p.permissao = ANY (u.permissoes)))`;

/**
 * The types of event the user `usuarioId` of the account would receive at an endpoint of their
 * own (recebe), as a set to test an event's tipo against: `o.tipo IN (…)`.
 */
export function tiposQueRecebe(contaId: string, usuarioId: string): Fragment {
  return sql.fragment`(SELECT p.tipo FROM ${permissoes}
                         JOIN usuarios u ON u.conta_id = ${contaId} AND u.id = ${usuarioId}
                        WHERE ${recebe})`;
}

/**
 * Who should receive the events `source` lists (conta_id, id, tipo, endpoint_id, seq) now: every
 * endpoint of the account that is active, subscribed to the type (webhook.teste: only its own) and
 * whose creator receives the type (recebe); `endpoint`, when given, narrows them.
 */
export function destinos(source: Fragment, endpoint: Fragment = sql.fragment`true`, more: Fragment = sql.fragment``) {
  return sql.fragment`
    SELECT ev.conta_id, ev.id AS event_id, e.id AS endpoint_id, ev.seq ${more}
      FROM ${source} ev
      JOIN ${permissoes} ON p.tipo = ev.tipo
      JOIN webhook_endpoints e ON e.conta_id = ev.conta_id AND e.ativo
                              AND (ev.endpoint_id IS NULL OR e.id = ev.endpoint_id)
      JOIN usuarios u ON u.conta_id = e.conta_id AND u.id = e.usuario_id
     WHERE (ev.endpoint_id IS NOT NULL OR cardinality(e.tipos) = 0 OR ev.tipo = ANY (e.tipos))
       AND ${recebe} AND ${endpoint}`;
}

/**
 * INSERT … SELECT of the deliveries of the events `source` lists to their destinos, due now;
 * `onConflict` says what becomes of a delivery that already exists.
 */
function fanOut(source: Fragment, onConflict: Fragment, endpoint?: Fragment) {
  return sql.fragment`
    INSERT INTO deliveries (conta_id, event_id, endpoint_id)
    SELECT x.conta_id, x.event_id, x.endpoint_id
      FROM (${destinos(source, endpoint)}) x
     ORDER BY x.seq, x.endpoint_id
    ON CONFLICT (conta_id, event_id, endpoint_id) ${onConflict}
    RETURNING conta_id, id, event_id, endpoint_id`;
}

/** One event of the account, archived or not (sql/code/archive.sql), as a source of destinos and fanOut. */
const oneEvent = (contaId: string, eventId: string) =>
  sql.fragment`(SELECT conta_id, id, tipo, endpoint_id, seq FROM eventos WHERE conta_id = ${contaId} AND id = ${eventId})`;
/**
 * A delivery the relay took for its worker, as takeDeliveries answers one; its times come as JSON
 * text and are given the form every timestamp leaves the database in (shared/db/pool.ts).
 */
const asTimestamp = (value: string) => new Date(value).toISOString();
const TakenFromRelay = TakenDelivery.extend({
  criado_em: z.string().transform(asTimestamp),
  falhando_desde: z.string().transform(asTimestamp).nullable(),
  send_at: z.null(),
});

const oneEndpoint = (endpointId: string | undefined) => (endpointId === undefined ? undefined : sql.fragment`e.id = ${endpointId}`);

/**
 * The endpoints that should receive one event now (or only `endpointId`, when it is one of them), by
 * the fan-out's rule: a SELECT of (conta_id, event_id, endpoint_id, seq).
 */
export const destinosDoEvento = (contaId: string, eventId: string, endpointId?: string) =>
  destinos(oneEvent(contaId, eventId), oneEndpoint(endpointId));

/** An event a pass relayed whose change was traced and sampled: the pass's span joins its trace (worker/webhooks/relay.ts). */
const TracedEvent = z.object({ id: z.string(), tipo: z.string(), traceparent: z.string() });
export type TracedEvent = z.infer<typeof TracedEvent>;
const Relayed = z.object({
  locked: z.boolean(), relayed: z.number(), deliveries: z.number(), taken: z.array(TakenFromRelay), traced: z.array(TracedEvent),
});

/**
 * Relays up to `limit` available events in seq order, in one statement: takes the relay lock (or
 * does nothing when another worker holds it), marks the events relayed and creates their
 * deliveries. A grouped event takes its group's latest data here (evento_agrupado_atual, after the
 * group's lock: sql/code/eventos.sql); one whose group a writer still holds, or whose row is locked,
 * is left to a later pass.
 *
 * With `take`, the relaying worker takes the deliveries it creates, within its bounds per endpoint
 * and the hourly cap (reserveFor), as takeDeliveries would: leased and their first
 * attempt recorded as started, in the same statement. At a steady rate an event then costs the
 * pipeline one statement less, and its delivery no wake-up (BENCHMARKS.md, "Webhooks"). The rest are
 * due at once and the workers, woken at commit, take them (worker/webhooks/dispatcher.ts). The same
 * statement writes `outcomes`, the worker's finished attempts (shared/db/outcomes.ts).
 */
export async function relayOutbox(db: Db, limit: number, take?: TakeLimits, outcomes: Outcomes = NO_OUTCOMES): Promise<z.infer<typeof Relayed>> {
  const bounds = take ?? { limit: 0, perEndpoint: 0, endpoints: new Map<string, number>(), leaseMs: 0 };
  // A named prepared statement: planned once per connection (it was planned at every pass, as long
  // as it ran).
  return db.one(sql.prepared('relay_outbox', Relayed)`
    WITH ${recordCtes(outcomes)}, ${relayed(limit)}, ${decided(bounds)}, ${created(bounds)}
    ${RELAY_ANSWER}`);
}

/** What the relay may take for its worker (no scan: it reads only the events it relays). */
type RelayBounds = Omit<TakeLimits, 'scan'>;

/** relay_lock, claimed and marked: the events this pass relays, marked relayed with their group's latest data. */
function relayed(limit: number): Fragment {
  return sql.fragment`
    relay_lock AS MATERIALIZED (
      SELECT pg_try_advisory_xact_lock(${RELAY_LOCK}) AS held
    ), claimed AS MATERIALIZED (
      SELECT o.ctid AS tid, o.conta_id, o.group_key FROM outbox o
       WHERE (SELECT held FROM relay_lock) AND o.relayed_at IS NULL AND o.available_at <= now()
       ORDER BY o.seq LIMIT ${limit}
         FOR UPDATE OF o SKIP LOCKED
    ), marked AS MATERIALIZED (
      -- The rows claimed, by their place in the table (a TID scan): joined back to the outbox by key,
      -- the plan depended on what the statistics said of the outbox when a connection first ran it,
      -- and one made during a backlog read the whole table at every pass ever after. A grouped event
      -- takes its group's latest data once its group's lock is had; one whose group a writer holds
      -- is left to a later pass.
      UPDATE outbox o SET relayed_at = now(), (dados, criado_em) = (
        SELECT coalesce(g.dados, o.dados), coalesce(g.criado_em, o.criado_em)
          FROM (SELECT) one
          LEFT JOIN LATERAL (SELECT * FROM evento_agrupado_atual(o.conta_id, o.tipo, o.dados) WHERE o.group_key IS NOT NULL OFFSET 0) g ON true)
       WHERE o.ctid = ANY (ARRAY(
         SELECT c.tid FROM claimed c
          WHERE c.group_key IS NULL OR pg_try_advisory_xact_lock(evento_grupo_lock(c.conta_id, c.group_key))))
      RETURNING o.conta_id, o.id, o.tipo, o.endpoint_id, o.seq, o.dados, o.criado_em, o.traceparent
    )`;
}

/** dest, ranked, asked, granted and decided: each delivery of the events relayed, and whether this worker takes it. */
function decided(bounds: RelayBounds): Fragment {
  return sql.fragment`
    dest AS MATERIALIZED (
      -- Who receives each event, numbered per endpoint against the worker's bounds; a throttled
      -- endpoint's are left due, for a take to give them their times (shared/db/throttle.ts).
      SELECT x.*, row_number() OVER (PARTITION BY x.endpoint_id ORDER BY x.seq) AS nth,
             CASE WHEN ${throttled(sql.fragment`x.conta_id`, sql.fragment`x.endpoint_id`)} THEN 0
                  ELSE ${placesLeft(bounds, sql.fragment`x.endpoint_id`)} END AS bound
        FROM (${destinos(sql.fragment`marked`, undefined, sql.fragment`, ev.tipo, ev.dados, ev.criado_em, ev.traceparent`)}) x
    ), ranked AS MATERIALIZED (
      -- Those within their endpoint's bound, in seq order, are wanted for this worker up to its limit.
      SELECT d.*, d.nth <= d.bound
                  AND count(*) FILTER (WHERE d.nth <= d.bound) OVER (ORDER BY d.seq, d.endpoint_id ROWS UNBOUNDED PRECEDING) <= ${bounds.limit} AS wanted
        FROM dest d
    ), asked AS (
      SELECT conta_id, count(*)::int AS n FROM ranked WHERE wanted GROUP BY conta_id
    ), granted AS (${reserveFor('asked')}
    ), decided AS MATERIALIZED (
      SELECT r.conta_id, r.event_id, r.endpoint_id, r.seq, r.tipo, r.dados, r.criado_em, r.traceparent, gen_random_uuid() AS id,
             r.wanted AND row_number() OVER (PARTITION BY r.conta_id, r.wanted ORDER BY r.seq, r.endpoint_id) <= ${granted(sql.fragment`r.conta_id`)} AS taken
        FROM ranked r
    )`;
}

/** created, logged and leases: the deliveries, those taken leased with their first attempt started. */
function created(bounds: RelayBounds): Fragment {
  return sql.fragment`
    created AS (
      INSERT INTO deliveries (conta_id, id, event_id, endpoint_id, lease_id, next_attempt_at, attempts, run_attempts, last_attempt_at)
      SELECT conta_id, id, event_id, endpoint_id,
             CASE WHEN taken THEN gen_random_uuid() END,
             CASE WHEN taken THEN now() + make_interval(secs => ${bounds.leaseMs / 1000}) ELSE now() END,
             taken::int, taken::int, CASE WHEN taken THEN now() END
        FROM decided ORDER BY seq, endpoint_id
      ON CONFLICT (conta_id, event_id, endpoint_id) DO NOTHING
      RETURNING conta_id, id, lease_id, attempts
    ), logged AS (
      INSERT INTO delivery_attempts (conta_id, delivery_id, attempt, started_at)
      SELECT conta_id, id, attempts, clock_timestamp() FROM created WHERE lease_id IS NOT NULL
    ), leases AS (
      -- The deliveries taken, by id, with their leases: looked up rather than joined (placesLeft).
      SELECT jsonb_object_agg(c.id, c.lease_id) AS by_id FROM created c WHERE c.lease_id IS NOT NULL
    )`;
}

/** What a relay pass answers: whether it had the lock, its counts, and the deliveries it took for this worker. */
const RELAY_ANSWER = sql.fragment`
    SELECT (SELECT held FROM relay_lock) AS locked,
           (SELECT count(*) FROM marked)::int AS relayed,
           (SELECT count(*) FROM created)::int AS deliveries,
           coalesce((SELECT json_agg(json_build_object(
              'conta_id', x.conta_id, 'id', x.id, 'lease_id', (SELECT by_id FROM leases) ->> x.id::text, 'attempt', 1, 'run_attempts', 1,
              'endpoint_id', x.endpoint_id, 'event_id', x.event_id, 'tipo', x.tipo, 'dados', x.dados, 'criado_em', x.criado_em,
              'url', e.url, 'segredo', e.segredo,
              'segredo_anterior', CASE WHEN e.segredo_anterior_ate > now() THEN e.segredo_anterior END,
              'falhando_desde', e.falhando_desde, 'send_at', NULL, 'traceparent', x.traceparent) ORDER BY x.seq, x.endpoint_id)
              FROM decided x
              JOIN webhook_endpoints e ON e.conta_id = x.conta_id AND e.id = x.endpoint_id
             WHERE x.taken AND (SELECT by_id FROM leases) ? x.id::text), '[]'::json) AS taken,
           -- Only sampled traces (flags 01): an unsampled event's relay span would be made to be dropped.
           coalesce((SELECT json_agg(json_build_object('id', m.id, 'tipo', m.tipo, 'traceparent', m.traceparent) ORDER BY m.seq)
                       FROM marked m WHERE m.traceparent LIKE '%-01'), '[]'::json) AS traced,
           -- The other workers are woken only for what this one did not take.
           (SELECT count(*) FROM (SELECT pg_notify(${CHANNEL_DUE}, '') WHERE EXISTS (SELECT FROM created WHERE lease_id IS NULL)) n) AS notified`;

/** A delivery a replay made due. */
export const Replayed = z.object({ id: z.string(), event_id: z.string(), endpoint_id: z.string() });

/**
 * A delivery a worker holds now (`d` names a row of deliveries): it is on its way, and a replay
 * leaves it going as it is.
 */
export const saindo = (d: string) =>
  sql.fragment`(${sql.identifier([d, 'status'])} = 'pending' AND ${sql.identifier([d, 'lease_id'])} IS NOT NULL)`;

/** What a replay does to a delivery that exists: due now, with a fresh retry schedule, unless saindo. */
const DUE_AGAIN = sql.fragment`
  DO UPDATE SET status = 'pending', completed_at = NULL, run_attempts = 0, next_attempt_at = now(), last_error = NULL
   WHERE NOT ${saindo('deliveries')}`;

/**
 * Replays one event (the operator's `webhooks replay`, and POST /eventos/{id}/reenviar): each
 * endpoint that should receive it now, by the fan-out's own rule (or only `endpointId`, when it is
 * one of them), gets a delivery due now with a fresh retry schedule: a new one, or its earlier one
 * back to pending; a delivery already on its way (under a worker's lease) keeps going as it is.
 * The workers take them (the caller notifies them) and the hourly cap counts them like any other
 * delivery. An archived event comes back to the working tables first, with its deliveries
 * (restore_event, sql/code/archive.sql), in the same transaction. Returns the deliveries made due.
 */
export async function replayEvent(
  tx: Db,
  contaId: string,
  eventId: string,
  options: { endpointId?: string } = {},
): Promise<readonly z.infer<typeof Replayed>[]> {
  return tx.transaction(async (t) => {
    await restoreEvent(t, contaId, eventId);
    return replayEvents(t, oneEvent(contaId, eventId), oneEndpoint(options.endpointId));
  });
}

/**
 * replayEvent's rule for every event `source` lists (conta_id, id, tipo, endpoint_id, seq), already
 * in the working tables, to its destinos narrowed by `endpoint` (over `ev` and `e`): POST
 * /eventos/recuperar (shared/db/recuperacao.ts). The deliveries made due.
 */
export async function replayEvents(tx: Db, source: Fragment, endpoint?: Fragment): Promise<readonly z.infer<typeof Replayed>[]> {
  return tx.any(sql.type(Replayed)`
    WITH made AS (${fanOut(source, DUE_AGAIN, endpoint)})
    SELECT id, event_id, endpoint_id FROM made ORDER BY endpoint_id, event_id`);
}

export async function eventExists(db: Db, contaId: string, eventId: string): Promise<boolean> {
  return db.exists(sql.type(z.object({}))`SELECT FROM eventos WHERE conta_id = ${contaId} AND id = ${eventId}`);
}
