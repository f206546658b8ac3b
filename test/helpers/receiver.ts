// A real webhook receiver on loopback that verifies every request's signature with the
// standardwebhooks package, with each path's secrets; plus fixtures webhook tests share (endpoints
// wired to the receiver, moving windows and schedules instead of waiting).
import http from 'node:http';
import { Webhook } from 'standardwebhooks';
import { z } from 'zod';
import { freePort } from '#shared/db/embedded.ts';
import { sql, type Db } from '#shared/db/pool.ts';
import { criarEndpoint, type Endpoint } from '#shared/db/webhooks.ts';

export type Received = {
  path: string;
  id: string;
  timestamp: string;
  signature: string;
  body: string;
  json: any;
  /** Every secret registered for the path verified the request. */
  verified: boolean;
  at: number;
  /** All the request's headers, as Node received them. */
  headers: http.IncomingHttpHeaders;
};

export type Reply = {
  status?: number; headers?: Record<string, string>; body?: string; delayMs?: number;
  /** Sends the status and `body`, then keeps the body open until the client hangs up. */
  bodyNeverEnds?: boolean;
};
export type Behaviour = (request: Received) => Reply | Promise<Reply>;

export type Receiver = {
  port: number;
  url(path: string): string;
  setSecrets(path: string, ...secrets: string[]): void;
  respond(behaviour: Behaviour): void;
  received: Received[];
  /** Requests that carried a bad signature (tests assert there are none). */
  unverified(): Received[];
  waitFor(count: number, filter?: (r: Received) => boolean, timeoutMs?: number): Promise<Received[]>;
  close(): Promise<void>;
};

export async function startReceiver(): Promise<Receiver> {
  const secrets = new Map<string, string[]>();
  const received: Received[] = [];
  const waiters = new Set<() => void>();
  let behaviour: Behaviour = () => ({ status: 200, body: 'ok' });
  const sockets = new Set<import('node:net').Socket>();

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const path = (req.url ?? '/').split('?')[0] ?? '/';
      const headers = {
        'webhook-id': String(req.headers['webhook-id'] ?? ''),
        'webhook-timestamp': String(req.headers['webhook-timestamp'] ?? ''),
        'webhook-signature': String(req.headers['webhook-signature'] ?? ''),
      };
      const keys = secrets.get(path) ?? [];
      const verified = keys.length > 0 && keys.every((k) => {
        try {
          new Webhook(k).verify(body, headers);
          return true;
        } catch {
          return false;
        }
      });
      let json: unknown = null;
      try {
        json = JSON.parse(body);
      } catch {
        json = null;
      }
      const request: Received = {
        path, id: headers['webhook-id'], timestamp: headers['webhook-timestamp'], signature: headers['webhook-signature'],
        body, json, verified, at: performance.now(), headers: req.headers,
      };
      received.push(request);
      for (const w of [...waiters]) w();
      const reply = verified ? await behaviour(request) : { status: 401, body: 'bad signature' };
      if (reply.delayMs) await new Promise((r) => setTimeout(r, reply.delayMs));
      if (res.destroyed) return;
      res.writeHead(reply.status ?? 200, reply.headers ?? { 'content-type': 'text/plain' });
      if (reply.bodyNeverEnds) res.write(reply.body ?? '');
      else res.end(reply.body ?? '');
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  const port = await freePort();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));

  return {
    port,
    url: (path) => `http://127.0.0.1:${port}${path}`,
    setSecrets: (path, ...keys) => void secrets.set(path, keys),
    respond: (b) => void (behaviour = b),
    received,
    unverified: () => received.filter((r) => !r.verified),
    async waitFor(count, filter = () => true, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const matching = received.filter(filter);
        if (matching.length >= count) return matching;
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`receiver got ${matching.length} of ${count} expected requests in ${timeoutMs} ms`);
        await new Promise<void>((resolve) => {
          const done = () => (clearTimeout(timer), waiters.delete(done), resolve());
          const timer = setTimeout(done, Math.min(left, 200));
          waiters.add(done);
        });
      }
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** An endpoint created by `usuarioId`, pointing at `path` of the receiver, whose secret the receiver verifies. */
export async function addEndpoint(
  db: Db,
  receiver: Receiver,
  input: { contaId: string; usuarioId: string; path: string; tipos?: string[] },
): Promise<Endpoint & { segredo: string }> {
  const endpoint = await criarEndpoint(db, {
    contaId: input.contaId, usuarioId: input.usuarioId, url: receiver.url(input.path), tipos: input.tipos ?? [], descricao: null,
  });
  receiver.setSecrets(input.path, endpoint.segredo);
  return endpoint;
}

export async function emit(db: Db, contaId: string, tipo: string, dados: Record<string, unknown>, endpointId: string | null = null): Promise<string> {
  return db.oneFirst(sql.type(z.object({ id: z.string() }))`
    SELECT emit_event(${contaId}, ${tipo}, ${sql.jsonb(dados as never)}, ${endpointId}::uuid) AS id`);
}

/** Ends every open grouping window now (instead of waiting 60 s) and wakes the relay. */
export async function closeGroupingWindows(db: Db): Promise<number> {
  const moved = await db.query(sql.typeAlias('void')`
    UPDATE outbox SET available_at = now() WHERE relayed_at IS NULL AND available_at > now()`);
  await db.query(sql.typeAlias('void')`SELECT FROM pg_notify('outbox', '')`);
  return moved.rowCount;
}

/** Makes deliveries waiting for a later attempt due now (instead of waiting) and wakes the workers. */
export async function makeDue(db: Db, filter: { deliveryId?: string } = {}): Promise<number> {
  const moved = await db.query(sql.typeAlias('void')`
    UPDATE deliveries SET next_attempt_at = now()
     WHERE status = 'pending' AND lease_id IS NULL AND next_attempt_at > now()
       AND (${filter.deliveryId ?? null}::uuid IS NULL OR id = ${filter.deliveryId ?? null}::uuid)`);
  await db.query(sql.typeAlias('void')`SELECT FROM pg_notify('webhook_delivery_due', '')`);
  return moved.rowCount;
}

/** Polls `read` until `done` holds (or the time is up) and returns the last value read. */
export async function eventually<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((r) => setTimeout(r, 50));
  }
}
