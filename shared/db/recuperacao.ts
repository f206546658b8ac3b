// POST /eventos/recuperar (docs/decisions/0043-recovery-by-time-range.md): redelivery of what an
// account's events of a time range should have brought, by the rules of the single redelivery
// (shared/db/outbox.ts, replayEvents): the events the key sees (eventos.ts, visiveis), to the
// endpoints that receive them now, optionally only where the delivery failed. What one call takes is
// bounded; the answer says where the next call starts.
import { z } from 'zod';
import type { Leitor } from './eventos.ts';
import { visiveis } from './eventos.ts';
import { destinos, replayEvents, saindo, type Replayed } from './outbox.ts';
import { sql, type Db } from './pool.ts';

/** The longest range one call accepts, and the most events it schedules (the rest: proximo_desde). */
export const RECUPERACAO = { maxDias: 7, maxEventos: 1_000 } as const;

export type FiltroRecuperacao = {
  desde: string;
  ate: string;
  tipo?: string;
  endpointId?: string;
  somenteFalhas: boolean;
};

type Fragment = ReturnType<typeof sql.fragment>;
type Par = Pick<z.infer<typeof Replayed>, 'event_id' | 'endpoint_id'>;

/**
 * A delivery `d` that failed: given up, or waiting for another attempt after one that did not
 * succeed (a receiver that was down, whose retries are spaced out). Still pending after an attempt
 * of its run (run_attempts, which a replay restarts at 0) and no longer under a lease, that attempt
 * failed: one that succeeds ends the delivery.
 */
const falhou = sql.fragment`(d.status = 'failed' OR (d.status = 'pending' AND d.lease_id IS NULL AND d.run_attempts > 0))`;

/** Which of an event's destinos (`ev` to endpoint `e`) the recovery schedules. */
function alvo(filtro: FiltroRecuperacao): Fragment {
  const endpoint = filtro.endpointId === undefined ? sql.fragment`true` : sql.fragment`e.id = ${filtro.endpointId}`;
  const falhas = !filtro.somenteFalhas ? sql.fragment`true` : sql.fragment`EXISTS (
    SELECT FROM all_deliveries d WHERE d.conta_id = ev.conta_id AND d.event_id = ev.id AND d.endpoint_id = e.id AND ${falhou})`;
  return sql.fragment`${endpoint} AND ${falhas}`;
}

/** The events of the range the reader sees, archived or not, as a source of destinos. */
const noIntervalo = (leitor: Leitor, filtro: FiltroRecuperacao) => sql.fragment`
  (SELECT o.conta_id, o.id, o.tipo, o.endpoint_id, o.seq, o.criado_em FROM eventos o
    WHERE ${visiveis(leitor)} AND o.criado_em >= ${filtro.desde}::timestamptz AND o.criado_em < ${filtro.ate}::timestamptz
      AND (${filtro.tipo ?? null}::text IS NULL OR o.tipo = ${filtro.tipo ?? null}::text))`;

const porIds = (tabela: 'eventos' | 'outbox', contaId: string, ids: readonly string[]) => sql.fragment`
  (SELECT conta_id, id, tipo, endpoint_id, seq FROM ${sql.identifier([tabela])}
    WHERE conta_id = ${contaId} AND id = ANY (${sql.array([...ids], 'uuid')}))`;

const Selecao = z.object({ ids: z.array(z.string()), proximo_desde: z.string().nullable() });

/**
 * The events of the range with something to schedule, oldest first, up to maxEventos: cut at a
 * millisecond (the precision of the answer's proximo_desde), so the next call, from proximo_desde,
 * neither repeats nor skips one. Events of one instant are never split: when more than maxEventos
 * share the first, that instant is taken whole.
 */
