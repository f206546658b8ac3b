// The OpenAPI 3.1 document, derived from the route table: nothing here is written twice.
import { z } from 'zod';
import { DESCRICAO_ESCOPO, ESCOPOS } from '#shared/domain/acesso.ts';
import { TITULOS, type Codigo } from '#shared/errors.ts';
import { DELIVERY_DESCRIPTION, webhooksSection } from './openapi-webhooks.ts';
import type { AnyRoute } from '../routes/types.ts';

type JsonSchema = Record<string, unknown>;

/** Where the service serves its changelog (CHANGELOG.md; api/reference/docs.ts), linked from the reference. */
export const CHANGELOG_PATH = '/docs/mudancas';
/** Where the service serves the integrator's guide (docs/guia/; api/reference/guia.ts), linked from the reference. */
export const GUIA_PATH = '/docs/guia';

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as JsonSchema;
  return rest;
}

/** The codigos each error status carries (405 metodo_nao_permitido is answered by the router, not by a route). */
export const ERRO_POR_STATUS: Record<number, Codigo[]> = {
  400: ['dados_invalidos'],
  401: ['nao_autenticado'],
  403: ['escopo_insuficiente'],
  404: ['nao_encontrado'],
  408: ['tempo_esgotado'],
  409: ['idempotencia_em_andamento'],
  413: ['corpo_grande_demais'],
  415: ['tipo_nao_suportado'],
  422: ['saldo_insuficiente', 'idempotencia_conflito'],
  429: ['limite_excedido'],
  500: ['erro_interno'],
  503: ['indisponivel'],
};

const TAGS: Record<string, string> = {
  Sistema: 'Saúde do serviço, a conta e a chave que fazem a chamada, com seus limites, e o catálogo de tipos de evento.',
  Catálogo: 'Canais de venda, produtos com variações e preços por canal, materiais e cores.',
  Estoque: 'Saldos de peças prontas e de insumos, e movimentos de estoque de peças prontas.',
  Cotações: 'Cotações: consultar, criar como rascunho e mudar o status.',
  Produção: 'Pedidos de produção: consultar e criar.',
  // The event log's routes and the webhooks section share the tag: the delivery rules describe both.
  Eventos: `O registro de eventos da conta (os mesmos envelopes das entregas), as tentativas de entrega de cada um e o reenvio.\n\n${DELIVERY_DESCRIPTION}`,
};

/** Statuses a route can refuse with, derived from what it declares. */
export function errorStatuses(route: AnyRoute): number[] {
  const statuses = new Set([400, 401, 403, 429, 500, 503]);
  if (route.params) statuses.add(404);
  if (route.body) [408, 413, 415].forEach((s) => statuses.add(s));
  if (route.idempotency) [409, 422].forEach((s) => statuses.add(s));
  for (const s of route.refusals ?? []) statuses.add(s);
  return [...statuses].sort((a, b) => a - b);
}

function parameters(schema: z.ZodType | undefined, location: 'path' | 'query' | 'header'): JsonSchema[] {
  if (!schema) return [];
  const json = jsonSchema(schema, 'input') as { properties?: Record<string, JsonSchema>; required?: string[] };
  return Object.entries(json.properties ?? {}).map(([name, property]) => {
    const { description, ...propertySchema } = property;
    return {
      name: location === 'header' ? headerName(name) : name,
      in: location,
      required: location === 'path' || (json.required ?? []).includes(name),
      ...(description ? { description } : {}),
      schema: propertySchema,
    };
  });
}

const headerName = (lower: string) => lower.replace(/(^|-)([a-z])/g, (_m, dash: string, c: string) => dash + c.toUpperCase());

const HEADERS = {
  'X-Request-Id': { description: 'O requisicao_id desta requisição (também em todo corpo de erro e no log do serviço).', schema: { type: 'string', format: 'uuid' } },
  'RateLimit-Policy': {
    description: 'Os limites da chave (lista RFC 9651): `"rajada";q=<n>;w=<s>`, `"minuto";q=<n>;w=60`, `"mes";q=<n>;w=2592000`.',
    schema: { type: 'string' },
    example: '"rajada";q=10;w=5, "minuto";q=60;w=60, "mes";q=150000;w=2592000',
  },
  RateLimit: {
    description: 'O limite mais perto de se esgotar: `"<nome>";r=<restante>;t=<segundos até ele se recompor por inteiro>`.',
    schema: { type: 'string' },
    example: '"rajada";r=9;t=1',
  },
  'Retry-After': { description: 'Segundos a esperar antes de tentar de novo.', schema: { type: 'integer', minimum: 0 } },
  ETag: { description: 'ETag forte desta representação; envie-o de volta em If-None-Match.', schema: { type: 'string' } },
  'Idempotent-Replayed': { description: 'true quando esta resposta repete uma requisição anterior com a mesma Idempotency-Key.', schema: { type: 'string', enum: ['true'] } },
};

