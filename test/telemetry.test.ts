// OpenTelemetry from the request to the receiver (issue 36, items 1-3): a real web and a real worker,
// started as the Procfile runs them with an OTLP endpoint, export to a real OTLP/HTTP receiver (JSON)
// in the suite. One write that emits an event, delivered to a real webhook receiver, is one trace:
// the request (continuing the client's traceparent), admission and its batch, the SQL, the relay and
// the attempt, whose request carries the attempt's traceparent. Metrics arrive by their names, with
// the counts of what was done. Nothing exported carries the key's token, the webhook secret or a
// value the client sent.
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { freePort } from '#shared/db/embedded.ts';
import { sql } from '#shared/db/pool.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import { criarProdutoCompleto } from './helpers/catalogo.ts';
import { createAccount, type TestAccount } from './helpers/fixtures.ts';
import { startOtlpReceiver, type ExportedSpan, type OtlpReceiver } from './helpers/otlp.ts';
import { addEndpoint, eventually, startReceiver, type Receiver } from './helpers/receiver.ts';
import { spawnRole, type RoleProcess } from './helpers/roles.ts';

const test = suite('telemetry: one trace from the request to the receiver, and metrics, over OTLP');
const BASE_URL = 'http://127.0.0.1:3000/v1';
let db: TestDatabase;
let receiver: Receiver;
let otlp: OtlpReceiver;
let account: TestAccount;
let segredoDoEndpoint: string;
let api: string;
const children = new Set<ChildProcess>();

const hex = (bytes: number) => randomBytes(bytes).toString('hex');
const PLANTED = `SEGREDO-PLANTADO-${hex(8)}`;

function startRole(script: string, env: Record<string, string>): RoleProcess {
  return spawnRole(script, {
    DATABASE_URL: db.url, PUBLIC_BASE_URL: BASE_URL, SHUTDOWN_GRACE_MS: '2000', REFUSAL_DELAY_MS: '0',
    OTEL_EXPORTER_OTLP_ENDPOINT: otlp.endpoint, OTEL_BSP_SCHEDULE_DELAY: '50', OTEL_METRIC_EXPORT_INTERVAL: '300', ...env,
  }, children);
}

test.before(async () => {
  db = await createTestDatabase();
  receiver = await startReceiver();
  otlp = await startOtlpReceiver();
  account = await createAccount(db.pool);
  segredoDoEndpoint = (await addEndpoint(db.pool, receiver, { contaId: account.contaId, usuarioId: account.usuarioId, path: '/otel' })).segredo;
  const port = await freePort();
  const web = startRole('api/main.ts', { PORT: String(port), HOST: '127.0.0.1' });
  api = `http://127.0.0.1:${port}/v1`;
  await eventually(async () => {
    if (web.exitCode !== null) throw new Error(`web exited: ${web.output()}`);
    return fetch(`${api}/saude`).then((r) => r.status, () => 0);
  }, (status) => status === 401);
  startRole('worker/main.ts', {});
});
test.after(async () => {
  await Promise.all([...children].map(async (child) => {
    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    await exited;
  }));
  await Promise.all([receiver.close(), otlp.close()]);
  await db.close();
});

/** POST /v1/cotacoes answered 201 so far, for the metrics to count. */
let posted = 0;
const criarCotacao = async (headers: Record<string, string>) => {
  const res = await postCotacao(headers);
  if (res.status === 201) posted++;
  return res;
};
const postCotacao = (headers: Record<string, string>) => fetch(`${api}/cotacoes`, {
  method: 'POST',
  headers: { authorization: `Bearer ${account.token}`, 'content-type': 'application/json', 'idempotency-key': hex(8), ...headers },
  body: JSON.stringify({ cliente_nome: PLANTED, itens: [{ tipo: 'avulso', nome: PLANTED, quantidade: 1, preco_unitario_centavos: 100 }] }),
});

const inTrace = (traceId: string) => otlp.spans().filter((s) => s.traceId === traceId);
const named = (spans: ExportedSpan[], name: string | RegExp) => spans.filter((s) => (typeof name === 'string' ? s.name === name : name.test(s.name)));

