// The deliveries' HTTP client (worker/webhooks/http.ts) against a receiver that closes a kept-alive
// connection as a request arrives on it, as a server whose keep-alive timeout ends just then does:
// the request is sent again once, on another connection, and only then is a failure the receiver's.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { createWebhookHttp } from '../worker/webhooks/http.ts';

const test = suite('webhooks: the delivery client and kept-alive connections');

/** A receiver answering 200, but closing the connection under the requests `closeAt` picks (by their number, from 1). */
async function receiver(closeAt: (n: number) => boolean) {
  let requests = 0;
  const server = http.createServer((req, res) => {
    const n = ++requests;
    req.resume();
    req.on('end', () => (closeAt(n) ? req.socket.destroy() : res.end('ok')));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  return { url, requests: () => requests, close: () => new Promise((resolve) => server.close(resolve)) };
}

test('a kept-alive connection closed as the request arrives: sent again on a new one, and answered', async () => {
  const r = await receiver((n) => n === 2);
  const client = createWebhookHttp({ timeoutMs: 5_000, allowPrivateNetworks: true, maxSocketsPerHost: 1 });
  try {
    assert.is((await client.post(r.url, '{}', {})).status, 200);
    const second = await client.post(r.url, '{}', {});
    assert.equal([second.status, second.error], [200, null]);
    assert.is(r.requests(), 3, 'the first, the one on the closed connection, and its repetition');
  } finally {
    client.close();
    await r.close();
  }
});

test('sent again only once: a repetition that fails too is the receiver\'s failure', async () => {
  const r = await receiver((n) => n >= 2);
  const client = createWebhookHttp({ timeoutMs: 5_000, allowPrivateNetworks: true, maxSocketsPerHost: 1 });
  try {
    assert.is((await client.post(r.url, '{}', {})).status, 200);
    const second = await client.post(r.url, '{}', {});
    assert.is(second.status, null);
    assert.match(second.error ?? '', /ECONNRESET/);
    assert.is(r.requests(), 3);
  } finally {
    client.close();
    await r.close();
  }
});

test('a new connection closed before an answer is not sent again', async () => {
  const r = await receiver((n) => n >= 2);
  const client = createWebhookHttp({ timeoutMs: 5_000, allowPrivateNetworks: true, maxSocketsPerHost: 1 });
  try {
    assert.is((await client.post(r.url, '{}', {})).status, 200);
    client.close();
    const fresh = createWebhookHttp({ timeoutMs: 5_000, allowPrivateNetworks: true, maxSocketsPerHost: 1 });
    const outcome = await fresh.post(r.url, '{}', {});
    fresh.close();
    assert.is(outcome.status, null);
    assert.is(r.requests(), 2, 'one request on a new connection, not repeated');
  } finally {
    await r.close();
  }
});

test.run();
