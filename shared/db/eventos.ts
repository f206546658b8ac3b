// The event log of the API (GET /eventos and below): an account's relayed events as the key's
// creator would receive them at an endpoint (outbox.ts's rule), every delivery attempt of one, and
// its deliveries to the endpoints that receive it now (what a redelivery scheduled). Only relayed
// events: until then a grouped event still changes, and nobody has been sent it. History is read
// through the views over the working tables and their archive (sql/code/archive.sql).
import { z } from 'zod';
import { destinosDoEvento, tiposQueRecebe } from './outbox.ts';
import { pageClauses, type Posicao } from './paging.ts';
import { sql, type Db } from './pool.ts';

/** Who reads the log: the key's account and the user who created the key. */
export type Leitor = { contaId: string; usuarioId: string };

/** What the contract's §6.1 envelope is built from (shared/domain/envelope.ts), as the worker reads it to deliver. */
export const EventoRow = z.object({
  id: z.string(),
  tipo: z.string(),
  criado_em: z.string(),
  conta_id: z.string(),
  dados: z.record(z.string(), z.unknown()),
});
export type EventoRow = z.infer<typeof EventoRow>;

const colunas = sql.fragment`o.id, o.tipo, o.criado_em, o.conta_id, o.dados`;
/** The events of `o` the reader may see (relayed, of a type they receive); POST /eventos/recuperar's too. */
export const visiveis = (leitor: Leitor) => sql.fragment`
  o.conta_id = ${leitor.contaId} AND o.relayed_at IS NOT NULL AND o.tipo IN ${tiposQueRecebe(leitor.contaId, leitor.usuarioId)}`;

/** One event the reader may see, or null (another account's, not relayed yet, purged, or of a type not theirs). */
export async function lerEvento(db: Db, leitor: Leitor, id: string): Promise<EventoRow | null> {
  return db.maybeOne(sql.type(EventoRow)`SELECT ${colunas} FROM eventos o WHERE o.id = ${id} AND ${visiveis(leitor)}`);
}

const EventoPageRow = EventoRow.extend({ cursor_ts: z.string() });

export type FiltroEventos = { limite: number; cursor?: Posicao; tipo?: string; criado_desde?: string; criado_ate?: string };

/** A page of the events the reader may see, newest first, with one row more when another page follows. */
export async function listarEventos(db: Db, leitor: Leitor, filtro: FiltroEventos) {
  const page = pageClauses('o', 'criado_em', filtro, 'desc');
  const filtros = [
    filtro.tipo ? sql.fragment`o.tipo = ${filtro.tipo}` : sql.fragment`true`,
    filtro.criado_desde ? sql.fragment`o.criado_em >= ${filtro.criado_desde}::timestamptz` : sql.fragment`true`,
    filtro.criado_ate ? sql.fragment`o.criado_em < ${filtro.criado_ate}::timestamptz` : sql.fragment`true`,
  ];
  return db.any(sql.type(EventoPageRow)`
    SELECT ${colunas}, ${page.cursorColumn}
      FROM eventos o
     WHERE ${visiveis(leitor)} AND ${sql.join(filtros, sql.fragment` AND `)} AND ${page.where}
     ${page.orderLimit}`);
}

export const TentativaRow = z.object({
  id: z.string(),
  cursor_ts: z.string(),
  entrega_id: z.string(),
  endpoint_id: z.string(),
  endpoint_descricao: z.string().nullable(),
  tentativa: z.number().int(),
  iniciada_em: z.string(),
  duracao_ms: z.number().int().nullable(),
  sucesso: z.boolean(),
  status_http: z.number().int().nullable(),
  erro: z.string().nullable(),
  resposta: z.string().nullable(),
});

const EM_ANDAMENTO = 'em andamento: a requisição saiu e a resposta ainda não foi registrada';

// An attempt is known by its delivery and number; a page's position takes a UUID made of both (an
// MD5 with the version and variant digits of a UUID v4), so attempts that started at the same
// instant keep one order across pages.
const idDaTentativa = sql.fragment`overlay(overlay(md5(a.delivery_id::text || ':' || a.attempt) PLACING '4' FROM 13) PLACING '8' FROM 17)::uuid`;
const tentativasDoEvento = (contaId: string, eventoId: string) => sql.fragment`
  FROM all_deliveries d
  JOIN all_delivery_attempts a ON a.conta_id = d.conta_id AND a.delivery_id = d.id
  JOIN webhook_endpoints e ON e.conta_id = d.conta_id AND e.id = d.endpoint_id
 WHERE d.conta_id = ${contaId} AND d.event_id = ${eventoId}`;

