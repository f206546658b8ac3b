// Validation of path, query, headers and body against a route's zod schemas. Every problem found
// is reported at once in erros[] of a 400 dados_invalidos.
import { z } from 'zod';
import { dadosInvalidos, type CampoInvalido } from '../shared/errors.ts';

z.config(z.locales.pt());

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

/** Parses every part; throws one 400 listing every invalid field. */
export function validateInput(schemas: Schemas, raw: RawInput): Parsed {
  const erros: CampoInvalido[] = [];
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
