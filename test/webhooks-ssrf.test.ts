import { randomUUID } from 'node:crypto';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { sql } from '#shared/db/pool.ts';
import { criarEndpoint } from '#shared/db/webhooks.ts';
import { isPublicAddress } from '#shared/ssrf.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { createAccount, type TestAccount } from './helpers/fixtures.ts';
import { emit, eventually, startReceiver, type Receiver } from './helpers/receiver.ts';

const test = suite('webhooks: no delivery to loopback, private, link-local, CGNAT or metadata addresses');
let app: TestApp;
let receiver: Receiver;
let account: TestAccount;

test.before(async () => {
  receiver = await startReceiver();
  app = await startTestApp({ worker: true, env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'false' } });
  account = await createAccount(app.db.pool, { plano: 'farm' });
});
test.after(async () => {
  await app.stop();
  await receiver.close();
});

test('classifies public and non-public addresses', () => {
  for (const a of ['8.8.8.8', '1.1.1.1', '200.147.35.149', '2606:4700:4700::1111', '2804:14c::1']) assert.ok(isPublicAddress(a), a);
  for (const a of ['127.0.0.1', '127.8.9.10', '10.1.2.3', '172.16.0.1', '172.31.255.255', '192.168.1.1', '169.254.169.254', '100.64.0.1',
    '100.127.255.254', '0.0.0.0', '224.0.0.1', '255.255.255.255', '198.18.0.1', '::1', '::', 'fe80::1', 'fc00::1', 'fd00:ec2::254',
    '::ffff:127.0.0.1', '::ffff:10.0.0.1', 'ff02::1', 'not an address']) {
    assert.not.ok(isPublicAddress(a), a);
  }
});

test('refuses every non-public destination on the address it would connect to, without sending a byte', async () => {
  const port = receiver.port;
  const urls = [
    `http://127.0.0.1:${port}/loopback`,
    `http://[::1]:${port}/loopback6`,
    `http://2130706433:${port}/decimal-loopback`,
    `http://localhost:${port}/name-resolving-to-loopback`,
    'http://10.0.0.1/private',
    'http://192.168.0.10/private',
    'http://169.254.169.254/latest/meta-data/',
    'http://100.64.0.1/cgnat',
  ];
  for (const url of urls) {
    await criarEndpoint(app.db.pool, { contaId: account.contaId, usuarioId: account.usuarioId, url, tipos: [], descricao: null });
  }
  await emit(app.db.pool, account.contaId, 'cotacao.criada', { objeto: 'cotacao', id: randomUUID(), codigo: 'COT-1', status: 'rascunho' });
  const Row = z.object({ url: z.string(), response_status: z.number().nullable(), error: z.string().nullable(), status: z.string() });
  const rows = await eventually(() => app.db.pool.any(sql.type(Row)`
    SELECT e.url, a.response_status, a.error, d.status
      FROM deliveries d
      JOIN webhook_endpoints e ON e.conta_id = d.conta_id AND e.id = d.endpoint_id
      JOIN delivery_attempts a ON a.conta_id = d.conta_id AND a.delivery_id = d.id
     WHERE a.succeeded IS NOT NULL`), (r) => r.length === urls.length);
  assert.is(rows.length, urls.length);
  for (const row of rows) {
    assert.is(row.response_status, null, row.url);
    assert.match(row.error ?? '', /^refused: .*not public/, `${row.url}: ${row.error}`);
    assert.is(row.status, 'pending', 'a refusal is a failed attempt, retried on the schedule');
  }
  const named = rows.find((r) => r.url.includes('localhost'));
  assert.match(named?.error ?? '', /localhost resolves to (127\.0\.0\.1|::1)/);
  assert.is(receiver.received.length, 0, 'the receiver on loopback was never reached');
});

test.run();