test('a write continues the client\'s trace through admission, its SQL, the relay and the delivery, whose request carries the attempt\'s traceparent', async () => {
  const traceId = hex(16);
  const clientSpan = hex(8);
  const res = await criarCotacao({ traceparent: `00-${traceId}-${clientSpan}-01`, tracestate: 'vendor=abc' });
  const text = await res.text();
  assert.is(res.status, 201, text);
  const cotacao = JSON.parse(text) as { id: string };
  const [delivery] = await receiver.waitFor(1, (r) => r.json?.dados?.id === cotacao.id);
  // Each process exports on its own: wait for the web's request and the worker's relay and attempt.
  const spans = await eventually(async () => inTrace(traceId),
    (s) => named(s, 'POST /v1/cotacoes').length > 0 && named(s, 'POST').length > 0 && named(s, /^relay /).length > 0);

  const server = named(spans, 'POST /v1/cotacoes');
  assert.is(server.length, 1, `spans of the trace: ${spans.map((s) => s.name).join(', ')}`);
  const request = server[0]!;
  assert.is(request.service, 'printfarm-web');
  assert.is(request.parentSpanId, clientSpan, 'the server span continues the client\'s span');
  assert.is(request.attributes['http.route'], '/v1/cotacoes');
  assert.is(request.attributes['http.response.status_code'], 201);
  assert.equal(request.events, ['admission', 'validation', 'handler', 'response'], 'the phases are events of the request');
  const sql = spans.filter((s) => s.attributes['db.system.name'] === 'postgresql' && s.parentSpanId === request.spanId);
  assert.ok(sql.some((s) => s.name === 'api_write_claim'), `the handler's SQL: ${sql.map((s) => s.name).join(', ')}`);

  const batch = otlp.spans().find((s) => s.name === 'admission batch' && s.links.some((l) => l.spanId === request.spanId));
  assert.ok(batch, 'the admission batch\'s span is linked to the request');
  assert.ok(otlp.spans().some((s) => s.parentSpanId === batch!.spanId && s.attributes['db.system.name'] === 'postgresql'),
    'the batch\'s statement is its child');

  const relay = named(spans, 'relay cotacao.criada');
  assert.is(relay.length, 1);
  assert.is(relay[0]!.service, 'printfarm-worker');
  assert.ok(otlp.spans().some((s) => s.name === 'webhook relay pass' && s.links.some((l) => l.traceId === traceId)), 'the pass is linked to the event');

  const attempt = named(spans, 'POST').find((s) => s.attributes['printfarm.event_id'] === delivery!.id);
  assert.ok(attempt, 'the delivery attempt is in the trace');
  assert.is(attempt!.service, 'printfarm-worker');
  assert.is(attempt!.attributes['http.response.status_code'], 200);
  assert.is(delivery!.headers.traceparent, `00-${traceId}-${attempt!.spanId}-01`, 'the receiver got the attempt as its parent');
});

test('a batched one-statement write (a stock movement), traced: answered as untraced, its event carrying the batch\'s trace, which links the request', async () => {
  const own = await createAccount(db.pool);
  const variacao = (await criarProdutoCompleto(db.pool, own.contaId)).variacoes[0]?.id ?? '';
  const traceId = hex(16);
  const res = await fetch(`${api}/estoque/movimentos`, {
    method: 'POST',
    headers: { authorization: `Bearer ${own.token}`, 'content-type': 'application/json', 'idempotency-key': hex(8), traceparent: `00-${traceId}-${hex(8)}-01` },
    body: JSON.stringify({ tipo: 'entrada', variacao_id: variacao, quantidade: 3, motivo: 'devolucao' }),
  });
  const text = await res.text();
  assert.is(res.status, 201, text);
  const request = await eventually(async () => named(inTrace(traceId), 'POST /v1/estoque/movimentos')[0], (s) => s !== undefined);
  const batch = await eventually(async () => otlp.spans().find((s) => s.name === 'write movimentos' && s.links.some((l) => l.spanId === request!.spanId)),
    (s) => s !== undefined);
  const traceparent = await db.pool.oneFirst(sql.type(z.object({ traceparent: z.string().nullable() }))`
    SELECT traceparent FROM outbox WHERE conta_id = ${own.contaId} AND tipo = 'estoque.movimentado'`);
  assert.is(traceparent, `00-${batch!.traceId}-${batch!.spanId}-01`);
});

