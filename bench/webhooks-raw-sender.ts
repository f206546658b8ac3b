// The baseline of the webhooks benchmark (bench/webhooks.bench.ts): what one Node process does when
// all it has to do is POST signed deliveries, with no database work. It reads from stdin the events
// the bench pre-read from the database, and for each one, as worker/webhooks/attempt.ts does at the
// moment of the attempt, builds the §6.1 envelope, signs it per Standard Webhooks with the endpoint's
// secret and POSTs it over keep-alive connections, `concurrency` at a time (the worker's limit per
// endpoint, or in all for events to several endpoints, each with its own `url`). Prints {"sent",
// "ok", "failed"} as JSON when every event is sent.
import http from 'node:http';
import { text } from 'node:stream/consumers';
import { montarEnvelope } from '#shared/domain/envelope.ts';
import { assinar } from '#shared/domain/webhooks.ts';

export type RawEvent = { id: string; tipo: string; criado_em: string; conta_id: string; dados: Record<string, unknown>; segredo: string; url?: string };
export type RawSenderInput = { url: string; baseUrl: string; concurrency: number; client: 'http' | 'fetch'; events: RawEvent[] };
export type RawSenderOutput = { sent: number; ok: number; failed: number };

const input = JSON.parse(await text(process.stdin)) as RawSenderInput;
const targets = new Map<string, URL>();
const targetOf = (url: string) => targets.get(url) ?? targets.set(url, new URL(url)).get(url) as URL;
const agent = new http.Agent({ keepAlive: true });

/** One signed POST, as the worker sends it; true on a 2xx. */
function post(event: RawEvent): Promise<boolean> {
  const target = targetOf(event.url ?? input.url);
  const body = JSON.stringify(montarEnvelope(input.baseUrl, event));
  const timestamp = new Date();
  const headers = {
    'content-type': 'application/json',
    'user-agent': 'printfarm-webhooks/1',
    'webhook-id': event.id,
    'webhook-timestamp': String(Math.floor(timestamp.getTime() / 1000)),
    'webhook-signature': assinar([event.segredo], event.id, timestamp, body),
  };
  if (input.client === 'fetch') {
    return fetch(target, { method: 'POST', headers, body }).then(async (res) => {
      await res.arrayBuffer();
      return res.ok;
    }, () => false);
  }
  return new Promise((resolve) => {
    const req = http.request(target, { method: 'POST', agent, headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) } }, (res) => {
      res.resume();
      res.on('end', () => resolve((res.statusCode ?? 0) >= 200 && (res.statusCode ?? 0) < 300));
      res.on('error', () => resolve(false));
    });
    req.on('error', () => resolve(false));
    req.end(body);
  });
}

let next = 0;
let ok = 0;
let failed = 0;
await Promise.all(Array.from({ length: input.concurrency }, async () => {
  while (next < input.events.length) {
    const event = input.events[next++] as RawEvent;
    if (await post(event)) ok++;
    else failed++;
  }
}));
agent.destroy();
process.stdout.write(`${JSON.stringify({ sent: ok + failed, ok, failed } satisfies RawSenderOutput)}\n`);
