// Queries on API keys. The token is generated here and returned once; only its hash is stored.
import { z } from 'zod';
import { ESCOPOS } from '../domain/acesso.ts';
import { gerarToken } from '../domain/chaves.ts';
import { sql, type Db } from './pool.ts';

export const Chave = z.object({
  id: z.string(),
  conta_id: z.string(),
  usuario_id: z.string(),
  nome: z.string(),
  prefixo: z.string(),
  escopos: z.array(z.enum(ESCOPOS)),
  criada_em: z.string(),
  expira_em: z.string().nullable(),
  revogada_em: z.string().nullable(),
  suspensa_ate: z.string().nullable(),
  ultimo_uso_em: z.string().nullable(),
});
export type Chave = z.infer<typeof Chave>;

const columns = sql.fragment`id, conta_id, usuario_id, nome, prefixo, escopos, criada_em, expira_em,
  revogada_em, suspensa_ate, ultimo_uso_em`;

export type NovaChave = {
  contaId: string;
  usuarioId: string;
  nome: string;
  escopos: readonly string[];
  expiraEm?: Date | null;
};

/** Creates a key and returns it with its token, which is shown this once and never again. */
export async function criarChave(db: Db, input: NovaChave): Promise<{ chave: Chave; token: string }> {
  const { token, prefixo, hash } = gerarToken();
  const chave = await db.one(sql.type(Chave)`
    INSERT INTO chaves_api (conta_id, usuario_id, nome, prefixo, token_hash, escopos, expira_em)
    VALUES (${input.contaId}, ${input.usuarioId}, ${input.nome}, ${prefixo}, ${sql.binary(hash)},
            ${sql.array([...input.escopos], 'text')}, ${input.expiraEm ? input.expiraEm.toISOString() : null})
    RETURNING ${columns}`);
  return { chave, token };
}

export async function revogarChave(db: Db, contaId: string, chaveId: string): Promise<Chave | null> {
  return db.maybeOne(sql.type(Chave)`
    UPDATE chaves_api SET revogada_em = coalesce(revogada_em, now())
    WHERE conta_id = ${contaId} AND id = ${chaveId}
    RETURNING ${columns}`);
}

export async function listarChaves(db: Db, contaId: string): Promise<readonly Chave[]> {
  return db.any(sql.type(Chave)`
    SELECT ${columns} FROM chaves_api WHERE conta_id = ${contaId} ORDER BY criada_em, id`);
}

export async function lerChave(db: Db, contaId: string, chaveId: string): Promise<Chave | null> {
  return db.maybeOne(sql.type(Chave)`
    SELECT ${columns} FROM chaves_api WHERE conta_id = ${contaId} AND id = ${chaveId}`);
}
