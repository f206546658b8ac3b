import { setTimeout as sleep } from 'node:timers/promises';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { sql } from '#shared/db/pool.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { createAccount, type TestAccount } from './helpers/fixtures.ts';
import { request } from './helpers/http.ts';

const test = suite('request log');
let app: TestApp;
let account: TestAccount;

const Row = z.object({
  requisicao_id: z.string(),
  conta_id: z.string().nullable(),
  chave_id: z.string().nullable(),
  method: z.string(),
  route: z.string().nullable(),
  path: z.string(),
  status: z.number(),
  codigo: z.string().nullable(),
  refused_by: z.string().nullable(),
  cost: z.number(),
  duration_ms: z.number(),
});

let narrow: TestAccount;

test.before(async () => {
  // A long flush interval: rows must still be there after a graceful stop.
  app = await startTestApp({ env: { REQUEST_LOG_FLUSH_MS: '60000' } });
  account = await createAccount(app.db.pool);
  narrow = await createAccount(app.db.pool, { escopos: ['pedidos:ler'] });
});

const readLog = (id: string) => app.db.pool.maybeOne(sql.type(Row)`SELECT * FROM request_log WHERE requisicao_id = ${id}`);

test('records admitted and refused requests, flushed on a graceful stop', async () => {
  const ok = await request(`${app.baseUrl}/conta`, { token: account.token });
  const refused = await request(`${app.baseUrl}/conta`);
  const missing = await request(`${app.baseUrl}/nada`, { token: account.token });
  const outOfScope = await request(`${app.baseUrl}/cotacoes`, { token: narrow.token });
  assert.is(ok.status, 200);
  assert.is(outOfScope.status, 403);
  await sleep(50);
  assert.is(await readLog(ok.headers.get('x-request-id') ?? ''), null, 'not written on the request path');

  await app.web.stop();

  const okRow = await readLog(ok.headers.get('x-request-id') ?? '');
  assert.ok(okRow);
  assert.is(okRow?.conta_id, account.contaId);
  assert.is(okRow?.chave_id, account.chaveId);
  assert.is(okRow?.method, 'GET');
  assert.is(okRow?.route, 'getConta');
  assert.is(okRow?.path, '/v1/conta');
  assert.is(okRow?.status, 200);
  assert.is(okRow?.codigo, null);
  assert.is(okRow?.refused_by, null, 'admitted: no rule refused it');
  assert.is(okRow?.cost, 0, 'GET /conta costs nothing in the month, and the log keeps the month units');
  assert.ok((okRow?.duration_ms ?? -1) >= 0);
  // Its id is a UUIDv7 of the request's arrival: the first 48 bits are the row's created_at in ms.
  const id = okRow?.requisicao_id ?? '';
  assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  const criadoMs = await app.db.pool.oneFirst(sql.type(z.object({ ms: z.number() }))`
    SELECT (extract(epoch FROM created_at) * 1000)::float8 AS ms FROM request_log WHERE requisicao_id = ${id}`);
  assert.is(parseInt(id.replace('-', '').slice(0, 12), 16), Math.round(criadoMs));

  const refusedRow = await readLog(refused.headers.get('x-request-id') ?? '');
  assert.is(refusedRow?.status, 401);
  assert.is(refusedRow?.codigo, 'nao_autenticado');
  assert.is(refusedRow?.conta_id, null);
  assert.is(refusedRow?.refused_by, 'nao_autenticado');
  const scopeRow = await readLog(outOfScope.headers.get('x-request-id') ?? '');
  assert.equal([scopeRow?.status, scopeRow?.codigo, scopeRow?.refused_by], [403, 'escopo_insuficiente', 'escopo'], 'which rule refused it');

  const missingRow = await readLog(missing.headers.get('x-request-id') ?? '');
  assert.is(missingRow?.status, 404);
  assert.is(missingRow?.codigo, 'nao_encontrado');
});

test.after(async () => {
  await app.worker?.stop();
  await app.db.close();
});

test.run();
