// The `webhooks` section of the OpenAPI document (OpenAPI 3.1): one entry per event type of
// contract §6.2, each the signed POST a receiver gets, with the §6.1 envelope and its dados.
import { z } from 'zod';
import { TIPOS_DE_EVENTO, type TipoEvento } from '../shared/domain/eventos.ts';

type JsonSchema = Record<string, unknown>;

const schemaOf = (schema: z.ZodType): JsonSchema => {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io: 'output' }) as JsonSchema;
  return rest;
};

export const DELIVERY_DESCRIPTION = `Deliveries follow [Standard Webhooks](https://www.standardwebhooks.com/): a POST of the
JSON envelope with the headers \`webhook-id\` (the event id, the same on every retry: deduplicate by it),
\`webhook-timestamp\` (Unix seconds) and \`webhook-signature\` (\`v1,\` + base64 HMAC-SHA256 of
\`<webhook-id>.<webhook-timestamp>.<body>\` with the endpoint's \`whsec_\` secret; during a secret rotation
both signatures, space-separated, for 24 h). Any 2xx within 10 s is success; redirects are not followed.
Failures are retried after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h, then the delivery fails; a 429 or
503 with Retry-After is retried no sooner than asked; a 410 disables the endpoint at once, and an endpoint
failing every delivery for 5 days is disabled and its creator e-mailed. The dados object may gain fields
without notice: ignore what you do not know.`;

const headers = [
  { name: 'webhook-id', description: 'The event id (envelope id); the same on every retry.', schema: { type: 'string', format: 'uuid' } },
  { name: 'webhook-timestamp', description: 'When this attempt was signed, in Unix seconds.', schema: { type: 'string', pattern: '^\\d+$' } },
  {
    name: 'webhook-signature',
    description: 'Space-separated signatures, each `v1,<base64 HMAC-SHA256>`; two during a secret rotation.',
    schema: { type: 'string', pattern: '^v1,[A-Za-z0-9+/=]+( v1,[A-Za-z0-9+/=]+)*$' },
  },
].map((h) => ({ ...h, in: 'header', required: true }));

function envelope(tipo: TipoEvento): JsonSchema {
  return {
    type: 'object',
    required: ['id', 'tipo', 'versao', 'criado_em', 'conta_id', 'dados', 'url'],
    properties: {
      id: { type: 'string', format: 'uuid', description: 'Event id.' },
      tipo: { const: tipo.tipo },
      versao: { const: 'v1' },
      criado_em: { type: 'string', format: 'date-time' },
      conta_id: { type: 'string', format: 'uuid' },
      dados: schemaOf(tipo.dados),
      url: tipo.tipo === 'webhook.teste'
        ? { type: 'null' }
        : { type: 'string', format: 'uri', description: 'Address of the resource to read.' },
    },
  };
}

export function webhooksSection(): Record<string, JsonSchema> {
  return Object.fromEntries(
    TIPOS_DE_EVENTO.map((tipo) => [
      tipo.tipo,
      {
        post: {
          operationId: `evento_${tipo.tipo.replace('.', '_')}`,
          tags: ['Eventos'],
          summary: tipo.descricao,
          description: `${tipo.agrupado ? 'Grouped: at most one per key every 60 s, with the latest data. ' : ''}` +
            `Sent only to endpoints whose creator holds ${tipo.permissao ? `\`${tipo.permissao}\`` : 'no particular permission'}.`,
          parameters: headers,
          requestBody: { required: true, content: { 'application/json': { schema: envelope(tipo) } } },
          responses: {
            '200': { description: 'Received (any 2xx within 10 s is success).' },
            '410': { description: 'The endpoint is gone: it is disabled at once.' },
          },
        },
      },
    ]),
  );
}