test('a client\'s unsampled trace stays unsampled to the receiver: nothing exported of it, its context carried on', async () => {
  const traceId = hex(16);
  const res = await criarCotacao({ traceparent: `00-${traceId}-${hex(8)}-00` });
  const text = await res.text();
  assert.is(res.status, 201, text);
  const cotacao = JSON.parse(text) as { id: string };
  const [delivery] = await receiver.waitFor(1, (r) => r.json?.dados?.id === cotacao.id);
  assert.match(String(delivery!.headers.traceparent), new RegExp(`^00-${traceId}-[0-9a-f]{16}-00$`), 'the same trace, still unsampled');
  // A later sampled request's spans have gone out: the unsampled one's would have gone with them.
  const after = hex(16);
  assert.is((await fetch(`${api}/saude`, { headers: { authorization: `Bearer ${account.token}`, traceparent: `00-${after}-${hex(8)}-01` } })).status, 200);
  await eventually(async () => inTrace(after), (s) => s.length > 0);
  assert.equal(inTrace(traceId), [], 'no span of the unsampled trace');
});

test('a malformed traceparent starts a new trace and is never an error', async () => {
  const before = new Set(otlp.spans().map((s) => s.traceId));
  for (const bad of ['00-zz-yy-01', `ff-${hex(16)}-${hex(8)}-01`, `00-${'0'.repeat(32)}-${hex(8)}-01`, 'x'.repeat(5_000), `00-${hex(16)}-${hex(8)}-01, 00-${hex(16)}-${hex(8)}-01`]) {
    const res = await fetch(`${api}/saude`, { headers: { authorization: `Bearer ${account.token}`, traceparent: bad } });
    assert.is(res.status, 200, bad.slice(0, 60));
  }
  const fresh = await eventually(async () => named(otlp.spans(), 'GET /v1/saude').filter((s) => !before.has(s.traceId)), (s) => s.length >= 5);
  for (const span of fresh) assert.is(span.parentSpanId, '', 'a root: no parent taken from the malformed header');
});

test('metrics arrive by name: requests by route and status, refusals by limit, deliveries by outcome, queues, pool and process', async () => {
  const refused = await fetch(`${api}/saude`, { headers: { authorization: 'Bearer pf_nao_existe' } });
  assert.is(refused.status, 401);
  const sum = (name: string, match: (a: Record<string, unknown>) => boolean) =>
    otlp.points().filter((p) => p.name === name && match(p.attributes)).reduce((m, p) => Math.max(m, p.count ?? p.value), 0);
  await eventually(async () => sum('printfarm.admission.refusals', (a) => a['printfarm.refused_by'] === 'nao_autenticado'), (n) => n >= 1);
  const created = await eventually(async () => sum('http.server.request.duration',
    (a) => a['http.route'] === '/v1/cotacoes' && a['http.response.status_code'] === 201 && a['http.request.method'] === 'POST'), (n) => n >= posted);
  assert.ok(posted > 0);
  assert.is(created, posted, 'every POST /v1/cotacoes answered 201, counted once');
  await eventually(async () => sum('printfarm.webhook.deliveries', (a) => a['printfarm.delivery.outcome'] === 'succeeded'), (n) => n >= 1);
  const expected = [
    'printfarm-web db.client.connection.count', 'printfarm-web process.memory.usage', 'printfarm-web printfarm.db.breaker.open',
    'printfarm-web nodejs.eventloop.delay.p99', 'printfarm-web printfarm.admission.duration', 'printfarm-worker printfarm.queue.depth', 'printfarm-worker printfarm.queue.oldest_age',
    'printfarm-worker printfarm.webhook.endpoints', 'printfarm-worker http.client.request.duration',
    'printfarm-worker printfarm.webhook.commit_to_receipt', 'printfarm-worker db.client.connection.count',
  ];
  const names = await eventually(async () => new Set(otlp.points().map((p) => `${p.service} ${p.name}`)), (n) => expected.every((e) => n.has(e)));
  for (const name of expected) assert.ok(names.has(name), name);
  const endpoints = otlp.points().filter((p) => p.name === 'printfarm.webhook.endpoints' && p.attributes['printfarm.endpoint.state'] === 'failing');
  assert.is(endpoints.at(-1)?.value, 0, 'no endpoint is failing');
});

test('nothing exported carries the key\'s token, the webhook secret or a value the client sent', async () => {
  const everything = otlp.raw().join('\n');
  assert.ok(everything.length > 0);
  for (const secret of [account.token, segredoDoEndpoint, PLANTED]) {
    assert.not.ok(everything.includes(secret), `exported telemetry contains ${secret.slice(0, 12)}…`);
  }
});

test.run();
