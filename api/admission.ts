// Admission: one round trip to PostgreSQL (the api_admit function) authenticates the key,
// authorizes the route and answers with everything the response needs.
import { z } from 'zod';
import { hashToken, tokenDoCabecalho } from '../shared/domain/chaves.ts';
import { sql, type Pool } from '../shared/db/pool.ts';
import { escopoInsuficiente, indisponivel, naoAutenticado, type ApiError } from '../shared/errors.ts';
import type { AnyRoute, Caller } from './routes/types.ts';

const AdmissionRow = z.object({
  outcome: z.enum(['ok', 'nao_autenticado', 'escopo_insuficiente', 'indisponivel']),
  reason: z.string().nullable(),
  conta_id: z.string().nullable(),
  chave_id: z.string().nullable(),
  usuario_id: z.string().nullable(),
  plano_id: z.string().nullable(),
  permissoes: z.array(z.string()).nullable(),
});
type AdmissionRow = z.infer<typeof AdmissionRow>;

export type Admitted = { caller: Caller };
/** A refusal still identifies the caller when the key was valid (for the request log). */
export type Refused = { error: ApiError; caller: Caller | null };

export async function admit(pool: Pool, authorization: string | undefined, route: AnyRoute): Promise<Admitted | Refused> {
  const token = tokenDoCabecalho(authorization);
  if (!token) return { error: naoAutenticado(), caller: null };
  const row = await pool.one(sql.type(AdmissionRow)`
    SELECT * FROM api_admit(${sql.binary(hashToken(token))}, ${route.scope}, ${route.permission})`);
  if (row.outcome === 'nao_autenticado') return { error: naoAutenticado(), caller: null };
  const caller = toCaller(row);
  if (row.outcome === 'ok') return { caller };
  return { error: refusal(row, route), caller };
}

function toCaller(row: AdmissionRow): Caller {
  return {
    contaId: row.conta_id ?? '',
    chaveId: row.chave_id ?? '',
    usuarioId: row.usuario_id ?? '',
    planoId: row.plano_id ?? '',
    permissoes: row.permissoes ?? [],
  };
}

function refusal(row: AdmissionRow, route: AnyRoute): ApiError {
  switch (row.reason) {
    case 'conta_bloqueada':
      return escopoInsuficiente('A conta está bloqueada.');
    case 'modulo_desligado':
      return escopoInsuficiente('O módulo de API não está ativo para esta conta.');
    case 'chave_suspensa':
      return escopoInsuficiente('A chave está suspensa por recusas seguidas por limite de uso.');
    case 'escopo':
      return escopoInsuficiente(`A chave não tem o escopo ${route.scope}.`);
    case 'permissao':
      return escopoInsuficiente(`Quem criou a chave não tem a permissão ${route.permission}.`);
    case 'api_desligada':
      return indisponivel('A API está desligada no momento.', 60);
    default:
      throw new Error(`unexpected admission outcome ${row.outcome}/${row.reason}`);
  }
}
