// Idempotency-Key (contract §4.2 rules 2-5, DESIGN §6), per API key: the hash of the canonical
// body (RFC 8785, so key order and spacing never make a conflict), the status and the created id
// are kept 24 h — never the body or the response. A repetition gets the same status and the
// resource read again; a business refusal is replayed with its status and codigo.
import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import { z } from 'zod';
import { sql, type Db } from '../shared/db/pool.ts';
import { ApiError, type Motivo } from '../shared/errors.ts';
import type { Caller } from './routes/types.ts';

export const IDEMPOTENCY_KEY_MAX = 64;
/** How long a running request holds its key; past it, a repetition may take over (its process died). */
const LEASE_SECONDS = 60;

const keyHeader = z
  .string()
  .min(1)
  .max(IDEMPOTENCY_KEY_MAX)
  .regex(/^[\x21-\x7e]+$/, 'use apenas caracteres ASCII visíveis')
  .describe('Unique key of the operation (at most 64 characters), kept 24 hours.');

export const idempotencyHeaders = (required: boolean) =>
  z.object({ 'idempotency-key': required ? keyHeader : keyHeader.optional() });

export function bodyHash(body: unknown): Buffer {
  return createHash('sha256').update(canonicalize(body) ?? '').digest();
}

export type Started =
  | { kind: 'new' }
  | { kind: 'replay'; status: number; resourceId: string | null; codigo: string | null; motivo: string | null };

const Row = z.object({
  claimed: z.boolean(),
  route: z.string(),
  request_hash: z.instanceof(Buffer),
  state: z.enum(['in_progress', 'completed']),
  status_code: z.number().nullable(),
  resource_id: z.string().nullable(),
  codigo: z.string().nullable(),
  motivo: z.string().nullable(),
});

/**
 * Claims the key for this request, or says why not: a completed record is replayed, a running one
 * is 409, a different body (or route) is 422. An expired record, or a running one whose lease has
 * passed, is taken over. One round trip (api_idempotency_start).
 */
export async function startIdempotent(db: Db, caller: Caller, key: string, route: string, hash: Buffer): Promise<Started> {
  const row = await db.maybeOne(sql.type(Row)`
    SELECT * FROM api_idempotency_start(${caller.contaId}, ${caller.chaveId}, ${key}, ${route}, ${sql.binary(hash)}, ${LEASE_SECONDS})`);
  if (row?.claimed) return { kind: 'new' };
  // Expired and purged between the claim and the read: claim it again.
  if (!row) return startIdempotent(db, caller, key, route, hash);
  if (row.route !== route || !row.request_hash.equals(hash)) {
    throw new ApiError(422, 'idempotencia_conflito', 'Esta Idempotency-Key já foi usada com outro corpo ou em outra operação.');
  }
  if (row.state === 'in_progress') {
    throw new ApiError(409, 'idempotencia_em_andamento', 'Uma requisição com esta Idempotency-Key ainda está em andamento; repita em instantes.', {
      retryAfter: 1,
    });
  }
  return { kind: 'replay', status: row.status_code ?? 200, resourceId: row.resource_id, codigo: row.codigo, motivo: row.motivo };
}

/** Marks the key done, in the transaction of the change itself: both commit or neither does. */
export async function completeIdempotent(db: Db, caller: Caller, key: string, status: number, resourceId: string | null): Promise<void> {
  await db.query(sql.typeAlias('void')`
    UPDATE idempotency_keys SET state = 'completed', lease_until = NULL, status_code = ${status}, resource_id = ${resourceId}
     WHERE conta_id = ${caller.contaId} AND chave_id = ${caller.chaveId} AND key = ${key}`);
}

/** A business refusal is kept and replayed; anything else frees the key for a retry. */
export async function finishRefused(db: Db, caller: Caller, key: string, error: unknown): Promise<void> {
  if (error instanceof ApiError && error.status >= 400 && error.status < 500) {
    await db.query(sql.typeAlias('void')`
      UPDATE idempotency_keys SET state = 'completed', lease_until = NULL, status_code = ${error.status},
             codigo = ${error.codigo}, motivo = ${error.motivo ?? null}
       WHERE conta_id = ${caller.contaId} AND chave_id = ${caller.chaveId} AND key = ${key}`);
    return;
  }
  await db.query(sql.typeAlias('void')`
    DELETE FROM idempotency_keys WHERE conta_id = ${caller.contaId} AND chave_id = ${caller.chaveId} AND key = ${key}
       AND state = 'in_progress'`);
}

/** The refusal a repetition answers with: same status, codigo and motivo as the first time. */
export function replayedRefusal(started: Extract<Started, { kind: 'replay' }>): ApiError {
  return new ApiError(started.status, (started.codigo ?? 'saldo_insuficiente') as ApiError['codigo'],
    'Repetição de uma requisição recusada: a resposta é a mesma da primeira vez.', {
      motivo: (started.motivo ?? undefined) as Motivo | undefined,
      headers: { 'Idempotent-Replayed': 'true' },
    });
}
