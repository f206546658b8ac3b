// What a call was charged: the month counter and the burst bucket of a key, read from the
// database after the process settled (settlements are batched a few milliseconds later).
import { z } from 'zod';
import { sql, type Db } from '../../shared/db/pool.ts';

export type Uso = { mes: number; tokens: number; at: number };

export const lerUso = (db: Db, contaId: string, chaveId: string): Promise<Uso> =>
  db.one(sql.type(z.object({ mes: z.number(), tokens: z.number(), at: z.number() }))`
    SELECT coalesce((SELECT chamadas FROM uso_mensal WHERE conta_id = ${contaId}), 0)::int AS mes,
           coalesce((SELECT tokens FROM rate_buckets WHERE chave_id = ${chaveId}), 0)::float8 AS tokens,
           coalesce((SELECT extract(epoch FROM refreshed_at) FROM rate_buckets WHERE chave_id = ${chaveId}), 0)::float8 AS at`);

export const settled = () => new Promise((resolve) => setTimeout(resolve, 80));

/**
 * A plan whose burst is too deep to fill and refills slowly, so the bucket's fall shows exactly
 * what a call took; every other ceiling is out of the way.
 */
export async function planoMedidor(db: Db, id = 'medidor'): Promise<string> {
  await db.query(sql.unsafe`
    INSERT INTO planos (id, nome, chaves_ativas, webhook_endpoints, leituras_por_minuto, escritas_por_minuto,
                        chamadas_por_mes, rajada, rajada_recarga_por_segundo, simultaneas_por_chave,
                        simultaneas_por_conta, entregas_webhook_por_hora)
    VALUES (${id}, 'Medidor', 10, 10, 1000000, 1000000, 100000000, 1000000, 1, 200, 200, 5000)
    ON CONFLICT (id) DO NOTHING`);
  return id;
}

/** Month units and burst tokens taken between two readings (the refill meanwhile added back). */
export function cobrado(antes: Uso, depois: Uso, recargaPorSegundo = 1): { mes: number; rajada: number } {
  const rajada = antes.at === 0 ? Number.NaN : antes.tokens + (depois.at - antes.at) * recargaPorSegundo - depois.tokens;
  return { mes: depois.mes - antes.mes, rajada: Math.round(rajada * 100) / 100 };
}
