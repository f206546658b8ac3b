// The per-endpoint throttle (docs/decisions/0044-per-endpoint-throttle.md): an endpoint with a row
// in webhook_throttles receives at most per_second deliveries in any second, whichever workers send
// them. The statement that takes deliveries (deliveries.ts, takeDeliveries) gives each one of such
// an endpoint a time to go out (send_at), spaced from the last one given under the row's lock; the
// worker sends it at that time, or gives it back when it is late (worker/webhooks/pace.ts).
import { z } from 'zod';
import { sql, type Db } from './pool.ts';

type Fragment = ReturnType<typeof sql.fragment>;

export const THROTTLE = {
  /**
   * A delivery that cannot go out within this long after its time is given back, and takes a new
   * time: sends are never closer than their times' spacing less this.
   */
  lateMs: 100,
  /** A take gives times up to this far ahead of the last one given (at least one time). */
  horizonMs: 1_000,
} as const;

/**
 * The spacing of an endpoint's times: per_second of them span a second plus twice the lateness
 * allowed, so that per_second + 1 sends, each up to lateMs late, never fall in one second, with
 * as much again for the way to the receiver.
 */
const spacing = (perSecond: Fragment) => sql.fragment`make_interval(secs => ${1 + (2 * THROTTLE.lateMs) / 1000}::numeric / ${perSecond})`;

/**
 * How many deliveries of the endpoint of `due` (a relation with conta_id and endpoint_id) a take
 * may time now: the times within the horizon after the last one given (at least one when it is
 * past); `otherwise` when the endpoint has no throttle.
 */
export function pacedBound(due: string, otherwise: Fragment): Fragment {
  const d = (column: string) => sql.identifier([due, column]);
  return whenAnyThrottle(sql.fragment`least(${otherwise}, coalesce((
    SELECT ceil(greatest(0, ${THROTTLE.horizonMs / 1000}::numeric - extract(epoch FROM greatest(r.next_send_at, now()) - now()))
                / extract(epoch FROM ${spacing(sql.fragment`r.per_second`)}))::int
      FROM webhook_throttles r WHERE r.conta_id = ${d('conta_id')} AND r.endpoint_id = ${d('endpoint_id')}), ${otherwise}))`, otherwise);
}

/**
 * CTEs that time the deliveries `decided` (conta_id, id, endpoint_id, kind) took of throttled
 * endpoints: `pace_lock` locks their rows in key order (after the hourly reservation's rows, which
 * `decided` waits for, so every take locks in one order), `paced` moves each endpoint's next time
 * past the ones given, and `slots` (conta_id, id, send_at) gives each delivery its time. A row
 * another take moved meanwhile is read as that take left it.
 */
export function paceCtes(decided: string): Fragment {
  const from = sql.identifier([decided]);
  return sql.fragment`pace_lock AS MATERIALIZED (
      SELECT r.conta_id, r.endpoint_id FROM webhook_throttles r
       WHERE (r.conta_id, r.endpoint_id) IN (SELECT conta_id, endpoint_id FROM ${from} WHERE kind = 'taken')
       ORDER BY r.conta_id, r.endpoint_id
         FOR UPDATE OF r
    ), paced AS (
      UPDATE webhook_throttles r SET next_send_at = greatest(r.next_send_at, now()) + t.n * ${spacing(sql.fragment`r.per_second`)}
        FROM (SELECT x.conta_id, x.endpoint_id, count(*)::int AS n
                FROM ${from} x JOIN pace_lock l ON l.conta_id = x.conta_id AND l.endpoint_id = x.endpoint_id
               WHERE x.kind = 'taken' GROUP BY x.conta_id, x.endpoint_id) t
       WHERE r.conta_id = t.conta_id AND r.endpoint_id = t.endpoint_id
      RETURNING r.conta_id, r.endpoint_id, r.next_send_at AS ate, ${spacing(sql.fragment`r.per_second`)} AS spacing, t.n
    ), slots AS MATERIALIZED (
      SELECT x.conta_id, x.id,
             p.ate - (p.n - row_number() OVER (PARTITION BY x.conta_id, x.endpoint_id ORDER BY x.id) + 1) * p.spacing AS send_at
        FROM ${from} x JOIN paced p ON p.conta_id = x.conta_id AND p.endpoint_id = x.endpoint_id
       WHERE x.kind = 'taken'
    )`;
}

/**
 * Whether the endpoint of `d` (a row of deliveries) is throttled and has given every time within the
 * horizon: a take does not read its deliveries, so a throttled backlog never fills what a take reads
 * and hides the other endpoints' deliveries behind it.
 */
export const withoutTimes = (d: string) => whenAnyThrottle(sql.fragment`EXISTS (
  SELECT FROM webhook_throttles r
   WHERE r.conta_id = ${sql.identifier([d, 'conta_id'])} AND r.endpoint_id = ${sql.identifier([d, 'endpoint_id'])}
     AND r.next_send_at >= now() + make_interval(secs => ${THROTTLE.horizonMs / 1000}))`, sql.fragment`false`);

/** Whether a delivery to the endpoint `e` (conta_id, id) is throttled: the relay leaves those to the takes. */
export const throttled = (contaId: Fragment, endpointId: Fragment) => whenAnyThrottle(
  sql.fragment`EXISTS (SELECT FROM webhook_throttles r WHERE r.conta_id = ${contaId} AND r.endpoint_id = ${endpointId})`, sql.fragment`false`);

/**
 * `perRow` when any endpoint is throttled, else `otherwise`: whether any is, is asked once a
 * statement (an uncorrelated sub-select, run once), so with no throttle set a take or a relay pass
 * pays no lookup per delivery.
 */
function whenAnyThrottle(perRow: Fragment, otherwise: Fragment): Fragment {
  return sql.fragment`CASE WHEN (SELECT EXISTS (SELECT FROM webhook_throttles)) THEN ${perRow} ELSE ${otherwise} END`;
}

const Throttle = z.object({ endpoint_id: z.string(), per_second: z.number().nullable() });

/**
 * Sets (or, with null, removes) an endpoint's throttle; null when the account has no such endpoint.
 * Times already given stand; the next take spaces by the new rate.
 */
export async function setThrottle(db: Db, contaId: string, endpointId: string, perSecond: number | null) {
  return db.transaction(async (tx) => {
    const existe = await tx.exists(sql.type(z.object({}))`
      SELECT FROM webhook_endpoints WHERE conta_id = ${contaId} AND id = ${endpointId} FOR UPDATE`);
    if (!existe) return null;
    if (perSecond === null) {
      await tx.query(sql.typeAlias('void')`DELETE FROM webhook_throttles WHERE conta_id = ${contaId} AND endpoint_id = ${endpointId}`);
    } else {
      await tx.query(sql.typeAlias('void')`
        INSERT INTO webhook_throttles (conta_id, endpoint_id, per_second) VALUES (${contaId}, ${endpointId}, ${perSecond})
        ON CONFLICT (conta_id, endpoint_id) DO UPDATE SET per_second = excluded.per_second`);
    }
    return Throttle.parse({ endpoint_id: endpointId, per_second: perSecond });
  });
}
