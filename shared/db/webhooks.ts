// Webhook endpoints, as the application's screen (the operator CLI) and the worker manage them.
// The plan's endpoint limit is a trigger (sql/code/webhooks.sql); secrets are generated here.
import { z } from 'zod';
import { gerarSegredo, PREVIOUS_SECRET_HOURS, FAILING_DAYS_BEFORE_DISABLE, type MotivoDesativacao } from '../domain/webhooks.ts';
import { enqueueEmail } from '../mail.ts';
import { sql, type Db, type Tx } from './pool.ts';

export const Endpoint = z.object({
  id: z.string(),
  conta_id: z.string(),
  url: z.string(),
  descricao: z.string().nullable(),
  tipos: z.array(z.string()),
  usuario_id: z.string(),
  ativo: z.boolean(),
  desativado_em: z.string().nullable(),
  desativado_motivo: z.string().nullable(),
  segredo_anterior_ate: z.string().nullable(),
  falhando_desde: z.string().nullable(),
  criado_em: z.string(),
});
export type Endpoint = z.infer<typeof Endpoint>;

const columns = sql.fragment`id, conta_id, url, descricao, tipos, usuario_id, ativo, desativado_em, desativado_motivo,
  segredo_anterior_ate, falhando_desde, criado_em`;

export async function criarEndpoint(
  db: Db,
  input: { contaId: string; usuarioId: string; url: string; tipos: readonly string[]; descricao: string | null },
): Promise<Endpoint & { segredo: string }> {
  const segredo = gerarSegredo();
  const endpoint = await db.one(sql.type(Endpoint)`
    INSERT INTO webhook_endpoints (conta_id, usuario_id, url, tipos, descricao, segredo)
    VALUES (${input.contaId}, ${input.usuarioId}, ${input.url}, ${sql.array([...input.tipos], 'text')},
            ${input.descricao}, ${segredo})
    RETURNING ${columns}`);
  return { ...endpoint, segredo };
}

export async function listarEndpoints(db: Db, contaId: string): Promise<readonly Endpoint[]> {
  return db.any(sql.type(Endpoint)`
    SELECT ${columns} FROM webhook_endpoints WHERE conta_id = ${contaId} ORDER BY criado_em, id`);
}

export async function lerEndpoint(db: Db, contaId: string, endpointId: string): Promise<Endpoint | null> {
  return db.maybeOne(sql.type(Endpoint)`
    SELECT ${columns} FROM webhook_endpoints WHERE conta_id = ${contaId} AND id = ${endpointId}`);
}

/** Re-enables an endpoint (the plan's limit applies again) with a clean failure record. */
export async function reativarEndpoint(db: Db, contaId: string, endpointId: string): Promise<Endpoint | null> {
  return db.maybeOne(sql.type(Endpoint)`
    UPDATE webhook_endpoints
       SET ativo = true, desativado_em = NULL, desativado_motivo = NULL, falhando_desde = NULL
     WHERE conta_id = ${contaId} AND id = ${endpointId}
    RETURNING ${columns}`);
}

/** A new secret; the previous one keeps signing (as a second signature) for 24 hours. */
export async function rotacionarSegredo(db: Db, contaId: string, endpointId: string): Promise<(Endpoint & { segredo: string }) | null> {
  const segredo = gerarSegredo();
  const endpoint = await db.maybeOne(sql.type(Endpoint)`
    UPDATE webhook_endpoints
       SET segredo_anterior = segredo, segredo = ${segredo},
           segredo_anterior_ate = now() + make_interval(hours => ${PREVIOUS_SECRET_HOURS})
     WHERE conta_id = ${contaId} AND id = ${endpointId}
    RETURNING ${columns}`);
  return endpoint ? { ...endpoint, segredo } : null;
}

const Disabled = Endpoint.extend({ email: z.string(), nome: z.string() });

/**
 * Disables endpoints (falhas_5_dias only when the run of failures is really that old) and fails
 * their deliveries that wait for a later attempt; a delivery a worker holds now is closed by the
 * next worker that takes it, if its attempt does not end it. The creator is e-mailed when the
 * receiver or its failures caused it.
 */
export async function desativarEndpoints(
  tx: Tx,
  items: readonly { contaId: string; endpointId: string; motivo: MotivoDesativacao }[],
): Promise<readonly Endpoint[]> {
  if (items.length === 0) return [];
  const disabled = await tx.any(sql.type(Disabled)`
    UPDATE webhook_endpoints e
       SET ativo = false, desativado_em = now(), desativado_motivo = r.motivo
      FROM ${sql.unnest(items.map((i) => [i.contaId, i.endpointId, i.motivo]), ['uuid', 'uuid', 'text'])} AS r (conta_id, id, motivo),
           usuarios u
     WHERE e.conta_id = r.conta_id AND e.id = r.id AND e.ativo
       AND u.conta_id = e.conta_id AND u.id = e.usuario_id
       AND (r.motivo <> 'falhas_5_dias' OR e.falhando_desde <= now() - make_interval(days => ${FAILING_DAYS_BEFORE_DISABLE}))
    RETURNING e.id, e.conta_id, e.url, e.descricao, e.tipos, e.usuario_id, e.ativo, e.desativado_em, e.desativado_motivo,
              e.segredo_anterior_ate, e.falhando_desde, e.criado_em, u.email, u.nome`);
  if (disabled.length === 0) return [];
  await tx.query(sql.typeAlias('void')`
    UPDATE deliveries d
       SET status = 'failed', completed_at = now(), last_error = 'endpoint desativado (' || r.motivo || ')'
      FROM ${sql.unnest(disabled.map((e) => [e.conta_id, e.id, e.desativado_motivo ?? 'operador']), ['uuid', 'uuid', 'text'])} AS r (conta_id, id, motivo)
     WHERE d.conta_id = r.conta_id AND d.endpoint_id = r.id AND d.status = 'pending' AND d.lease_id IS NULL`);
  for (const e of disabled) {
    if (e.desativado_motivo === 'operador') continue;
    const why = e.desativado_motivo === 'recebedor_410'
      ? 'o endereço respondeu 410 (Gone), pedindo para não receber mais eventos'
      : `todas as entregas falharam por ${FAILING_DAYS_BEFORE_DISABLE} dias seguidos`;
    await enqueueEmail(tx, {
      contaId: e.conta_id,
      kind: 'webhook_endpoint_desativado',
      to: e.email,
      subject: 'Webhook desativado',
      body: `Olá, ${e.nome}.\n\nO webhook ${e.url} foi desativado porque ${why}.\n` +
        'Corrija o endereço e reative-o na tela de webhooks; as entregas que falharam podem ser reenviadas.\n',
    });
  }
  return disabled.map(({ email: _email, nome: _nome, ...endpoint }) => endpoint);
}

/** Sends webhook.teste to one endpoint (through the outbox, like every event); returns its id. */
export async function enviarTeste(db: Db, contaId: string, endpointId: string, mensagem: string): Promise<string> {
  return db.oneFirst(sql.type(z.object({ id: z.string() }))`
    SELECT emit_event(${contaId}, 'webhook.teste',
                      jsonb_build_object('objeto', 'teste', 'mensagem', ${mensagem}::text), ${endpointId}) AS id`);
}
