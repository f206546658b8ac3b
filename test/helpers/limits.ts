// Driving admission directly: api_admit with one request or several, as a web process sends them,
// inside one transaction when a test needs the database clock to stand still (now() is fixed within
// a transaction).
import { z } from 'zod';
import { hashToken } from '#shared/domain/chaves.ts';
import { AdmissionRow, admissionsOf } from '../../api/admission/admission-row.ts';
import { sql, type Db } from '#shared/db/pool.ts';
import type { Prova } from '../../api/admission/admission-row.ts';

export const Admission = z.object({
  outcome: z.string(),
  reason: z.string().nullable(),
  slot_held: z.boolean().nullable(),
  retry_after: z.number().nullable(),
  suspended_until: z.string().nullable(),
  rajada_r: z.number().nullable(),
  minuto_r: z.number().nullable(),
  mes_r: z.number().nullable(),
});
export type Admission = z.infer<typeof Admission>;

export async function admitOnce(
  db: Db,
  token: string,
  options: { custo?: number; classe?: 'leitura' | 'escrita'; holder?: string; release?: string[] } = {},
): Promise<Admission> {
  // The keys given back are this token's account's.
  const release = options.release?.length
    ? await db.any(sql.type(z.object({ contaId: z.string(), chaveId: z.string() }))`
        SELECT ch.conta_id AS "contaId", ch.id AS "chaveId" FROM unnest(${sql.array(options.release, 'uuid')}::uuid[]) AS r(id)
          JOIN chaves_api ch ON ch.id = r.id`)
    : [];
  const [row] = await admitBatch(db, [{ token, custo: options.custo ?? 1, classe: options.classe ?? 'leitura' }],
    { holder: options.holder ?? 'test', release: [...release] });
  return Admission.parse(row);
}

/**
 * Admits requests one after another, each releasing its slot before the next (as finished
 * requests do), all at one instant of the database clock. Returns every admission.
 */
export async function admitSequence(
  db: Db,
  token: string,
  count: number,
  options: { custo?: number; classe?: 'leitura' | 'escrita' } = {},
): Promise<Admission[]> {
  const chaveId = await db.oneFirst(sql.unsafe`SELECT id FROM chaves_api WHERE token_hash = ${sql.binary(hashToken(token))}`);
  const results: Admission[] = [];
  let release: string[] = [];
  for (let i = 0; i < count; i++) {
    const result = await admitOnce(db, token, { ...options, release });
    release = result.slot_held ? [String(chaveId)] : [];
    results.push(result);
  }
  if (release.length) await db.query(sql.unsafe`UPDATE request_slots SET in_flight = in_flight - 1 WHERE holder = 'test' AND chave_id = ${String(chaveId)}`);
  return results;
}

/** Sets ceilings of a plan that a test does not exercise out of the way. */
export async function raisePlan(db: Db, plano: string, change: Partial<Record<'rajada' | 'rajada_recarga_por_segundo' | 'leituras_por_minuto' | 'escritas_por_minuto' | 'chamadas_por_mes' | 'simultaneas_por_chave' | 'simultaneas_por_conta', number>>): Promise<void> {
  await db.query(sql.unsafe`
    UPDATE planos SET
      rajada = coalesce(${change.rajada ?? null}::int, rajada),
      rajada_recarga_por_segundo = coalesce(${change.rajada_recarga_por_segundo ?? null}::int, rajada_recarga_por_segundo),
      leituras_por_minuto = coalesce(${change.leituras_por_minuto ?? null}::int, leituras_por_minuto),
      escritas_por_minuto = coalesce(${change.escritas_por_minuto ?? null}::int, escritas_por_minuto),
      chamadas_por_mes = coalesce(${change.chamadas_por_mes ?? null}::int, chamadas_por_mes),
      simultaneas_por_chave = coalesce(${change.simultaneas_por_chave ?? null}::int, simultaneas_por_chave),
      simultaneas_por_conta = coalesce(${change.simultaneas_por_conta ?? null}::int, simultaneas_por_conta)
    WHERE id = ${plano}`);
}

export type BatchItem = {
  token: string; custo?: number; custoMes?: number | null; classe?: 'leitura' | 'escrita'; escopo?: string | null;
  permissao?: string | null;
  /** What shows the request may be a repetition (api/http/repetition.ts). */
  prova?: Prova | null;
};

/** One call of admission, as a web process makes it; the rows in the order of the items, each checked against its schema. */
export async function admitBatch(
  db: Db,
  items: BatchItem[],
  options: { holder?: string; release?: { contaId: string; chaveId: string }[]; semVaga?: boolean } = {},
): Promise<AdmissionRow[]> {
  const release = options.release ?? [];
  const text = await db.oneFirst(sql.type(z.object({ admissions: z.string() }))`
    SELECT api_admit(
      ${sql.array(items.map((i) => `\\x${hashToken(i.token).toString('hex')}`), 'text')}::bytea[],
      ${sql.array(items.map((i) => i.escopo ?? null), 'text')}, ${sql.array(items.map((i) => i.permissao ?? null), 'text')},
      ${sql.array(items.map((i) => i.custo ?? 1), 'int4')}, ${sql.array(items.map((i) => i.custoMes ?? null), 'int4')},
      ${sql.array(items.map((i) => i.classe ?? 'leitura'), 'text')},
      ${items.some((i) => i.prova) ? sql.jsonb(items.map((i) => i.prova ?? null)) : null}, ${options.holder ?? 'test'},
      ${sql.array(release.map((r) => r.contaId), 'uuid')}, ${sql.array(release.map((r) => r.chaveId), 'uuid')},
      p_sem_vaga => ${options.semVaga ?? false}
    ) AS admissions`);
  return admissionsOf(text, items.length).map((row) => AdmissionRow.parse(row));
}
