// The representations PostgreSQL builds (sql/code/representacoes.sql): a record as the API sends it,
// with its version, read on its own (a repetition admission did not read it for, a record just
// created or replayed). A GET of one record usually has it from admission, read in the same round trip.
import { z } from 'zod';
import { sql, type Db } from './pool.ts';

export type Representacao = { versao: number; corpo: string };

const Row = z.object({ versao: z.number(), corpo: z.string() });

/** The record in the account, as a caller with these permissions reads it, or null when the account has none. */
export async function lerRepresentacao(
  db: Db, tabela: string, contaId: string, id: string, permissoes: readonly string[],
): Promise<Representacao | null> {
  return db.maybeOne(sql.type(Row)`
    SELECT versao, corpo FROM representacao(${tabela}, ${contaId}, ${id}, ${sql.array([...permissoes], 'text')})`);
}
