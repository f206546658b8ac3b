// The per-endpoint throttle (docs/decisions/0044-per-endpoint-throttle.md): an endpoint with a row
// in webhook_ritmo receives at most por_segundo deliveries in any second, whichever workers send
// them. The statement that takes deliveries (deliveries.ts, takeDeliveries) gives each one of such
// an endpoint a time to go out (enviar_em), spaced from the last one given under the row's lock; the
// worker sends it at that time, or gives it back when it is late (worker/webhooks/pace.ts).
import { z } from 'zod';
import { sql, type Db } from './pool.ts';

type Fragment = ReturnType<typeof sql.fragment>;

export const RITMO = {
  /**
   * A delivery that cannot go out within this long after its time is given back, and takes a new
   * time: sends are never closer than their times' spacing less this.
   */
  atrasoMs: 100,
  /** A take gives times up to this far ahead of the last one given (at least one time). */
  horizonteMs: 1_000,
} as const;

/**
 * The spacing of an endpoint's times: por_segundo of them span a second plus twice the lateness
 * allowed, so that por_segundo + 1 sends, each up to atrasoMs late, never fall in one second, with
 * as much again for the way to the receiver.
 */
const passo = (porSegundo: Fragment) => sql.fragment`make_interval(secs => ${1 + (2 * RITMO.atrasoMs) / 1000}::numeric / ${porSegundo})`;

/**
 * How many deliveries of the endpoint of `due` (a relation with conta_id and endpoint_id) a take
 * may time now: the times within the horizon after the last one given (at least one when it is
 * past); `otherwise` when the endpoint has no throttle.
 */
export function pacedBound(due: string, otherwise: Fragment): Fragment {
  const d = (column: string) => sql.identifier([due, column]);
  return sql.fragment`least(${otherwise}, coalesce((
    SELECT ceil(greatest(0, ${RITMO.horizonteMs / 1000}::numeric - extract(epoch FROM greatest(r.proximo_envio_em, now()) - now()))
                / extract(epoch FROM ${passo(sql.fragment`r.por_segundo`)}))::int
      FROM webhook_ritmo r WHERE r.conta_id = ${d('conta_id')} AND r.endpoint_id = ${d('endpoint_id')}), ${otherwise}))`;
}

/**
 * CTEs that time the deliveries `decided` (conta_id, id, endpoint_id, kind) took of throttled
 * endpoints: `pace_lock` locks their rows in key order (after the hourly reservation's rows, which
 * `decided` waits for, so every take locks in one order), `paced` moves each endpoint's next time
 * past the ones given, and `slots` (conta_id, id, enviar_em) gives each delivery its time. A row
 * another take moved meanwhile is read as that take left it.
 */
export function paceCtes(decided: string): Fragment {
  const from = sql.identifier([decided]);
  return sql.fragment`pace_lock AS MATERIALIZED (
      SELECT r.conta_id, r.endpoint_id FROM webhook_ritmo r
       WHERE (r.conta_id, r.endpoint_id) IN (SELECT conta_id, endpoint_id FROM ${from} WHERE kind = 'taken')
       ORDER BY r.conta_id, r.endpoint_id
         FOR UPDATE OF r
    ), paced AS (
      UPDATE webhook_ritmo r SET proximo_envio_em = greatest(r.proximo_envio_em, now()) + t.n * ${passo(sql.fragment`r.por_segundo`)}
        FROM (SELECT x.conta_id, x.endpoint_id, count(*)::int AS n
                FROM ${from} x JOIN pace_lock l ON l.conta_id = x.conta_id AND l.endpoint_id = x.endpoint_id
               WHERE x.kind = 'taken' GROUP BY x.conta_id, x.endpoint_id) t
       WHERE r.conta_id = t.conta_id AND r.endpoint_id = t.endpoint_id
      RETURNING r.conta_id, r.endpoint_id, r.proximo_envio_em AS ate, ${passo(sql.fragment`r.por_segundo`)} AS passo, t.n
    ), slots AS MATERIALIZED (
      SELECT x.conta_id, x.id,
             p.ate - (p.n - row_number() OVER (PARTITION BY x.conta_id, x.endpoint_id ORDER BY x.id) + 1) * p.passo AS enviar_em
        FROM ${from} x JOIN paced p ON p.conta_id = x.conta_id AND p.endpoint_id = x.endpoint_id
       WHERE x.kind = 'taken'
    )`;
}

/**
 * Whether the endpoint of `d` (a row of deliveries) is throttled and has given every time within the
 * horizon: a take does not read its deliveries, so a throttled backlog never fills what a take reads
 * and hides the other endpoints' deliveries behind it.
 */
export const withoutTimes = (d: string) => sql.fragment`EXISTS (
  SELECT FROM webhook_ritmo r
   WHERE r.conta_id = ${sql.identifier([d, 'conta_id'])} AND r.endpoint_id = ${sql.identifier([d, 'endpoint_id'])}
     AND r.proximo_envio_em >= now() + make_interval(secs => ${RITMO.horizonteMs / 1000}))`;

/** Whether a delivery to the endpoint `e` (conta_id, id) is throttled: the relay leaves those to the takes. */
export const throttled = (contaId: Fragment, endpointId: Fragment) =>
  sql.fragment`EXISTS (SELECT FROM webhook_ritmo r WHERE r.conta_id = ${contaId} AND r.endpoint_id = ${endpointId})`;

const Ritmo = z.object({ endpoint_id: z.string(), por_segundo: z.number().nullable() });

/**
 * Sets (or, with null, removes) an endpoint's throttle; null when the account has no such endpoint.
 * Times already given stand; the next take spaces by the new rate.
 */
export async function definirRitmo(db: Db, contaId: string, endpointId: string, porSegundo: number | null) {
  return db.transaction(async (tx) => {
    const existe = await tx.exists(sql.type(z.object({}))`
      SELECT FROM webhook_endpoints WHERE conta_id = ${contaId} AND id = ${endpointId} FOR UPDATE`);
    if (!existe) return null;
    if (porSegundo === null) {
      await tx.query(sql.typeAlias('void')`DELETE FROM webhook_ritmo WHERE conta_id = ${contaId} AND endpoint_id = ${endpointId}`);
    } else {
      await tx.query(sql.typeAlias('void')`
        INSERT INTO webhook_ritmo (conta_id, endpoint_id, por_segundo) VALUES (${contaId}, ${endpointId}, ${porSegundo})
        ON CONFLICT (conta_id, endpoint_id) DO UPDATE SET por_segundo = excluded.por_segundo`);
    }
    return Ritmo.parse({ endpoint_id: endpointId, por_segundo: porSegundo });
  });
}
