// The OpenAPI 3.1 document, derived from the route table: nothing here is written twice.
import { z } from 'zod';
import { DESCRICAO_ESCOPO, ESCOPOS } from '../shared/domain/acesso.ts';
import { TITULOS, type Codigo } from '../shared/errors.ts';
import { DELIVERY_DESCRIPTION, webhooksSection } from './openapi-webhooks.ts';
import type { AnyRoute } from './routes/types.ts';

type JsonSchema = Record<string, unknown>;

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as JsonSchema;
  return rest;
}

const ERRO_POR_STATUS: Record<number, Codigo[]> = {
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
  Sistema: 'Health, the calling account and key with its limits, and the catalog of event types.',
  Catálogo: 'Sales channels, products with variations and prices per channel, materials and colors.',
  Estoque: 'Finished-part and supply balances, and stock movements of finished parts.',
  Cotações: 'Quotations: read, create as drafts, change status.',
  Produção: 'Production orders: read and create.',
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
  'X-Request-Id': { description: 'The requisicao_id of this request (also in every error body and the service log).', schema: { type: 'string', format: 'uuid' } },
  'RateLimit-Policy': {
    description: 'The limits of the key (RFC 9651 list): "rajada";q=<n>;w=<s>, "minuto";q=<n>;w=60, "mes";q=<n>;w=2592000.',
    schema: { type: 'string' },
    example: '"rajada";q=10;w=5, "minuto";q=60;w=60, "mes";q=150000;w=2592000',
  },
  RateLimit: {
    description: 'The limit closest to exhaustion: "<nome>";r=<remaining>;t=<seconds until it is whole again>.',
    schema: { type: 'string' },
    example: '"rajada";r=9;t=1',
  },
  'Retry-After': { description: 'Seconds to wait before retrying.', schema: { type: 'integer', minimum: 0 } },
  ETag: { description: 'Strong entity tag of this representation; send it back in If-None-Match.', schema: { type: 'string' } },
  'Idempotent-Replayed': { description: 'true when this answer repeats an earlier request with the same Idempotency-Key.', schema: { type: 'string', enum: ['true'] } },
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
            description: 'JSON (Content-Type: application/json; anything else is 415), at most 64 KB, received within 5 s.',
            content: { 'application/json': { schema: jsonSchema(route.body, 'input'), ...(route.bodyExample === undefined ? {} : { example: route.bodyExample }) } },
          },
        }
      : {}),
    responses,
  };
}

/**
 * The document for a base URL; with `{ template: true }` the server is the contract's {base_url}
 * variable (the committed copy in docs/, independent of where the service runs).
 */
export function buildOpenApi(routes: readonly AnyRoute[], baseUrl: string, options: { template?: boolean } = {}): JsonSchema {
  const paths: Record<string, Record<string, JsonSchema>> = {};
  for (const route of routes) {
    paths[route.path] ??= {};
    (paths[route.path] as Record<string, JsonSchema>)[route.method.toLowerCase()] = operation(route);
  }
  const referenced = new Set([...JSON.stringify(paths).matchAll(/#\/components\/headers\/([A-Za-z-]+)/g)].map((m) => m[1]));
  return {
    openapi: '3.1.0',
    info: {
      title: 'API de preços, estoque, cotações e produção',
      version: 'v1',
      license: { name: 'Proprietária: uso pelas contas da plataforma' },
      description:
        'HTTP API for a 3D-printing pricing and production tool: catalog and prices per sales channel, materials and stock, stock movements, quotations and production orders, and webhooks.',
    },
    servers: options.template
      ? [{ url: '{base_url}', description: 'The service address, ending in /v1.', variables: { base_url: { default: baseUrl } } }]
      : [{ url: baseUrl }],
    security: [{ chaveApi: [] }],
    tags: [...[...new Set(routes.map((r) => r.tag))].map((name) => ({ name, description: TAGS[name] ?? name })), { name: 'Eventos', description: DELIVERY_DESCRIPTION }],
    paths,
    webhooks: webhooksSection(),
    components: {
      securitySchemes: {
        chaveApi: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'chv_<prefixo>_<segredo>',
          description: `API key in Authorization: Bearer <chave>. Scopes: ${ESCOPOS.map((e) => `${e} (${DESCRICAO_ESCOPO[e]})`).join('; ')}`,
        },
      },
      headers: Object.fromEntries(Object.entries(HEADERS).filter(([name]) => referenced.has(name))),
      schemas: {
        Problema: {
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
            motivo: { type: 'string' },
          },
        },
      },
    },
  };
}

/** Response headers of a conditional GET (ETag on 200 and 304). */
export const etagHeaders = { ETag: required('ETag') };
/** Response headers of an idempotent POST. */
export const replayHeaders = { 'Idempotent-Replayed': ref('Idempotent-Replayed') };
