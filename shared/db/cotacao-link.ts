// What the customer does on the quotation link, found by its token (the one lookup of a quotation
// not scoped by account): opening it and asking to close the deal. Both are plain writes whose
// triggers emit link.aberto and cotacao.fechamento_pedido (sql/code/cotacoes.sql).
import { z } from 'zod';
import { sql, type Db } from './pool.ts';

const Abertura = z.object({ conta_id: z.string(), cotacao_id: z.string(), codigo: z.string(), abertura_n: z.number().int() });

/** Counts one opening of the link; null when no quotation has this token. */
export async function abrirLink(db: Db, token: string) {
  return db.maybeOne(sql.type(Abertura)`
    UPDATE cotacoes SET link_aberturas = link_aberturas + 1
     WHERE link_token = ${token}
    RETURNING conta_id, id AS cotacao_id, codigo, link_aberturas AS abertura_n`);
}

const Fechamento = z.object({
  conta_id: z.string(),
  cotacao_id: z.string(),
  codigo: z.string(),
  versao: z.number().int(),
  cor_a_combinar: z.boolean(),
  criado_em: z.string(),
  novo: z.boolean(),
});

/**
 * The customer asks to close the deal on the version they see (only a sent quotation). Asking again
 * on the same version changes nothing and emits nothing: the first request is returned, novo false.
 * Null when no quotation has this token.
 */
export async function pedirFechamento(db: Db, token: string, corACombinar: boolean) {
  const cotacao = await db.maybeOne(sql.type(z.object({ conta_id: z.string(), id: z.string(), versao: z.number().int() }))`
    SELECT conta_id, id, versao FROM cotacoes WHERE link_token = ${token}`);
  if (!cotacao) return null;
  const criado = await db.maybeOne(sql.type(Fechamento)`
    WITH novo AS (
      INSERT INTO cotacao_fechamentos (conta_id, cotacao_id, versao, cor_a_combinar)
      VALUES (${cotacao.conta_id}, ${cotacao.id}, ${cotacao.versao}, ${corACombinar})
      ON CONFLICT (conta_id, cotacao_id, versao) DO NOTHING
      RETURNING conta_id, cotacao_id, versao, cor_a_combinar, criado_em)
    SELECT n.conta_id, n.cotacao_id, c.codigo, n.versao, n.cor_a_combinar, n.criado_em, true AS novo
      FROM novo n JOIN cotacoes c ON c.conta_id = n.conta_id AND c.id = n.cotacao_id`);
  if (criado) return criado;
  return db.one(sql.type(Fechamento)`
    SELECT f.conta_id, f.cotacao_id, c.codigo, f.versao, f.cor_a_combinar, f.criado_em, false AS novo
      FROM cotacao_fechamentos f JOIN cotacoes c ON c.conta_id = f.conta_id AND c.id = f.cotacao_id
     WHERE f.conta_id = ${cotacao.conta_id} AND f.cotacao_id = ${cotacao.id} AND f.versao = ${cotacao.versao}`);
}

const Link = z.object({ link_token: z.string(), link_aberturas: z.number().int() });

/** The link of a quotation as the screen shows it to the workshop (to send to the customer). */
export async function linkDaCotacao(db: Db, contaId: string, cotacaoId: string) {
  return db.maybeOne(sql.type(Link)`
    SELECT link_token, link_aberturas FROM cotacoes WHERE conta_id = ${contaId} AND id = ${cotacaoId}`);
}
