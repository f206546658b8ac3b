// The fetch the client gives openapi-fetch: every request goes through it once, and it sends it as
// many times as the retry rules allow.
// - A POST without an Idempotency-Key gets one here, before the first attempt, so every retry of it
//   carries the same key and the service replays the first outcome instead of writing twice.
// - 429 and 503 are retried after Retry-After (or the backoff, when absent); 409 (the same key still
//   running) and network failures after the backoff: exponential from `esperaInicialMs`, with jitter,
//   at most `maximo` retries. A Retry-After longer than `esperaMaximaMs` is not waited for: the
//   answer goes to the caller (a month ceiling asks for days).
// - With the ETag cache, a GET whose URL is cached goes with If-None-Match; its 304 (1 in the
//   burst, nothing in the month) comes back as the cached 200.
import { ErroDeConexao } from './errors.ts';
import type { CacheDeEtag, RespostaGuardada } from './etag-cache.ts';

/** As novas tentativas de uma requisição que não teve resposta ou foi recusada por um limite. */
export type OpcoesDeTentativas = {
  /** Novas tentativas depois da primeira (padrão 3; 0 desliga). */
  maximo?: number;
  /** A espera antes da primeira nova tentativa sem `Retry-After`, em ms (padrão 500); dobra a cada uma, com variação aleatória. */
  esperaInicialMs?: number;
  /** A maior espera aceita, em ms (padrão 30000): um `Retry-After` maior não é esperado, e o erro volta na hora. */
  esperaMaximaMs?: number;
};

export type TransportOptions = {
  tentativas: Required<OpcoesDeTentativas>;
  cache: CacheDeEtag | null;
  // Per attempt, in ms.
  tempoLimiteMs: number;
  fetch: (request: Request) => Promise<Response>;
  // How the client waits between attempts (tests may count the waits).
  esperar: (ms: number, signal: AbortSignal) => Promise<void>;
};

// What the transport knows of the answer it returned, for the error built from it.
export type Envio = { tentativas: number; chaveDeIdempotencia: string | null; doCache: boolean };
const envios = new WeakMap<Response, Envio>();
export const envioDe = (resposta: Response): Envio | undefined => envios.get(resposta);

const RETRIED_STATUSES = new Set([409, 429, 503]);

export function createTransport(options: TransportOptions): (request: Request) => Promise<Response> {
  return async function send(original: Request): Promise<Response> {
    const headers = new Headers(original.headers);
    const method = original.method.toUpperCase();
    let chave: string | null = null;
    if (method === 'POST') {
      chave = headers.get('idempotency-key') ?? globalThis.crypto.randomUUID();
      headers.set('Idempotency-Key', chave);
    }
    const cached = method === 'GET' && options.cache && !headers.has('if-none-match') ? options.cache.get(original.url) : undefined;
    if (cached) headers.set('If-None-Match', cached.etag);
    const body = method === 'GET' || method === 'HEAD' ? undefined : await original.arrayBuffer();

    for (let attempt = 1; ; attempt++) {
      const signal = anySignal(original.signal, AbortSignal.timeout(options.tempoLimiteMs));
      let response: Response;
      try {
        response = await options.fetch(new Request(original.url, { method, headers, body, signal, redirect: original.redirect }));
      } catch (error) {
        if (original.signal.aborted || attempt > options.tentativas.maximo) {
          throw original.signal.aborted ? error : new ErroDeConexao(error, chave, attempt);
        }
        await options.esperar(backoff(options.tentativas, attempt), original.signal);
        continue;
      }
      const wait = RETRIED_STATUSES.has(response.status) ? retryWait(response, options.tentativas, attempt) : null;
      if (wait === null || attempt > options.tentativas.maximo) {
        return answered(response, original.url, { tentativas: attempt, chaveDeIdempotencia: chave, doCache: false }, options.cache, cached);
      }
      await response.body?.cancel();
      await options.esperar(wait, original.signal);
    }
  };
}

// The answer handed to openapi-fetch: a cached body for a 304 the cache asked for; a 200 with an ETag kept.
async function answered(
  response: Response, url: string, envio: Envio, cache: CacheDeEtag | null, cached: RespostaGuardada | undefined,
): Promise<Response> {
  let result = response;
  if (response.status === 304 && cached && cache) {
    const headers = new Headers(response.headers);
    headers.set('content-type', cached.contentType);
    headers.set('etag', cached.etag);
    result = new Response(cached.body, { status: 200, statusText: 'OK', headers });
    envio.doCache = true;
  } else if (response.status === 200 && cache && response.headers.has('etag')) {
    const text = await response.text();
    cache.set(url, { etag: response.headers.get('etag') ?? '', body: text, contentType: response.headers.get('content-type') ?? 'application/json' });
    const headers = new Headers(response.headers);
    // The body handed on is the decoded text: its original length and encoding no longer apply.
    headers.delete('content-length');
    headers.delete('content-encoding');
    result = new Response(text, { status: 200, statusText: response.statusText, headers });
  }
  envios.set(result, envio);
  return result;
}

// How long to wait before the next attempt after a 409, 429 or 503, or null: do not retry.
function retryWait(response: Response, tentativas: Required<OpcoesDeTentativas>, attempt: number): number | null {
  const retryAfter = parseRetryAfter(response.headers.get('retry-after'));
  if (retryAfter === null) return backoff(tentativas, attempt);
  return retryAfter > tentativas.esperaMaximaMs ? null : retryAfter;
}

// AbortSignal.any arrived in Node 20.3; the package accepts any Node 20.
function anySignal(...signals: AbortSignal[]): AbortSignal {
  if (typeof AbortSignal.any === 'function') return AbortSignal.any(signals);
  const controller = new AbortController();
  for (const signal of signals) {
    if (signal.aborted) {
      controller.abort(signal.reason);
      break;
    }
    signal.addEventListener('abort', () => controller.abort(signal.reason), { once: true, signal: controller.signal });
  }
  return controller.signal;
}

// Retry-After as delay-seconds or an HTTP-date, in ms; null when absent or unreadable.
export function parseRetryAfter(value: string | null): number | null {
  if (!value) return null;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? null : Math.max(0, at - Date.now());
}

// Exponential backoff with jitter: between half and all of initial × 2^(attempt−1), capped.
function backoff(tentativas: Required<OpcoesDeTentativas>, attempt: number): number {
  const ceiling = Math.min(tentativas.esperaMaximaMs, tentativas.esperaInicialMs * 2 ** (attempt - 1));
  return Math.round(ceiling / 2 + Math.random() * (ceiling / 2));
}

// Waits ms, or less if the caller aborts (the attempt that follows then fails with the abort).
export function esperarMs(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