/**
 * A page of every attempt to deliver one event to the account's endpoints (disabled ones included:
 * it is history), newest first; null when the page's cursor is not an attempt of this event (a
 * cursor of another event's list). Never the endpoint's secret or URL; the response body as the
 * attempt kept it (its first 4 KB).
 */
export async function listarTentativasDoEvento(db: Db, contaId: string, eventoId: string, pagina: { limite: number; cursor?: Posicao }) {
  if (pagina.cursor && !(await db.exists(sql.type(z.object({}))`
    SELECT ${tentativasDoEvento(contaId, eventoId)} AND ${idDaTentativa} = ${pagina.cursor.id}::uuid`))) {
    return null;
  }
  const page = pageClauses('t', 'criado_em', pagina, 'desc');
  return db.any(sql.type(TentativaRow)`
    WITH t AS (
      SELECT ${idDaTentativa} AS id, a.started_at AS criado_em,
             d.id AS entrega_id, d.endpoint_id, e.descricao AS endpoint_descricao, a.attempt AS tentativa,
             a.started_at AS iniciada_em, a.duration_ms AS duracao_ms, coalesce(a.succeeded, false) AS sucesso,
             a.response_status AS status_http,
             -- An attempt without an outcome is going out now, or was cut short (INTERRUPTED).
             coalesce(a.error, CASE WHEN a.succeeded IS NULL THEN ${EM_ANDAMENTO} END) AS erro,
             a.response_body AS resposta
      ${tentativasDoEvento(contaId, eventoId)}
    )
    SELECT t.id, ${page.cursorColumn}, t.entrega_id, t.endpoint_id, t.endpoint_descricao, t.tentativa, t.iniciada_em,
           t.duracao_ms, t.sucesso, t.status_http, t.erro, t.resposta
      FROM t
     WHERE ${page.where}
     ${page.orderLimit}`);
}

const SITUACAO = { pending: 'pendente', succeeded: 'entregue', failed: 'falhou' } as const;

export const EntregaRow = z.object({
  id: z.string(),
  endpoint_id: z.string(),
  endpoint_descricao: z.string().nullable(),
  situacao: z.enum(['pending', 'succeeded', 'failed']).transform((s) => SITUACAO[s]),
  proxima_tentativa_em: z.string().nullable(),
});

/**
 * The deliveries of one event to the endpoints that should receive it now (or to `endpointId` only,
 * when it is one of them): what a redelivery scheduled, read again at any time.
 */
export async function entregasAosDestinos(db: Db, contaId: string, eventoId: string, endpointId?: string) {
  return db.any(sql.type(EntregaRow)`
    SELECT d.id, d.endpoint_id, e.descricao AS endpoint_descricao, d.status AS situacao,
           CASE WHEN d.status = 'pending' THEN d.next_attempt_at END AS proxima_tentativa_em
      FROM (${destinosDoEvento(contaId, eventoId, endpointId)}) x
      JOIN all_deliveries d ON d.conta_id = x.conta_id AND d.event_id = x.event_id AND d.endpoint_id = x.endpoint_id
      JOIN webhook_endpoints e ON e.conta_id = d.conta_id AND e.id = d.endpoint_id
     ORDER BY d.endpoint_id`);
}

/** The account's webhook deliveries this UTC hour against its plan's hourly cap (contract §8.1). */
export async function entregasNestaHora(db: Db, contaId: string) {
  return db.one(sql.type(z.object({ limite: z.number().int(), usadas: z.number().int() }))`
    SELECT pl.entregas_webhook_por_hora AS limite, coalesce(u.deliveries, 0) AS usadas
      FROM contas c
      JOIN planos pl ON pl.id = c.plano_id
      LEFT JOIN webhook_hourly_usage u ON u.conta_id = c.id AND u.hour = date_trunc('hour', now(), 'UTC')
     WHERE c.id = ${contaId}`);
}
