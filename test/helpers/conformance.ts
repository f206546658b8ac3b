// Every response the suites receive is checked against the OpenAPI document the service serves:
// the status must be declared for the operation, the media type and body must match its schema,
// declared headers must be present and well-formed, and a problem's texts must be Portuguese. A
// mismatch fails the test that made the request. Paths the document does not describe (test-only
// routes, /docs) are not checked.
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { buildOpenApi } from '../../api/reference/openapi.ts';
import { routes } from '../../api/routes/index.ts';
import { inEnglish } from './language.ts';

type Json = Record<string, any>;

const document = buildOpenApi(routes, 'http://localhost/v1') as Json;
const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
(addFormats as unknown as (a: Ajv2020) => void)(ajv);
ajv.addSchema({ $id: 'openapi.json', components: document.components }, 'openapi.json');

const compiled = new Map<string, ValidateFunction>();
function validator(key: string, schema: Json): ValidateFunction {
  let fn = compiled.get(key);
  if (!fn) {
    // Local refs (#/components/...) resolve inside the document registered above.
    fn = ajv.compile(JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"openapi.json#/components/')));
    compiled.set(key, fn);
  }
  return fn;
}

const templates = Object.keys(document.paths as Json).map((template) => ({
  template,
  pattern: new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}$`),
  literal: !template.includes('{'),
}));

function findOperation(method: string, pathname: string): { template: string; operation: Json } | null {
  if (!pathname.startsWith('/v1/')) return null;
  const path = pathname.slice(3);
  const matches = templates.filter((t) => t.pattern.test(path)).sort((a, b) => Number(b.literal) - Number(a.literal));
  for (const match of matches) {
    const operation = (document.paths as Json)[match.template]?.[method.toLowerCase()];
    if (operation) return { template: match.template, operation };
  }
  return null;
}

const resolve = (value: Json): Json => {
  if (typeof value?.$ref !== 'string') return value;
  const parts = value.$ref.replace('#/', '').split('/');
  return parts.reduce((node: Json, part: string) => node?.[part], document);
};

export class ConformanceError extends Error {}

export function checkConformance(method: string, url: string, status: number, headers: Headers, text: string): void {
  const pathname = new URL(url).pathname;
  const found = findOperation(method, pathname);
  if (!found) return;
  const where = `${method} ${found.template} → ${status}`;
  const response = resolve(found.operation.responses?.[String(status)]);
  if (!response) throw new ConformanceError(`${where}: status not declared in the OpenAPI document`);

  for (const [name, spec] of Object.entries((response.headers ?? {}) as Json)) {
    const header = resolve(spec as Json);
    const value = headers.get(name);
    if (value === null) {
      if (header.required) throw new ConformanceError(`${where}: required header ${name} missing`);
      continue;
    }
    if (header.schema?.type === 'integer' && !/^\d+$/.test(value)) throw new ConformanceError(`${where}: header ${name} "${value}" is not an integer`);
  }

  const content = response.content as Json | undefined;
  if (!content) {
    if (text.length > 0) throw new ConformanceError(`${where}: a body where the document declares none`);
    return;
  }
  const mediaType = (headers.get('content-type') ?? '').split(';')[0]?.trim() ?? '';
  const media = content[mediaType];
  if (!media) throw new ConformanceError(`${where}: media type ${mediaType || '(none)'} not among ${Object.keys(content).join(', ')}`);
  const validate = validator(`${found.operation.operationId}:${status}:${mediaType}`, media.schema);
  const body = JSON.parse(text);
  if (!validate(body)) {
    throw new ConformanceError(`${where}: body does not match the document: ${ajv.errorsText(validate.errors, { separator: '; ' })}`);
  }
  if (mediaType === 'application/problem+json') {
    // What a client reads of a refusal is Portuguese (issue 18): its title, detail and each mensagem.
    const problem = body as { title: string; detail: string; erros?: { campo: string; mensagem: string }[] };
    const english = inEnglish([{ at: 'title', text: problem.title }, { at: 'detail', text: problem.detail },
      ...(problem.erros ?? []).map((e) => ({ at: `erros ${e.campo}`, text: e.mensagem }))]);
    if (english.length) throw new ConformanceError(`${where}: English in the problem: ${english.join(' | ')}`);
  }
}
