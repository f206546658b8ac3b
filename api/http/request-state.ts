// What the service knows about one request while it runs: its id, timing and, once admitted,
// the caller. The request log row and the log line are written from it when the response closes.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Span } from '#shared/telemetry/spans.ts';
import type { Billing, Charge } from '../admission/limits.ts';
import type { Caller } from '../admission/caller.ts';

export type RequestState = {
  requestId: string;
  /** performance.now() at arrival: durations and the body deadline are measured from it. */
  startedAt: number;
  createdAt: Date;
  route: string | null;
  /** The route's path in the table (`/pedidos-producao/{id}`), once routed. */
  routePath: string | null;
  caller: Caller | null;
  codigo: string | null;
  cost: number;
  /** Headers every response of this request carries: X-Request-Id, then the rate-limit state. */
  headers: Record<string, string>;
  /** The key whose concurrency slot admission took, released when the response closes. */
  slotKey: string | null;
  /** What admission charged, and how the request turned out to cost less (settled later). */
  charge: Charge | null;
  billing: Billing | null;
  /** The admission rule that refused the request (the limit, or the access), when one did. */
  refusedBy: string | null;
  /** The request's server span, when tracing is on (api/http/tracing.ts). */
  span: Span | undefined;
};

const states = new WeakMap<IncomingMessage, RequestState>();

export function startRequest(req: IncomingMessage, createdAt: Date): RequestState {
  // Time-ordered (UUIDv7, from the request's own time): the request log's rows land at the right
  // edge of its day's indexes.
  const requestId = uuidv7(createdAt.getTime());
  const state: RequestState = {
    requestId,
    startedAt: performance.now(),
    createdAt,
    route: null,
    routePath: null,
    caller: null,
    codigo: null,
    cost: 0,
    headers: { 'X-Request-Id': requestId },
    slotKey: null,
    charge: null,
    billing: null,
    refusedBy: null,
    span: undefined,
  };
  states.set(req, state);
  return state;
}

export function requestState(req: IncomingMessage): RequestState {
  const state = states.get(req);
  if (!state) throw new Error('request state missing: the pre handler did not run');
  return state;
}

/**
 * A UUIDv7 (RFC 9562) of a moment: its milliseconds in the first 48 bits, then the version, and the
 * random bits and variant of a randomUUID (v4) after its own version digit: much cheaper than the
 * uuid package's v7, which draws its random bytes through WebCrypto each time. Ids of one
 * millisecond are not ordered among themselves; nothing relies on that.
 */
function uuidv7(msecs: number): string {
  const time = msecs.toString(16).padStart(12, '0');
  return `${time.slice(0, 8)}-${time.slice(8, 12)}-7${randomUUID().slice(15)}`;
}
