// Idempotency-Key (contract §4.2 rules 2-5; docs/decisions/0008-idempotency-key-on-every-post.md),
// per API key: the hash of the canonical body (RFC 8785, so key order and spacing never make a
// conflict), the status and the created id are kept 24 h — never the body or the response. A
// repetition gets the same status and the resource read again; a business refusal is replayed with
// its status and codigo.
//
// How: the POST's transaction starts with api_write_claim, which takes a transaction-scoped lock on
// the key without waiting (held: 409) and reads the record an earlier request left. The record is
// written in the same transaction as the change, so both commit or neither does; a process that
// dies mid-request leaves no record and no lock behind. A route whose change is one SQL function
// does all of it in that one statement (RouteDef.once).
import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import { parseItem } from 'structured-headers';
import { z } from 'zod';
import { Nothing, sql, type Db } from '#shared/db/pool.ts';
import { ApiError, type ItemRecusado, type Motivo } from '#shared/errors.ts';
import { activeTraceparent } from '#shared/telemetry/spans.ts';
import type { Caller } from '../admission/caller.ts';

export const IDEMPOTENCY_KEY_MAX = 64;

const KEY_CHARACTERS = new RegExp(`^[\\x20-\\x7e]{1,${IDEMPOTENCY_KEY_MAX}}$`);
const KEY_RULE = `de 1 a ${IDEMPOTENCY_KEY_MAX} caracteres ASCII visíveis ou espaços, ou essa chave entre aspas ` +
  '(uma string de Structured Fields, RFC 9651, como no rascunho IETF do cabeçalho)';

/**
 * The key as integrators send it: the bare value, or the quoted string form of the IETF
 * Idempotency-Key draft ("8e03978e-…"), which is the same key.
 */
export function parseIdempotencyKey(raw: string): string | null {
  const value = raw.trim();
  let key = value;
  if (value.startsWith('"')) {
    try {
      const [item] = parseItem(value);
      if (typeof item !== 'string') return null;
      key = item;
    } catch {
      return null;
    }
  }
  return KEY_CHARACTERS.test(key) ? key : null;
}

const keyHeader = z
  .string()
  .transform((raw, ctx) => {
    const key = parseIdempotencyKey(raw);
    if (key === null) {
      ctx.addIssue({ code: 'custom', message: `use ${KEY_RULE}` });
      return z.NEVER;
    }
    return key;
  })
  .describe(`Chave única da operação: ${KEY_RULE}. Guardada por 24 horas, ligada ao método e ao caminho em que foi usada.`);

export const idempotencyHeaders = (required: boolean) =>
  z.object({ 'idempotency-key': required ? keyHeader : keyHeader.optional() });

export function bodyHash(body: unknown): Buffer {
  return createHash('sha256').update(canonicalize(body) ?? '').digest();
}

/** A request with an Idempotency-Key: the key, the method and path it was used on, the body's hash. */
export type KeyedRequest = { key: string; route: string; hash: Buffer };

export type Begun =
  | { kind: 'new' }
  | { kind: 'replay'; status: number; resourceId: string | null; codigo: string | null; motivo: string | null; recusas: ItemRecusado[] | null };


/** How a write claimed its Idempotency-Key (api_write_claim: route and hash compared there). */
export const Claim = z.object({
  claim: z.enum(['new', 'running', 'conflito', 'done']),
  status_code: z.number().nullable(),
  codigo: z.string().nullable(),
  motivo: z.string().nullable(),
  /** The refused items of a refused batch, kept to be replayed as they were answered (the body's recusas). */
  refusals: z.array(z.object({ indice: z.number().int(), motivo: z.string(), mensagem: z.string() })).nullish(),
});
export type Claim = z.infer<typeof Claim>;
const ClaimRow = Claim.extend({ resource_id: z.string().nullable() });

/** Whether the request runs (new) or repeats an earlier one; 409 while it runs elsewhere, 422 for another body. */
export function begunFrom(claim: Claim & { resource_id?: string | null }): Begun {
  switch (claim.claim) {
    case 'new':
      return { kind: 'new' };
    case 'running':
      throw new ApiError(409, 'idempotencia_em_andamento', 'Uma requisição com esta Idempotency-Key ainda está em andamento; repita em instantes.', {
        retryAfter: 1,
      });
    case 'conflito':
      throw new ApiError(422, 'idempotencia_conflito', 'Esta Idempotency-Key já foi usada com outro corpo ou em outra operação.');
    case 'done':
      return {
        kind: 'replay', status: claim.status_code ?? 200, resourceId: claim.resource_id ?? null, codigo: claim.codigo, motivo: claim.motivo,
        recusas: (claim.refusals ?? null) as ItemRecusado[] | null,
      };
  }
}

/**
 * The first statement of a POST's transaction: who makes the change (for the triggers), and with a
 * key, whether this request runs (new), repeats an earlier one (replay), is still running elsewhere
 * (409) or reuses the key for another body (422). A traced request hands its trace context on to
 * the events the change emits.
 */
export async function beginWrite(tx: Db, caller: Caller, keyed: KeyedRequest | null): Promise<Begun> {
  const row = await tx.one(sql.prepared('api_write_claim', ClaimRow)`
    SELECT claim, status_code, resource_id, codigo, motivo, refusals
      FROM api_write_claim(${caller.contaId}, ${caller.chaveId}, ${keyed?.key ?? null}, ${keyed?.route ?? null},
                           ${keyed ? sql.binary(keyed.hash) : null}, ${activeTraceparent()})`);
  return begunFrom(row);
}

/** Keeps how the request ended, in its transaction: its success, or its business refusal. */
export async function recordOutcome(
  db: Db,
  caller: Caller,
  keyed: KeyedRequest,
  outcome: { status: number; resourceId?: string | null; codigo?: string | null; motivo?: string | null; recusas?: ItemRecusado[] | null },
): Promise<void> {
  await db.query(sql.prepared('api_idempotency_record', Nothing)`
    SELECT FROM api_idempotency_record(${caller.contaId}, ${caller.chaveId}, ${keyed.key}, ${keyed.route},
      ${sql.binary(keyed.hash)}, ${outcome.status}, ${outcome.resourceId ?? null}, ${outcome.codigo ?? null}, ${outcome.motivo ?? null},
      ${outcome.recusas ? JSON.stringify(outcome.recusas) : null}::jsonb)`);
}

/** A business refusal (4xx) is kept and replayed; anything else leaves the key free for a retry. */
export async function recordRefusal(db: Db, caller: Caller, keyed: KeyedRequest, error: ApiError): Promise<void> {
  if (error.status < 400 || error.status >= 500) return;
  // Not for the key's own 409 (still running elsewhere) or 422 (another body): those are not this
  // request's outcome.
  if (error.codigo === 'idempotencia_em_andamento' || error.codigo === 'idempotencia_conflito') return;
  await recordOutcome(db, caller, keyed, { status: error.status, codigo: error.codigo, motivo: error.motivo ?? null, recusas: error.recusas ?? null });
}

/** The refusal a repetition answers with: same status, codigo and motivo (and refused items) as the first time. */
export function replayedRefusal(begun: Extract<Begun, { kind: 'replay' }>): ApiError {
  return new ApiError(begun.status, (begun.codigo ?? 'saldo_insuficiente') as ApiError['codigo'],
    'Repetição de uma requisição recusada: a resposta é a mesma da primeira vez.', {
      motivo: (begun.motivo ?? undefined) as Motivo | undefined,
      recusas: begun.recusas ?? undefined,
      headers: { 'Idempotent-Replayed': 'true' },
    });
}
