// Outbound HTTP of deliveries: axios over keep-alive agents (a bounded pool of connections per
// receiver), no redirects followed, no proxy, a hard deadline per request, at most 4 KB of the
// response read. Unless the operator allows private networks, the agents' lookup
// refuses names that resolve to non-public addresses and IP literals are checked before connecting
// (shared/ssrf.ts).
import http from 'node:http';
import https from 'node:https';
import type { Readable } from 'node:stream';
import axios, { type AxiosAdapter, type AxiosInstance } from 'axios';
import { clock } from '#shared/clock.ts';
import { RESPONSE_BODY_LIMIT } from '#shared/domain/webhooks.ts';
import { AddressRefusedError, checkUrlHost, guardedLookup } from '#shared/ssrf.ts';

export type HttpOutcome = {
  startedAt: Date;
  durationMs: number;
  status: number | null;
  body: string | null;
  error: string | null;
  retryAfter: string | null;
};

export type WebhookHttp = {
  post(url: string, body: string, headers: Record<string, string>): Promise<HttpOutcome>;
  close(): void;
};

export function createWebhookHttp(options: { timeoutMs: number; allowPrivateNetworks: boolean; maxSocketsPerHost?: number }): WebhookHttp {
  // Connections stay open per receiver (host and port), at most as many as the worker's requests in
  // flight: endpoints of many accounts may share a host, and each is bounded by its own concurrency
  // (the dispatcher's p-limit), so a host's pool must not make one account's requests wait on another's.
  const sockets = options.maxSocketsPerHost ?? Infinity;
  const agentOptions = {
    keepAlive: true, maxSockets: sockets, maxFreeSockets: Math.min(sockets, 256),
    ...(options.allowPrivateNetworks ? {} : { lookup: guardedLookup }),
  };
  const httpAgent = new http.Agent(agentOptions);
  const httpsAgent = new https.Agent(agentOptions);
  const client: AxiosInstance = axios.create({
    adapter: sendOver({ 'http:': httpAgent, 'https:': httpsAgent }),
    validateStatus: () => true,
    // The body is already the exact JSON that was signed; nothing may re-serialise it, and the
    // response is a stream read up to the limit.
    transformRequest: [(data: unknown) => data],
    transformResponse: [(data: unknown) => data],
  });

  return {
    async post(url, body, headers) {
      const startedAt = clock.now();
      const started = performance.now();
      const done = (fields: Omit<HttpOutcome, 'startedAt' | 'durationMs'>): HttpOutcome => ({
        startedAt,
        durationMs: Math.round(performance.now() - started),
        ...fields,
      });
      // The deadline bounds the whole exchange, answer included. A timer cleared when the exchange
      // ends: AbortSignal.timeout's timers lived on, thousands of them, until they fired.
      const deadline = new AbortController();
      const timer = setTimeout(() => deadline.abort(new DeadlineError()), options.timeoutMs);
      try {
        if (!options.allowPrivateNetworks) checkUrlHost(url);
        const response = await client.post<Readable>(url, body, {
          signal: deadline.signal,
          headers: { 'content-type': 'application/json', 'user-agent': 'printfarm-webhooks/1', ...headers },
        });
        const retryAfter = response.headers['retry-after'];
        return done({
          status: response.status,
          body: await readLimited(response.data),
          error: null,
          retryAfter: typeof retryAfter === 'string' ? retryAfter : null,
        });
      } catch (error) {
        return done({ status: null, body: null, error: describe(deadline.signal.aborted ? deadline.signal.reason : error, options.timeoutMs), retryAfter: null });
      } finally {
        clearTimeout(timer);
      }
    },
    close() {
      httpAgent.destroy();
      httpsAgent.destroy();
    },
  };
}

/**
 * axios's transport for deliveries: the request over the receiver's keep-alive agent, answered with
 * the response as a stream. axios's own http adapter spent the worker's CPU on what a delivery never
 * uses (docs/decisions/0035-delivery-requests-and-retries.md): redirects, proxies, decompression,
 * progress events. This one follows no redirect, uses no proxy
 * and asks for no compression; the deadline (the request's signal) ends the exchange, response
 * included.
 */
function sendOver(agents: Record<'http:' | 'https:', http.Agent>): AxiosAdapter {
  return (config) => new Promise((resolve, reject) => {
    const url = new URL(config.url ?? '');
    const body = typeof config.data === 'string' ? config.data : '';
    const secure = url.protocol === 'https:';
    const send = (again: boolean) => {
      let answered = false;
      const request = (secure ? https : http).request(url, {
        method: (config.method ?? 'post').toUpperCase(),
        agent: agents[secure ? 'https:' : 'http:'],
        headers: { ...config.headers.toJSON(), 'content-length': String(Buffer.byteLength(body)) },
        ...(config.signal ? { signal: config.signal as AbortSignal } : {}),
      }, (response) => {
        answered = true;
        resolve({ data: response, status: response.statusCode ?? 0, statusText: response.statusMessage ?? '', headers: response.headers, config, request });
      });
      // on, not once: a socket that fails after the answer began may report to the request again.
      request.on('error', (error) => {
        // A kept-alive socket the receiver closed while it sat idle fails at once, before any answer
        // (the race Node's documentation describes for reusedSocket): the request is sent once more,
        // on another socket, rather than counted as the receiver's failure and retried minutes later.
        if (!again && !answered && request.reusedSocket && (error as NodeJS.ErrnoException).code === 'ECONNRESET') send(true);
        else reject(error);
      });
      request.end(body);
    };
    send(false);
  });
}

/** The whole exchange took longer than the worker's deadline. */
class DeadlineError extends Error {
  override name = 'TimeoutError';
}

/**
 * Up to RESPONSE_BODY_LIMIT bytes of the body as text; the rest is not read. A body cut short
 * (deadline, reset) keeps what arrived: the status already decided. (Events, not an async
 * iterator: that cost a promise per chunk.)
 */
function readLimited(stream: Readable): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let finished = false;
    const finish = () => {
      if (finished) return;
      finished = true;
      stream.off('data', onData);
      stream.destroy();
      resolve(decodeLimited(chunks));
    };
    const onData = (chunk: Buffer | string) => {
      const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk);
      chunks.push(buffer);
      size += buffer.length;
      if (size >= RESPONSE_BODY_LIMIT) finish();
    };
    stream.on('data', onData);
    stream.once('end', finish);
    stream.once('error', finish);
    stream.once('close', finish);
  });
}

function decodeLimited(chunks: Buffer[]): string {
  if (chunks.length === 0) return '';
  let text = Buffer.concat(chunks).subarray(0, RESPONSE_BODY_LIMIT).toString('utf8').replaceAll('\u0000', '');
  // A multi-byte character cut at the limit decodes to U+FFFD, which may take more bytes.
  while (Buffer.byteLength(text) > RESPONSE_BODY_LIMIT) text = text.slice(0, -1);
  return text;
}

function describe(error: unknown, timeoutMs: number): string {
  for (let e: unknown = error; e instanceof Error; e = e.cause) {
    if (e instanceof AddressRefusedError) return `refused: ${e.message}`;
  }
  const code = error instanceof Error && 'code' in error ? String(error.code) : '';
  if (code === 'ECONNABORTED' || code === 'ETIMEDOUT' || code === 'ERR_CANCELED' || (error instanceof Error && error.name === 'TimeoutError')) {
    return `no answer within ${timeoutMs} ms`;
  }
  const message = error instanceof Error ? error.message : String(error);
  return (code && !message.includes(code) ? `${code}: ${message}` : message).slice(0, 1000);
}
