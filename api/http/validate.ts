// Validation of path, query, headers and body against a route's zod schemas. Every problem found
// is reported at once in erros[] of a 400 dados_invalidos.
import { z } from 'zod';
import { dadosInvalidos, type CampoInvalido } from '#shared/errors.ts';

// Brazilian Portuguese, like every text a client reads (pt is Portugal's: "ficheiro", "demasiado").
z.config(z.locales.ptBR());

type Location = 'caminho' | 'query' | 'cabecalho' | 'corpo';

/** Query string to an object; a parameter given twice is itself an error. */
export function queryObject(search: URLSearchParams): { value: Record<string, string>; erros: CampoInvalido[] } {
  const value: Record<string, string> = {};
  const erros: CampoInvalido[] = [];
  for (const [key, v] of search) {
    if (key in value) erros.push({ campo: key, mensagem: 'parâmetro repetido' });
    value[key] = v;
  }
  return { value, erros };
}

function issuesToErros(issues: z.core.$ZodIssue[], location: Location): CampoInvalido[] {
  return issues.flatMap((issue) => {
    if (issue.code === 'unrecognized_keys') {
      const what = location === 'query' ? 'parâmetro desconhecido' : 'campo desconhecido';
      return issue.keys.map((key) => ({ campo: fieldName([...issue.path, key], location), mensagem: what }));
    }
    return [{ campo: fieldName(issue.path, location), mensagem: issue.message }];
  });
}

function fieldName(path: PropertyKey[], location: Location): string {
  if (path.length === 0) return location;
  return path
    .map((part, i) => (typeof part === 'number' ? `[${part}]` : i === 0 ? String(part) : `.${String(part)}`))
    .join('');
}

// Without a query schema a route takes no parameters. Built once: constructing a zod schema
// compiles its parser, which is far too costly to do per request.
const NO_QUERY = z.object({}).strict();

export type Parsed = { params: unknown; query: unknown; headers: unknown; body: unknown };

export type RawInput = {
  params: Record<string, string>;
  query: URLSearchParams;
  headers: Record<string, string | string[] | undefined>;
  body: unknown;
};

export type Schemas = { params?: z.ZodType; query?: z.ZodType; headers?: z.ZodType; body?: z.ZodType };

/**
 * Text the database cannot hold: a NUL character (PostgreSQL's text has none) or half of a UTF-16
 * surrogate pair (no UTF-8 encodes it). Checked before any schema, in every part of the request.
 */
function badText(value: string): string | null {
  if (value.includes('\u0000')) return 'contém o caractere nulo (U+0000)';
  if (!value.isWellFormed()) return 'contém um substituto UTF-16 sem par (não é texto Unicode válido)';
  return null;
}

function textErrors(value: unknown, path: PropertyKey[], location: Location, erros: CampoInvalido[], depth = 0): void {
  if (typeof value === 'string') {
    const problem = badText(value);
    if (problem) erros.push({ campo: fieldName(path, location), mensagem: problem });
  } else if (Array.isArray(value)) {
    if (depth < 64) value.forEach((v, i) => textErrors(v, [...path, i], location, erros, depth + 1));
  } else if (value !== null && typeof value === 'object') {
    for (const [key, v] of Object.entries(value)) {
      // JSON.parse makes "__proto__" an own field; schemas would drop it without a word.
      const problem = key === '__proto__' ? 'é reservado (__proto__)' : badText(key);
      if (problem) erros.push({ campo: fieldName(path, location), mensagem: `um nome de campo ${problem}` });
      else if (depth < 64) textErrors(v, [...path, key], location, erros, depth + 1);
    }
  }
}

/** Parses every part; throws one 400 listing every invalid field. */
export function validateInput(schemas: Schemas, raw: RawInput): Parsed {
  const erros: CampoInvalido[] = [];
  textErrors(raw.params, [], 'caminho', erros);
  for (const [key, v] of raw.query) textErrors({ [key]: v }, [], 'query', erros);
  textErrors(raw.body, [], 'corpo', erros);
  if (erros.length > 0) throw dadosInvalidos('A requisição tem texto que não pode ser guardado; veja erros.', erros);
  const parse = (schema: z.ZodType | undefined, value: unknown, location: Location) => {
    if (!schema) return undefined;
    const result = schema.safeParse(value);
    if (result.success) return result.data;
    erros.push(...issuesToErros(result.error.issues, location));
    return undefined;
  };
  const query = queryObject(raw.query);
  erros.push(...query.erros);
  const querySchema = schemas.query ?? NO_QUERY;
  const parsed: Parsed = {
    params: parse(schemas.params, raw.params, 'caminho'),
    query: parse(querySchema, query.value, 'query'),
    headers: parse(schemas.headers, raw.headers, 'cabecalho'),
    body: parse(schemas.body, raw.body, 'corpo'),
  };
  if (erros.length > 0) throw dadosInvalidos('A requisição tem dados inválidos; veja erros.', erros);
  return parsed;
}
