// fast-check arbitraries generated from the route table's zod schemas (through their JSON Schema,
// which zod derives and the OpenAPI document shows): valid inputs of each part of a request, and
// hostile mutations of them. Known ids are mixed into uuids so that generated requests reach the
// records of the account under test, not only 404s.
import fc from 'fast-check';
import { z } from 'zod';
import type { AnyRoute } from '../../api/routes/types.ts';

type Json = Record<string, any>;

const toJson = (schema: z.ZodType): Json => z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Json;

const isoDate = (min: string, max: string) => fc.date({ min: new Date(min), max: new Date(max), noInvalidDate: true });

/** An arbitrary of the values a JSON Schema (the subset zod emits for our routes) accepts. */
export function arbitraryOf(schema: Json, knownIds: readonly string[]): fc.Arbitrary<unknown> {
  if ('const' in schema) return fc.constant(schema.const);
  if (schema.enum) return fc.constantFrom(...(schema.enum as unknown[]));
  const alternatives = (schema.anyOf ?? schema.oneOf) as Json[] | undefined;
  if (alternatives) return fc.oneof(...alternatives.map((s) => arbitraryOf(s, knownIds)));
  switch (schema.type) {
    case 'null':
      return fc.constant(null);
    case 'boolean':
      return fc.boolean();
    case 'integer':
      return fc.integer({ min: schema.minimum ?? -1_000_000, max: schema.maximum ?? 1_000_000 });
    case 'number':
      return fc.double({ min: schema.minimum ?? -1e6, max: schema.maximum ?? 1e6, noNaN: true });
    case 'array':
      return fc.array(arbitraryOf(schema.items ?? {}, knownIds), { minLength: schema.minItems ?? 0, maxLength: Math.min(schema.maxItems ?? 5, 5) });
    case 'object': {
      const properties = Object.fromEntries(Object.entries((schema.properties ?? {}) as Record<string, Json>).map(([k, s]) => [k, arbitraryOf(s, knownIds)]));
      return fc.record(properties, { requiredKeys: (schema.required ?? []) as string[] });
    }
    case 'string':
      return stringOf(schema, knownIds);
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

function stringOf(schema: Json, knownIds: readonly string[]): fc.Arbitrary<string> {
  switch (schema.format) {
    case 'uuid':
      return knownIds.length ? fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...knownIds) }, { weight: 1, arbitrary: fc.uuid({ version: 4 }) }) : fc.uuid({ version: 4 });
    case 'date':
      return isoDate('2000-01-01', '2099-12-31').map((d) => d.toISOString().slice(0, 10));
    case 'date-time':
      return isoDate('2000-01-01', '2099-12-31').map((d) => d.toISOString());
    default:
      if (schema.pattern) return fc.stringMatching(new RegExp(schema.pattern as string));
      return fc.string({ unit: 'grapheme', minLength: schema.minLength ?? 0, maxLength: Math.min(schema.maxLength ?? 40, 40) })
        .filter((s) => s.length >= (schema.minLength ?? 0) && s.length <= (schema.maxLength ?? Infinity));
  }
}

/** A request as the generator builds it: path, query, headers and the body's text. */
export type GeneratedRequest = {
  method: string;
  path: string;
  query: [string, string][];
  headers: Record<string, string>;
  body: string | undefined;
  /** How the body's text goes out as bytes: UTF-8, or Latin-1 (bytes that are not UTF-8 when it has a ç). */
  encoding?: 'latin1';
  /** The mutation applied, for the report of a failure. */
  mutation: string;
};

/** Valid parts of a request to `route`, from its schemas. */
export function validRequest(route: AnyRoute, knownIds: readonly string[], token: string): fc.Arbitrary<GeneratedRequest> {
  const part = (schema: z.ZodType | undefined) => (schema ? arbitraryOf(toJson(schema), knownIds) : fc.constant(undefined));
  return fc.record({ params: part(route.params), query: part(route.query), headers: part(route.headers), body: part(route.body) })
    .map(({ params, query, headers, body }) => ({
      method: route.method,
      path: route.path.replace(/\{(\w+)\}/g, (_m, name: string) => percent(String((params as Json | undefined)?.[name] ?? ''))),
      query: Object.entries((query ?? {}) as Json).filter(([, v]) => v !== undefined).map(([k, v]) => [k, String(v)] as [string, string]),
      headers: {
        authorization: `Bearer ${token}`,
        ...Object.fromEntries(Object.entries((headers ?? {}) as Json).filter(([, v]) => v !== undefined).map(([k, v]) => [k, latin1(String(v))])),
        ...(route.body ? { 'content-type': 'application/json' } : {}),
      },
      body: route.body ? JSON.stringify(body) : undefined,
      mutation: 'nenhuma',
    }));
}

// Values a client should never get a 500 for, wherever they land.
const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(null, true, false, '', 0, -1, 1e308, -1e308, 2 ** 53 + 1, -(2 ** 63), 1.5, '\u0000', 'a\u0000b', '\ud800', 'x\udfff',
    '0000-01-01', '0000-01-01T00:00:00Z', '9999-12-31T23:59:59.999999999Z', 'é'.repeat(300), '🙂'.repeat(201), [], {}, [[[[[]]]]], { a: { b: { c: {} } } }),
  fc.string({ unit: 'binary', maxLength: 20 }),
  fc.integer(),
  fc.jsonValue({ maxDepth: 3 }),
);

