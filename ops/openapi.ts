// npm run openapi: writes the OpenAPI document derived from the route table to docs/openapi.json
// (the committed copy; a test fails when it drifts from what the server serves) and the
// TypeScript types of the official client generated from it (openapi-typescript) to
// client/src/openapi.ts (committed too: the client is published with them; a test fails when they
// drift from docs/openapi.json). `--types` rewrites only the types, from the committed document.
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import openapiTS from 'openapi-typescript';
import { buildOpenApi } from '../api/reference/openapi.ts';
import { routes } from '../api/routes/index.ts';
import { projectRoot } from '#shared/config.ts';

export const COMMITTED_BASE_URL = 'http://localhost:3000/v1';
export const committedPath = path.join(projectRoot, 'docs', 'openapi.json');
export const clientTypesPath = path.join(projectRoot, 'client', 'src', 'openapi.ts');

export function committedDocument(): Record<string, unknown> {
  return buildOpenApi(routes, COMMITTED_BASE_URL, { template: true });
}

const HEADER = '// Os tipos da API, gerados de docs/openapi.json por `npm run openapi` (openapi-typescript): não edite.\n';

/** The client's types as `npm run openapi` writes them for a document. */
export async function clientTypes(document: Record<string, unknown>): Promise<string> {
  return HEADER + (await openapiTS(document as never));
}

if (import.meta.main) {
  const document = process.argv.includes('--types')
    ? JSON.parse(await readFile(committedPath, 'utf8')) as Record<string, unknown>
    : committedDocument();
  if (!process.argv.includes('--types')) await writeFile(committedPath, `${JSON.stringify(document, null, 2)}\n`);
  await writeFile(clientTypesPath, await clientTypes(document));
  process.stdout.write(`wrote ${process.argv.includes('--types') ? '' : `${path.relative(projectRoot, committedPath)} and `}${path.relative(projectRoot, clientTypesPath)}\n`);
}
