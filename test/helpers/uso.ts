// What a call was charged: the month counter and the burst bucket of a key, read from the
// database after the process settled (settlements are batched a few milliseconds later).
import { z } from 'zod';
import { sql, type Db } from '#shared/db/pool.ts';
import { createPlan } from './fixtures.ts';

export type Uso = { mes: number; tokens: number; at: number };

export const lerUso = (db: Db, contaId: string, chaveId: string): Promise<Uso> =>
  db.one(sql.type(z.object({ mes: z.number(), tokens: z.number(), at: z.number() }))`
    SELECT coalesce((SELECT calls FROM effective_monthly_usage WHERE conta_id = ${contaId}), 0)::int AS mes,
           coalesce((SELECT tokens FROM rate_buckets WHERE chave_id = ${chaveId}), 0)::float8 AS tokens,
           coalesce((SELECT extract(epoch FROM refreshed_at) FROM rate_buckets WHERE chave_id = ${chaveId}), 0)::float8 AS at`);

/**
 * The calls of a class counted in the current minute. A window of an earlier minute counts 0:
 * admission restarts it only at its next charge, so reading its `used` after a minute boundary
 * would count the previous minute's calls.
 */
export const minuteUsed = (contaId: string, classe: 'leitura' | 'escrita') => sql.fragment`
  coalesce((SELECT used FROM minute_windows
             WHERE conta_id = ${contaId} AND classe = ${classe} AND window_start = date_trunc('minute', now())), 0)::int`;

/** Settlements are batched: write them now instead of waiting for the batch. */
export const settled = (app: { web: { flush(): Promise<void> } }) => app.web.flush();

/**
 * A plan whose burst is too deep to fill and refills slowly, so the bucket's fall shows exactly
 * what a call took; every other ceiling is out of the way.
 */
export async function planoMedidor(db: Db, id = 'medidor'): Promise<string> {
  await createPlan(db, id, {
    leituras_por_minuto: 1000000, escritas_por_minuto: 1000000, chamadas_por_mes: 100000000, rajada: 1000000,
    rajada_recarga_por_segundo: 1, simultaneas_por_chave: 200, simultaneas_por_conta: 200,
  });
  return id;
}

/** Month units and burst tokens taken between two readings (the refill meanwhile added back). */
export function cobrado(antes: Uso, depois: Uso, recargaPorSegundo = 1): { mes: number; rajada: number } {
  const rajada = antes.at === 0 ? Number.NaN : antes.tokens + (depois.at - antes.at) * recargaPorSegundo - depois.tokens;
  return { mes: depois.mes - antes.mes, rajada: Math.round(rajada * 100) / 100 };
}

/** What each GET costs (month units and burst tokens alike, contract §8.2), one call at a time. */
export async function custosDasLeituras(
  app: { web: { flush(): Promise<void> }; db: { pool: Db } },
  conta: { contaId: string; chaveId: string },
  get: (path: string) => Promise<{ status: number }>,
  cases: readonly [string, number][],
): Promise<[string, number, number][]> {
  const medidos: [string, number, number][] = [];
  for (const [path] of cases) {
    await settled(app);
    const antes = await lerUso(app.db.pool, conta.contaId, conta.chaveId);
    const res = await get(path);
    if (res.status !== 200) throw new Error(`${path} answered ${res.status}`);
    await settled(app);
    const { mes, rajada } = cobrado(antes, await lerUso(app.db.pool, conta.contaId, conta.chaveId));
    medidos.push([path, mes, rajada]);
  }
  return medidos;
}

/**
 * Counters per minute restart with each minute: a comparison across requests must not straddle one.
 * Waits out the last seconds of the database's minute when a test starts in them.
 */
export async function awayFromMinuteBoundary(db: Db): Promise<void> {
  const second = Number(await db.oneFirst(sql.unsafe`SELECT extract(second FROM now())::float8`));
  if (second > 55) await new Promise((resolve) => setTimeout(resolve, (60.2 - second) * 1000));
}

/** Past the top of the hour when fewer than 30 s of it are left: for a test that reads an hourly counter over a few seconds. */
export async function awayFromHourBoundary(db: Db): Promise<void> {
  const left = Number(await db.oneFirst(sql.unsafe`SELECT extract(epoch FROM date_trunc('hour', now()) + interval '1 hour' - now())::float8`));
  if (left < 30) await new Promise((resolve) => setTimeout(resolve, (left + 0.2) * 1000));
}

/** The minute's counter of a class planted at `used`, in the current minute (away from its end). */
export async function spendMinute(db: Db, contaId: string, classe: 'leitura' | 'escrita', used: number): Promise<void> {
  await awayFromMinuteBoundary(db);
  await db.query(sql.typeAlias('void')`
    INSERT INTO minute_windows (conta_id, classe, window_start, used) VALUES (${contaId}, ${classe}, date_trunc('minute', now()), ${used})
    ON CONFLICT (conta_id, classe) DO UPDATE SET used = excluded.used, window_start = excluded.window_start`);
}