const ref = (name: keyof typeof HEADERS) => ({ $ref: `#/components/headers/${name}` });
const required = (name: keyof typeof HEADERS) => ({ ...HEADERS[name], required: true });

// Every response carries its request id; a response that passed the limits stage carries the limits.
const errorHeaders = { 'X-Request-Id': required('X-Request-Id'), 'RateLimit-Policy': ref('RateLimit-Policy'), RateLimit: ref('RateLimit') };
const successHeaders = { 'X-Request-Id': required('X-Request-Id'), 'RateLimit-Policy': required('RateLimit-Policy'), RateLimit: required('RateLimit') };

function errorResponse(status: number): JsonSchema {
  const codigos = ERRO_POR_STATUS[status] ?? ['erro_interno'];
  const headers: JsonSchema = { ...errorHeaders };
  if (status === 429 || status === 503) headers['Retry-After'] = required('Retry-After');
  return {
    description: codigos.map((c) => `${c}: ${TITULOS[c]}`).join('; '),
    headers,
    content: {
      'application/problem+json': {
        schema: {
          allOf: [
            { $ref: '#/components/schemas/Problema' },
            { properties: { status: { const: status }, codigo: { enum: codigos } } },
          ],
        },
      },
    },
  };
}

function operation(route: AnyRoute): JsonSchema {
  const responses: Record<string, JsonSchema> = {};
  for (const [status, spec] of Object.entries(route.responses)) {
    responses[status] = {
      description: spec.description,
      headers: { ...successHeaders, ...(spec.headers ?? {}) },
      ...(spec.schema
        ? { content: { 'application/json': { schema: jsonSchema(spec.schema, 'output'), ...(spec.example === undefined ? {} : { example: spec.example }) } } }
        : {}),
    };
  }
  for (const status of errorStatuses(route)) responses[String(status)] ??= errorResponse(status);
  return {
    operationId: route.operationId,
    tags: [route.tag],
    summary: route.summary,
    ...(route.description ? { description: route.description } : {}),
    security: [{ chaveApi: route.scope ? [route.scope] : [] }],
    ...(route.scope ? { 'x-escopo': route.scope, 'x-permissao-do-criador': route.permission } : {}),
    parameters: [
      ...parameters(route.params, 'path'),
      ...parameters(route.query, 'query'),
      ...parameters(route.headers, 'header'),
    ],
    ...(route.body
      ? {
          requestBody: {
            required: true,
            description: 'JSON em UTF-8 (Content-Type: application/json; qualquer outro é 415; bytes que não são UTF-8 válido são 400 dados_invalidos, e nada é gravado), de até 64 KB, recebido em até 5 s.',
            content: { 'application/json': { schema: jsonSchema(route.body, 'input'), ...(route.bodyExample === undefined ? {} : { example: route.bodyExample }) } },
          },
        }
      : {}),
    responses,
  };
}

/** HEAD of a GET route: the same parameters, statuses, headers and price, and no body. */
function headOperation(route: AnyRoute): JsonSchema {
  const get = operation(route);
  const responses = Object.fromEntries(Object.entries(get.responses as Record<string, JsonSchema>).map(([status, { content: _c, ...response }]) =>
    [status, { ...response, headers: { ...(response.headers as JsonSchema), 'Content-Length': { description: 'O tamanho do corpo que o GET enviaria.', schema: { type: 'integer', minimum: 0 } } } }]));
  return {
    ...get,
    operationId: `${route.operationId}Head`,
    summary: `${route.summary} (só os cabeçalhos)`,
    description: `O status e os cabeçalhos do GET (ETag, RateLimit, Content-Length), sem o corpo, pelo preço do GET.${route.description ? ` ${route.description}` : ''}`,
    responses,
  };
}

/**
 * The document for a base URL; with `{ template: true }` the server is the contract's {base_url}
 * variable (the committed copy in docs/, independent of where the service runs).
 */