async function selecionar(db: Db, leitor: Leitor, filtro: FiltroRecuperacao, maxEventos: number) {
  return db.one(sql.type(Selecao)`
    WITH cand AS MATERIALIZED (
      SELECT DISTINCT x.event_id, date_trunc('milliseconds', x.criado_em) AS ms
        FROM (${destinos(noIntervalo(leitor, filtro), alvo(filtro), sql.fragment`, ev.criado_em`)}) x
    ), corte AS (
      SELECT ms FROM cand ORDER BY ms, event_id OFFSET ${maxEventos} LIMIT 1
    ), ate AS (
      SELECT CASE WHEN c.ms > (SELECT min(ms) FROM cand) THEN c.ms ELSE (SELECT min(ms) FROM cand WHERE ms > c.ms) END AS ms
        FROM corte c
    )
    SELECT coalesce(array_agg(event_id::text ORDER BY ms, event_id), '{}') AS ids, (SELECT ms FROM ate) AS proximo_desde
      FROM cand WHERE ms < coalesce((SELECT ms FROM ate), 'infinity')`);
}

/** The pairs the recovery of `ids` would make due now: their destinos but those on their way (saindo). */
async function simular(db: Db, contaId: string, ids: readonly string[], filtro: FiltroRecuperacao): Promise<readonly Par[]> {
  return db.any(sql.type(z.object({ event_id: z.string(), endpoint_id: z.string() }))`
    SELECT x.event_id, x.endpoint_id FROM (${destinos(porIds('eventos', contaId, ids), alvo(filtro))}) x
     WHERE NOT EXISTS (SELECT FROM deliveries d WHERE d.conta_id = x.conta_id AND d.event_id = x.event_id
                                                  AND d.endpoint_id = x.endpoint_id AND ${saindo('d')})
     ORDER BY x.endpoint_id, x.event_id`);
}

/** Brings the archived ones of `ids` back to the working tables (restore_event), as a replay does. */
async function restaurar(tx: Db, contaId: string, ids: readonly string[]): Promise<void> {
  await tx.query(sql.typeAlias('void')`
    SELECT restore_event(a.conta_id, a.id) FROM outbox_archive a
     WHERE a.conta_id = ${contaId} AND a.id = ANY (${sql.array([...ids], 'uuid')})`);
}

export type Recuperado = { pares: readonly Par[]; proximoDesde: string | null };

/**
 * Schedules (or, with `simulacao`, only counts) the recovery, of at most `maxEventos` events, in the caller's transaction: the
 * deliveries made due, and where the next call starts (null: the range is done). The archiver is
 * held off from the selection to the end, so what was selected is what is replayed.
 */
export async function recuperar(
  tx: Db,
  leitor: Leitor,
  filtro: FiltroRecuperacao,
  options: { simulacao: boolean; maxEventos?: number },
): Promise<Recuperado> {
  const { simulacao, maxEventos = RECUPERACAO.maxEventos } = options;
  await tx.query(sql.typeAlias('void')`SELECT pg_advisory_xact_lock_shared(archive_lock())`);
  const { ids, proximo_desde } = await selecionar(tx, leitor, filtro, maxEventos);
  if (ids.length === 0) return { pares: [], proximoDesde: proximo_desde };
  if (simulacao) return { pares: await simular(tx, leitor.contaId, ids, filtro), proximoDesde: proximo_desde };
  await restaurar(tx, leitor.contaId, ids);
  return { pares: await replayEvents(tx, porIds('outbox', leitor.contaId, ids), alvo(filtro)), proximoDesde: proximo_desde };
}

/** Keeps what a call answered, for the repetitions of its Idempotency-Key (by this id). */
export async function guardarResposta(tx: Db, contaId: string, id: string, resposta: Record<string, unknown>): Promise<void> {
  await tx.query(sql.typeAlias('void')`
    INSERT INTO recuperacoes (conta_id, id, resposta) VALUES (${contaId}, ${id}, ${sql.jsonb(resposta as never)})`);
}

/** What a call answered (null once purged). */
export async function lerResposta(db: Db, contaId: string, id: string): Promise<unknown> {
  return db.maybeOneFirst(sql.type(z.object({ resposta: z.unknown() }))`
    SELECT resposta FROM recuperacoes WHERE conta_id = ${contaId} AND id = ${id}`);
}
