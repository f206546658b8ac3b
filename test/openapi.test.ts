// The OpenAPI document: the committed copy matches what the server serves, and the conformance
// check every suite relies on really rejects what does not match.
import { readFile } from 'node:fs/promises';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { routes } from '../api/routes/index.ts';
import { committedDocument, committedPath } from '../ops/openapi.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { checkConformance, ConformanceError } from './helpers/conformance.ts';
import { request } from './helpers/http.ts';

const test = suite('OpenAPI document');
let app: TestApp;

test.before(async () => {
  app = await startTestApp();
});
test.after(async () => app.stop());

test('docs/openapi.json is what the route table produces (run npm run openapi after changing a route)', async () => {
  const committed = JSON.parse(await readFile(committedPath, 'utf8'));
  assert.equal(committed, JSON.parse(JSON.stringify(committedDocument())));
});

test('the served document is the committed one, with this server as its address', async () => {
  const res = await request(`${app.baseUrl}/openapi.json`);
  assert.is(res.status, 200);
  const committed = JSON.parse(await readFile(committedPath, 'utf8'));
  assert.equal(res.body.servers, [{ url: app.baseUrl }]);
  assert.equal({ ...res.body, servers: null }, { ...committed, servers: null });
});

test('every GET is listed with its HEAD: the same parameters and statuses, no body, the price of the GET said', () => {
  const document = committedDocument() as { paths: Record<string, Record<string, { parameters?: unknown[]; responses: Record<string, { content?: unknown }>; description: string }>> };
  const gets = routes.filter((r) => r.method === 'GET');
  for (const route of gets) {
    const item = document.paths[route.path] ?? {};
    const [get, head] = [item.get, item.head];
    assert.ok(get && head, `${route.path} has GET and HEAD`);
    assert.equal(head.parameters, get.parameters, route.path);
    assert.equal(Object.keys(head.responses), Object.keys(get.responses), route.path);
    assert.ok(Object.values(head.responses).every((r) => r.content === undefined), `${route.path}: HEAD answers carry no body`);
    assert.match(head.description, 'pelo preço do GET');
  }
});

const json = (body: unknown) => JSON.stringify(body);
const headers = (extra: Record<string, string> = {}) =>
  new Headers({ 'content-type': 'application/json; charset=utf-8', 'x-request-id': crypto.randomUUID(), ratelimit: '"rajada";r=1;t=1', 'ratelimit-policy': '"rajada";q=1;w=1', ...extra });

test('the conformance check accepts a matching response and rejects every kind of mismatch', () => {
  const url = 'http://localhost/v1/saude';
  const good = { situacao: 'ok', versao: 'v1', agora: '2026-11-23T00:00:00.000Z' };
  checkConformance('GET', url, 200, headers(), json(good));
  const mismatches: [number, Headers, string][] = [
    [200, headers(), json({ ...good, situacao: 'talvez' })],
    [200, headers(), json({ situacao: 'ok' })],
    [418, headers(), json(good)],
    [200, headers({ 'content-type': 'text/plain' }), json(good)],
    [200, new Headers({ 'content-type': 'application/json' }), json(good)],
    [429, headers({ 'content-type': 'application/problem+json', 'retry-after': 'soon' }), json({})],
  ];
  for (const [status, h, body] of mismatches) {
    assert.throws(() => checkConformance('GET', url, status, h, body), (e: unknown) => e instanceof ConformanceError, `${status} ${body}`);
  }
  // Paths the document does not describe are not checked.
  checkConformance('GET', 'http://localhost/docs', 200, new Headers(), '<html>');
});

test('every operation has a realistic example that matches its own schema', () => {
  for (const route of routes) {
    const success = Object.entries(route.responses).filter(([, spec]) => spec.schema);
    assert.ok(success.length > 0, route.operationId);
    for (const [status, spec] of success) {
      assert.ok(spec.example !== undefined, `${route.operationId} ${status} has an example`);
      const result = spec.schema?.safeParse(JSON.parse(JSON.stringify(spec.example)));
      assert.ok(result?.success, `${route.operationId} ${status} example: ${result?.error?.message}`);
    }
    if (route.body) {
      assert.ok(route.bodyExample !== undefined, `${route.operationId} has a request example`);
      const result = route.body.safeParse(route.bodyExample);
      assert.ok(result.success, `${route.operationId} request example: ${result.error?.message}`);
    }
  }
});

test.run();
