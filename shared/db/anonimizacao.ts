// Anonymization of a customer under the data-protection law (LGPD), across quotations and orders:
// names and e-mails are nulled, free-text notes and the integrator's metadados too (they may carry
// personal data; referencia_externa, the integrator's id of the record, stays), and the
// records are marked anonimizada_em / anonimizado_em; a CHECK keeps them anonymous for good.
// The records themselves stay (codes, items, values, states): the workshop's history is not
// personal data. Event payloads never carry names; they carry the metadados a record had when the
// event was written, which integrators are told to keep free of personal data, and which go with
// the outbox's 30 days.
import { z } from 'zod';
import { sql, type Db } from './pool.ts';

export type AlvoAnonimizacao = { email?: string; nome?: string; cotacaoId?: string; pedidoId?: string };

const Resultado = z.object({ cotacoes: z.array(z.string()), pedidos: z.array(z.string()) });

/**
 * Finds the customer by any of e-mail, name (trimmed, case-insensitive), a quotation or an order,
 * widens the match once by the names and e-mails those records carry, and anonymizes everything
 * found. Returns the codes of the records changed.
 */
export async function anonimizarCliente(db: Db, contaId: string, alvo: AlvoAnonimizacao) {
  const email = alvo.email ?? null;
  const nome = alvo.nome ?? null;
  const cotacaoId = alvo.cotacaoId ?? null;
  const pedidoId = alvo.pedidoId ?? null;
  return db.one(sql.type(Resultado)`
    WITH semente_c AS (
      SELECT id, cliente_nome, cliente_email FROM cotacoes
       WHERE conta_id = ${contaId}
         AND (lower(cliente_email) = lower(${email}::text) OR lower(btrim(cliente_nome)) = lower(btrim(${nome}::text))
              OR id = ${cotacaoId}::uuid)
    ), semente_p AS (
      SELECT id, cliente_nome, cotacao_id FROM pedidos_producao
       WHERE conta_id = ${contaId} AND (lower(btrim(cliente_nome)) = lower(btrim(${nome}::text)) OR id = ${pedidoId}::uuid)
    ), nomes AS (
      SELECT lower(btrim(n)) AS n
        FROM (SELECT cliente_nome FROM semente_c UNION SELECT cliente_nome FROM semente_p UNION SELECT ${nome}::text) t (n)
       WHERE n IS NOT NULL
    ), emails AS (
      SELECT lower(e) AS e FROM (SELECT cliente_email FROM semente_c UNION SELECT ${email}::text) t (e) WHERE e IS NOT NULL
    ), cotacoes_alvo AS (
      SELECT id FROM cotacoes
       WHERE conta_id = ${contaId}
         AND (id IN (SELECT id FROM semente_c) OR id IN (SELECT cotacao_id FROM semente_p)
              OR lower(btrim(cliente_nome)) IN (SELECT n FROM nomes) OR lower(cliente_email) IN (SELECT e FROM emails))
    ), cot AS (
      UPDATE cotacoes SET cliente_nome = NULL, cliente_email = NULL, observacao = NULL, metadados = '{}', anonimizada_em = now()
       WHERE conta_id = ${contaId} AND anonimizada_em IS NULL AND id IN (SELECT id FROM cotacoes_alvo)
      RETURNING codigo
    ), ped AS (
      UPDATE pedidos_producao SET cliente_nome = NULL, observacao = NULL, metadados = '{}', anonimizado_em = now()
       WHERE conta_id = ${contaId} AND tipo = 'cliente' AND anonimizado_em IS NULL
         AND (id IN (SELECT id FROM semente_p) OR cotacao_id IN (SELECT id FROM cotacoes_alvo)
              OR lower(btrim(cliente_nome)) IN (SELECT n FROM nomes))
      RETURNING codigo
    )
    SELECT (SELECT coalesce(array_agg(codigo ORDER BY codigo), '{}') FROM cot) AS cotacoes,
           (SELECT coalesce(array_agg(codigo ORDER BY codigo), '{}') FROM ped) AS pedidos`);
}