export function buildOpenApi(routes: readonly AnyRoute[], baseUrl: string, options: { template?: boolean } = {}): JsonSchema {
  const paths = pathsOf(routes);
  const referenced = new Set([...JSON.stringify(paths).matchAll(/#\/components\/headers\/([A-Za-z-]+)/g)].map((m) => m[1]));
  return {
    openapi: '3.1.0',
    info: INFO,
    servers: options.template
      ? [{ url: '{base_url}', description: 'O endereço do serviço, terminado em /v1.', variables: { base_url: { default: baseUrl } } }]
      : [{ url: baseUrl }],
    security: [{ chaveApi: [] }],
    tags: [...new Set([...routes.map((r) => r.tag), 'Eventos'])].map((name) => ({ name, description: TAGS[name] ?? name })),
    paths,
    webhooks: webhooksSection(),
    components: {
      securitySchemes: { chaveApi: CHAVE_API },
      headers: Object.fromEntries(Object.entries(HEADERS).filter(([name]) => referenced.has(name))),
      schemas: { Problema: PROBLEMA },
    },
  };
}

/** Each path with its operations; a GET brings its HEAD. */
function pathsOf(routes: readonly AnyRoute[]): Record<string, Record<string, JsonSchema>> {
  const paths: Record<string, Record<string, JsonSchema>> = {};
  for (const route of routes) {
    const item = (paths[route.path] ??= {});
    item[route.method.toLowerCase()] = operation(route);
    if (route.method === 'GET') item.head = headOperation(route);
  }
  return paths;
}

const INFO = {
  title: 'API de preços, estoque, cotações e produção',
  version: 'v1',
  license: { name: 'Proprietária: uso pelas contas da plataforma' },
  description:
    'API HTTP de uma ferramenta de preços e produção para impressão 3D: catálogo e preços por canal de venda, materiais e estoque, movimentos de estoque, cotações, pedidos de produção e webhooks.\n\n' +
    `Para começar, leia o [guia do integrador](${GUIA_PATH}): a primeira chamada, chaves e escopos, limites e custos, idempotência, listas, erros, webhooks e estoque, com exemplos que rodam.\n\n` +
    `Em TypeScript, use o [cliente oficial](${GUIA_PATH}/cliente-typescript), o pacote npm \`@printfarm/api\`: cada operação desta referência tipada, novas tentativas com a mesma Idempotency-Key, listas, ETag, verificação de webhooks e o comando \`escutar\`, que encaminha os eventos da conta para um endereço local sem túnel.\n\n` +
    'Respostas de 1 KiB ou mais vêm comprimidas (`Content-Encoding: gzip`) quando a requisição envia `Accept-Encoding: gzip`; o `ETag` é o mesmo com ou sem compressão.\n\n' +
    `Toda mudança da API, e dos tetos de uso de cada plano antes de valerem, é anunciada no [histórico de mudanças](${CHANGELOG_PATH}). ` +
    'Os códigos de erro estão em [/docs/erros](/docs/erros).',
};

const CHAVE_API = {
  type: 'http',
  scheme: 'bearer',
  bearerFormat: 'chv_<prefixo>_<segredo>',
  description: `Chave de API no cabeçalho \`Authorization: Bearer <chave>\`. Uma chave nunca faz mais do que quem a criou: `
    + 'além do escopo, cada rota exige a permissão dessa pessoa indicada em x-permissao-do-criador (as do registro de eventos, a de '
    + 'cada tipo de evento), e a chave de quem foi desativado no aplicativo recebe 403 escopo_insuficiente em toda rota com escopo. '
    + `Escopos: ${ESCOPOS.map((e) => `${e} (${DESCRICAO_ESCOPO[e]})`).join('; ')}`,
};

/** The problem details every error answers with (application/problem+json). */
const PROBLEMA = {
  type: 'object',
  required: ['type', 'title', 'status', 'detail', 'codigo', 'requisicao_id'],
  properties: {
    type: { type: 'string', format: 'uri' },
    title: { type: 'string' },
    status: { type: 'integer' },
    detail: { type: 'string' },
    codigo: { type: 'string', enum: Object.keys(TITULOS) },
    requisicao_id: { type: 'string', format: 'uuid' },
    erros: {
      type: 'array',
      items: {
        type: 'object',
        required: ['campo', 'mensagem'],
        properties: { campo: { type: 'string' }, mensagem: { type: 'string' } },
      },
    },
    motivo: { type: 'string', description: 'Em 422: por que uma regra de negócio recusou (saldo_insuficiente, referencia_invalida, sku_ambiguo, lote_recusado…).' },
    recusas: {
      type: 'array',
      description: 'Em 422 com motivo lote_recusado: cada item recusado do lote, pela sua posição (indice, a partir de 0) em movimentos.',
      items: {
        type: 'object',
        required: ['indice', 'motivo', 'mensagem'],
        properties: { indice: { type: 'integer', minimum: 0 }, motivo: { type: 'string' }, mensagem: { type: 'string' } },
      },
    },
  },
};

/** Response headers of a conditional GET (ETag on 200 and 304). */
export const etagHeaders = { ETag: required('ETag') };
/** Response headers of an idempotent POST. */
export const replayHeaders = { 'Idempotent-Replayed': ref('Idempotent-Replayed') };
