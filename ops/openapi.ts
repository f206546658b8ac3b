// npm run openapi: writes the OpenAPI document derived from the route table to docs/openapi.json
// (the committed copy; a test fails when it drifts from what the server serves) and the
// TypeScript types of a client generated from it (openapi-typescript) to test/generated/.
// `--types` regenerates only the types, from the committed copy (`npm run typecheck` does this first).
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import openapiTS from 'openapi-typescript';
import { buildOpenApi } from '../api/openapi.ts';
import { routes } from '../api/routes/index.ts';
import { projectRoot } from '../shared/config.ts';

export const COMMITTED_BASE_URL = 'http://localhost:3000/v1';
export const committedPath = path.join(projectRoot, 'docs', 'openapi.json');
const typesPath = path.join(projectRoot, 'test', 'generated', 'api.d.ts');

export function committedDocument(): Record<string, unknown> {
  return buildOpenApi(routes, COMMITTED_BASE_URL, { template: true });
}

async function writeTypes(document: Record<string, unknown>): Promise<void> {
  const types = await openapiTS(document as never);
  await mkdir(path.dirname(typesPath), { recursive: true });
  await writeFile(typesPath, types);
}

if (import.meta.main) {
  if (process.argv.includes('--types')) {
    await writeTypes(JSON.parse(await readFile(committedPath, 'utf8')) as Record<string, unknown>);
  } else {
    const document = committedDocument();
    await writeFile(committedPath, `${JSON.stringify(document, null, 2)}\n`);
    await writeTypes(document);
    process.stdout.write(`wrote ${path.relative(projectRoot, committedPath)} and ${path.relative(projectRoot, typesPath)}\n`);
  }
}