/** A value as a client would put it in a query, header or path: a string as it is, anything else as JSON (objects fast-check makes may have no prototype, which String() cannot print). */
const show = (value: unknown): string => (typeof value === 'string' ? value : JSON.stringify(value) ?? 'undefined');

const deepNesting = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);

/** A hostile variant of a valid request: one part broken the way a careless or hostile client breaks it. */
export function mutated(valid: fc.Arbitrary<GeneratedRequest>): fc.Arbitrary<GeneratedRequest> {
  return fc.tuple(valid, fc.nat(), hostileValue, fc.string({ unit: 'binary', maxLength: 30 })).chain(([req, pick, value, text]) => {
    const options: [string, () => GeneratedRequest][] = [
      ['campo do corpo trocado', () => replaceInBody(req, pick, value)],
      ['campo desconhecido no corpo', () => withBody(req, (b) => ({ ...b, campo_que_nao_existe: value }))],
      ['chave repetida no corpo', () => ({ ...req, body: req.body?.replace(/^\{/, `{"tipo": ${JSON.stringify(value)},`) })],
      ['corpo aninhado demais', () => ({ ...req, body: deepNesting(5_000) })],
      ['corpo que não é JSON', () => ({ ...req, body: text })],
      ['corpo em Latin-1', () => ({ ...replaceInBody(req, pick, 'Conceição'), encoding: 'latin1' as const })],
      ['corpo ausente', () => ({ ...req, body: undefined })],
      ['parâmetro de query trocado', () => ({ ...req, query: req.query.length ? req.query.map(([k, v], i) => [k, i === pick % req.query.length ? show(value) : v]) : [['limite', show(value)]] })],
      ['parâmetro de query desconhecido', () => ({ ...req, query: [...req.query, ['filtro_inexistente', show(value)]] })],
      ['parâmetro de query repetido', () => ({ ...req, query: [...req.query, ...req.query] })],
      ['cursor forjado', () => ({ ...req, query: [...req.query, ['cursor', Buffer.from(JSON.stringify(value)).toString('base64url')]] })],
      ['id do caminho trocado', () => ({ ...req, path: req.path.replace(/[0-9a-f-]{36}/, percent(show(value))) })],
      ['Authorization quebrado', () => ({ ...req, headers: { ...req.headers, authorization: `Bearer ${latin1(text)}` } })],
      ['sem Authorization', () => ({ ...req, headers: withoutHeader(req.headers, 'authorization') })],
      ['Idempotency-Key estranha', () => ({ ...req, headers: { ...req.headers, 'idempotency-key': latin1(show(value)).slice(0, 200) } })],
      ['If-None-Match estranho', () => ({ ...req, headers: { ...req.headers, 'if-none-match': latin1(show(value)).slice(0, 300) } })],
      ['Content-Type estranho', () => ({ ...req, headers: { ...req.headers, 'content-type': latin1(text) || 'text/plain' } })],
      ['método trocado', () => ({ ...req, method: ['PUT', 'DELETE', 'PATCH', req.method === 'GET' ? 'HEAD' : 'GET'][pick % 4] ?? 'PUT' })],
    ];
    const [mutation, build] = options[pick % options.length] ?? options[0]!;
    return fc.constant({ ...build(), mutation });
  });
}

function withBody(req: GeneratedRequest, change: (body: Json) => unknown): GeneratedRequest {
  const parsed = req.body ? (JSON.parse(req.body) as unknown) : {};
  const body = parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Json) : {};
  return { ...req, body: JSON.stringify(change(body)), headers: { 'content-type': 'application/json', ...req.headers } };
}

/** Replaces one value somewhere in the body (any depth) by a hostile one. */
function replaceInBody(req: GeneratedRequest, pick: number, value: unknown): GeneratedRequest {
  return withBody(req, (body) => {
    const slots: [Json, string][] = [];
    const visit = (node: unknown) => {
      if (node && typeof node === 'object') for (const [k, v] of Object.entries(node as Json)) { slots.push([node as Json, k]); visit(v); }
    };
    visit(body);
    const slot = slots[pick % Math.max(1, slots.length)];
    if (slot) slot[0][slot[1]] = value;
    else body.campo = value;
    return body;
  });
}

const withoutHeader = (headers: Record<string, string>, name: string) => Object.fromEntries(Object.entries(headers).filter(([k]) => k !== name));

/** Header values travel as latin1 bytes; keep what fetch can send (no control characters). */
const latin1 = (text: string) => [...text].filter((c) => c.charCodeAt(0) >= 0x20 && c.charCodeAt(0) <= 0xff && c.charCodeAt(0) !== 0x7f).join('');

/** Every byte of the text's UTF-8 percent-encoded (a lone surrogate goes as U+FFFD, as fetch would send it). */
const percent = (text: string) => [...Buffer.from(text, 'utf8')].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('');
