// Accept-Encoding (issue 20, item 5): an answer of 1 KiB or more goes gzipped to a client that
// takes gzip, with its Content-Length; smaller answers, and clients that do not take it, get it as it
// is; every answer of a route says Vary: Accept-Encoding, and the ETag is the content's either way.
// Read with node:http, which (unlike fetch) shows the bytes as sent.
import http from 'node:http';
import { gunzipSync } from 'node:zlib';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { acceptsGzip, GZIP_MIN_BYTES } from '../api/http/compression.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { criarCanalDeTeste, criarProdutoCompleto, semLimites } from './helpers/catalogo.ts';
import { createAccount, type TestAccount } from './helpers/fixtures.ts';

const test = suite('compression');
let app: TestApp;
let conta: TestAccount;
let produtoId: string;

test.before(async () => {
  app = await startTestApp();
  await semLimites(app.db.pool);
  conta = await createAccount(app.db.pool, { plano: 'farm' });
  const canal = await criarCanalDeTeste(app.db.pool, conta.contaId);
  for (let i = 0; i < 20; i++) {
    const p = await criarProdutoCompleto(app.db.pool, conta.contaId, {
      variacoes: [{ partes: ['Base', 'Tampa'] }, { partes: ['Base'] }, {}, {}],
      precos: [{ canalId: canal, faixas: [[1, 1000], [10, 900]] }],
    });
    produtoId ??= p.produtoId;
  }
});
test.after(async () => app.stop());

type Raw = { status: number; headers: http.IncomingHttpHeaders; body: Buffer };

function raw(path: string, headers: Record<string, string>, method = 'GET'): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${app.baseUrl}${path}`, { method, headers: { authorization: `Bearer ${conta.token}`, ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

test('which Accept-Encoding takes gzip', () => {
  for (const yes of ['gzip', 'GZIP', 'gzip, deflate, br', 'br;q=1, gzip;q=0.5', 'x-gzip', '*', 'deflate, *;q=0.1']) assert.ok(acceptsGzip(yes), yes);
  for (const no of [undefined, '', 'identity', 'br', 'gzip;q=0', 'gzip;q=0, *', '*;q=0', 'gzip;q=abc', 'gzipx']) assert.not.ok(acceptsGzip(no), String(no));
});

test('a large page goes gzipped to a client that takes gzip, the same JSON and ETag as the identity answer', async () => {
  const plain = await raw('/produtos?limite=100', {});
  const gz = await raw('/produtos?limite=100', { 'accept-encoding': 'gzip, deflate' });
  assert.is(plain.status, 200);
  assert.ok(plain.body.length >= 10 * GZIP_MIN_BYTES, `${plain.body.length} bytes`);
  assert.is(plain.headers['content-encoding'], undefined);
  assert.is(plain.headers.vary, 'Accept-Encoding');
  assert.is(Number(plain.headers['content-length']), plain.body.length);
  assert.is(gz.status, 200);
  assert.is(gz.headers['content-encoding'], 'gzip');
  assert.is(gz.headers.vary, 'Accept-Encoding');
  assert.is(Number(gz.headers['content-length']), gz.body.length);
  assert.ok(gz.body.length * 4 < plain.body.length, `${gz.body.length} bytes gzipped`);
  assert.is(gunzipSync(gz.body).toString('utf8'), plain.body.toString('utf8'));
  assert.is(gz.headers.etag, plain.headers.etag, 'the tag is the content\'s');
  assert.is(gz.headers['content-type'], plain.headers['content-type']);
  // The tag answers a 304 whichever coding it came with; the 304 says Vary too.
  const notModified = await raw('/produtos?limite=100', { 'accept-encoding': 'gzip', 'if-none-match': String(gz.headers.etag) });
  assert.equal([notModified.status, notModified.body.length, notModified.headers.vary], [304, 0, 'Accept-Encoding']);
});

test('one product (a few KB) is gzipped too; a refused or unknown coding gets the identity answer', async () => {
  const gz = await raw(`/produtos/${produtoId}`, { 'accept-encoding': '*' });
  assert.is(gz.headers['content-encoding'], 'gzip');
  const plain = await raw(`/produtos/${produtoId}`, {});
  assert.ok(plain.body.length >= GZIP_MIN_BYTES, `${plain.body.length} bytes`);
  assert.is(gunzipSync(gz.body).toString('utf8'), plain.body.toString('utf8'));
  for (const refused of ['gzip;q=0', 'br', 'identity']) {
    const res = await raw(`/produtos/${produtoId}`, { 'accept-encoding': refused });
    assert.is(res.headers['content-encoding'], undefined, refused);
    assert.equal(res.body, plain.body, refused);
  }
});

test('answers under 1 KiB go as they are, with Vary; problems are not coded', async () => {
  const small = await raw('/produtos?limite=1&sku=NADA', { 'accept-encoding': 'gzip' });
  assert.is(small.status, 200);
  assert.ok(small.body.length < GZIP_MIN_BYTES);
  assert.is(small.headers['content-encoding'], undefined);
  assert.is(small.headers.vary, 'Accept-Encoding');
  assert.is(JSON.parse(small.body.toString('utf8')).proximo_cursor, null);
  const problem = await raw('/produtos?limite=500', { 'accept-encoding': 'gzip' });
  assert.is(problem.status, 400);
  assert.is(problem.headers['content-encoding'], undefined);
  assert.is(JSON.parse(problem.body.toString('utf8')).codigo, 'dados_invalidos');
});

test('HEAD has the headers of the GET it stands for, Content-Length and Content-Encoding included', async () => {
  for (const headers of [{ 'accept-encoding': 'gzip' }, {}] as Record<string, string>[]) {
    const get = await raw('/produtos?limite=100', headers);
    const head = await raw('/produtos?limite=100', headers, 'HEAD');
    assert.is(head.status, 200);
    assert.is(head.body.length, 0);
    for (const name of ['content-length', 'content-encoding', 'etag', 'vary', 'content-type']) {
      assert.is(head.headers[name], get.headers[name], `${JSON.stringify(headers)}: ${name}`);
    }
  }
});

test.run();
