// What `npm run ops -- status` shows, read from SQL alone (no telemetry needed): the web's requests
// and refusals of the last minutes, the work waiting at each stage, the deliveries of the last
// minutes by outcome, the endpoints failing or disabled, and the keys suspended or near a ceiling.
// Each figure comes from the request log, the pipeline's tables or an operator view (README,
// "Operator views"), so what the screen says can be checked against them.
import { z } from 'zod';
import { sql, type Db } from '#shared/db/pool.ts';

/** How many minutes the per-minute series cover (the current minute last). */
export const MINUTES = 15;

const PerMinute = z.object({ minuto: z.number().int(), classe: z.string(), n: z.number().int() });
const Count = z.object({ chave: z.string(), n: z.number().int() });
const Queue = z.object({ queue: z.string(), state: z.string(), items: z.number().int(), oldest_seconds: z.number().nullable() });
const Endpoint = z.object({ conta_id: z.string(), endpoint_id: z.string(), url: z.string(), estado: z.string(), desde: z.string().nullable() });
const Key = z.object({ conta_id: z.string(), prefixo: z.string(), estado: z.string(), detalhe: z.string() });

/** Per class (2xx, 429, succeeded…), a count per minute, oldest first, the current minute last. */
export type Series = Record<string, number[]>;

export type Snapshot = {
  at: string;
  minutes: number;
  requests: Series;
  refusals: Record<string, number>;
  queues: z.infer<typeof Queue>[];
  deliveries: Series;
  endpoints: z.infer<typeof Endpoint>[];
  keys: z.infer<typeof Key>[];
};

export async function readSnapshot(db: Db): Promise<Snapshot> {
  const [at, requests, refusals, queues, deliveries, endpoints, keys] = await Promise.all([
    db.oneFirst(sql.type(z.object({ at: z.string() }))`SELECT to_json(now())#>>'{}' AS at`),
    db.any(sql.type(PerMinute)`
      SELECT ${minuteIndex('created_at')} AS minuto, (status / 100)::text || 'xx' AS classe, count(*)::int AS n
        FROM request_log WHERE ${inWindow('created_at')} GROUP BY 1, 2`),
    db.any(sql.type(Count)`
      SELECT CASE WHEN refused_by IS DISTINCT FROM codigo AND refused_by IS NOT NULL THEN codigo || ' (' || refused_by || ')'
                  ELSE coalesce(codigo, status::text) END AS chave, count(*)::int AS n
        FROM request_log WHERE ${inWindow('created_at')} AND status IN (401, 403, 429, 503) GROUP BY 1 ORDER BY 2 DESC, 1`),
    db.any(sql.type(Queue)`
      SELECT queue, state, items::int, extract(epoch FROM now() - oldest)::float8 AS oldest_seconds FROM queue_depth`),
    db.any(sql.type(PerMinute)`
      SELECT ${minuteIndex('started_at')} AS minuto,
             CASE WHEN succeeded THEN 'sucesso' WHEN succeeded IS NULL THEN 'em_curso_ou_interrompida' ELSE 'falha' END AS classe,
             count(*)::int AS n
        FROM all_delivery_attempts WHERE ${inWindow('started_at')} GROUP BY 1, 2`),
    readEndpoints(db),
    readKeys(db),
  ]);
  return {
    at, minutes: MINUTES, requests: series(requests), refusals: Object.fromEntries(refusals.map((r) => [r.chave, r.n])),
    queues: [...queues], deliveries: series(deliveries), endpoints: [...endpoints], keys: [...keys],
  };
}

/** Endpoints failing (active, with a run of failures) or disabled in the last day. */
function readEndpoints(db: Db) {
  return db.any(sql.type(Endpoint)`
    SELECT conta_id, id AS endpoint_id, url,
           CASE WHEN ativo THEN 'falhando' ELSE 'desativado: ' || coalesce(desativado_motivo, '') END AS estado,
           to_json(CASE WHEN ativo THEN falhando_desde ELSE desativado_em END)#>>'{}' AS desde
      FROM webhook_endpoints
     WHERE (ativo AND falhando_desde IS NOT NULL) OR (NOT ativo AND desativado_em > now() - interval '1 day')
     ORDER BY ativo DESC, coalesce(falhando_desde, desativado_em), conta_id, id`);
}

/** Keys suspended now (api_keys_suspended) and keys at or near a ceiling (api_keys_near_limits). */
function readKeys(db: Db) {
  return db.any(sql.type(Key)`
    SELECT conta_id, prefixo, 'suspensa' AS estado,
           'até ' || (to_json(suspended_until)#>>'{}') || coalesce(', limite ' || limit_hit, '') AS detalhe
      FROM api_keys_suspended
    UNION ALL
    SELECT conta_id, prefixo, CASE WHEN cardinality(at_ceiling) > 0 THEN 'no_teto' ELSE 'perto_do_teto' END,
           array_to_string(CASE WHEN cardinality(at_ceiling) > 0 THEN at_ceiling ELSE near END, ', ')
      FROM api_keys_near_limits
     ORDER BY 3 DESC, 1, 2`);
}

/** The minute of `column` counted back from the current one: 0 is the oldest of the window. */
const minuteIndex = (column: string) => sql.fragment`
  (${MINUTES - 1} - floor(extract(epoch FROM date_trunc('minute', now()) - date_trunc('minute', ${sql.identifier([column])})) / 60))::int`;

const inWindow = (column: string) => sql.fragment`
  ${sql.identifier([column])} >= date_trunc('minute', now()) - make_interval(mins => ${MINUTES - 1})`;

function series(rows: readonly z.infer<typeof PerMinute>[]): Series {
  const out: Series = {};
  for (const r of rows) {
    if (r.minuto < 0 || r.minuto >= MINUTES) continue;
    const values = (out[r.classe] ??= Array.from({ length: MINUTES }, () => 0));
    values[r.minuto] = (values[r.minuto] ?? 0) + r.n;
  }
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => a.localeCompare(b)));
}
