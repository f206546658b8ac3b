// The `webhooks` section of the OpenAPI document (OpenAPI 3.1): one entry per event type of
// contract §6.2, each the signed POST a receiver gets, with the §6.1 envelope and its dados.
import { z } from 'zod';
import { TIPOS_DE_EVENTO, type TipoEvento } from '#shared/domain/eventos.ts';

type JsonSchema = Record<string, unknown>;

const schemaOf = (schema: z.ZodType): JsonSchema => {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io: 'output' }) as JsonSchema;
  return rest;
};

export const DELIVERY_DESCRIPTION = `As entregas seguem o [Standard Webhooks](https://www.standardwebhooks.com/): um POST do
envelope JSON com os cabeçalhos \`webhook-id\` (o id do evento, o mesmo em toda nova tentativa: use-o para descartar
repetições), \`webhook-timestamp\` (segundos Unix) e \`webhook-signature\` (\`v1,\` + HMAC-SHA256 em base64 de
\`<webhook-id>.<webhook-timestamp>.<corpo>\` com o segredo \`whsec_\` do endpoint; durante uma troca de segredo, as
duas assinaturas, separadas por espaço, por 24 h). Qualquer 2xx em até 10 s é sucesso; redirecionamentos não são
seguidos. Uma falha é tentada de novo depois de 5 s, 5 min, 30 min, 2 h, 5 h, 10 h e 10 h; depois disso a entrega
falha. Um 429 ou 503 com Retry-After só é tentado de novo depois do tempo pedido; um 410 desativa o endpoint na hora, e
um endpoint em que todas as entregas falham por 5 dias é desativado, e quem o criou recebe um e-mail. O objeto dados
pode ganhar campos sem aviso: ignore os que você não conhece.`;

const headers = [
  { name: 'webhook-id', description: 'O id do evento (o id do envelope); o mesmo em toda nova tentativa.', schema: { type: 'string', format: 'uuid' } },
  { name: 'webhook-timestamp', description: 'Quando esta tentativa foi assinada, em segundos Unix.', schema: { type: 'string', pattern: '^\\d+$' } },
  {
    name: 'webhook-signature',
    description: 'Assinaturas separadas por espaço, cada uma `v1,<HMAC-SHA256 em base64>`; duas durante uma troca de segredo.',
    schema: { type: 'string', pattern: '^v1,[A-Za-z0-9+/=]+( v1,[A-Za-z0-9+/=]+)*$' },
  },
].map((h) => ({ ...h, in: 'header', required: true }));

function envelope(tipo: TipoEvento): JsonSchema {
  return {
    type: 'object',
    required: ['id', 'tipo', 'versao', 'criado_em', 'conta_id', 'dados', 'url'],
    properties: {
      id: { type: 'string', format: 'uuid', description: 'Id do evento.' },
      tipo: { const: tipo.tipo },
      versao: { const: 'v1' },
      criado_em: { type: 'string', format: 'date-time' },
      conta_id: { type: 'string', format: 'uuid' },
      dados: schemaOf(tipo.dados),
      url: tipo.tipo === 'webhook.teste'
        ? { type: 'null' }
        : { type: 'string', format: 'uri', description: 'Endereço do recurso a consultar.' },
    },
  };
}

const primeiraFrase = (texto: string) => texto.split(/(?<=\.) /)[0] ?? texto;
const restoDaDescricao = (texto: string) => {
  const resto = texto.slice(primeiraFrase(texto).length).trim();
  return resto ? `${resto} ` : '';
};

export function webhooksSection(): Record<string, JsonSchema> {
  return Object.fromEntries(
    TIPOS_DE_EVENTO.map((tipo) => [
      tipo.tipo,
      {
        post: {
          operationId: `evento_${tipo.tipo.replace('.', '_')}`,
          tags: ['Eventos'],
          // The first sentence names the event; the rest of the catalog's text (the bulk rule) goes below.
          summary: primeiraFrase(tipo.descricao),
          description: `${restoDaDescricao(tipo.descricao)}${tipo.agrupado ? 'Agrupado: no máximo um por chave a cada 60 s, com os dados mais recentes. ' : ''}` +
            (tipo.permissao
              ? `Enviado só aos endpoints cujo criador tem a permissão \`${tipo.permissao}\`.`
              : 'Enviado a qualquer endpoint, sem exigir permissão de quem o criou.'),
          parameters: headers,
          requestBody: { required: true, content: { 'application/json': { schema: envelope(tipo) } } },
          responses: {
            '200': { description: 'Recebido (qualquer 2xx em até 10 s é sucesso).' },
            '410': { description: 'O endpoint não existe mais: ele é desativado na hora.' },
          },
        },
      },
    ]),
  );
}
