// What the service knows about one request while it runs: its id, timing and, once admitted,
// the caller. The request log row and the log line are written from it when the response closes.
import { v7 as uuidv7 } from 'uuid';
import type { IncomingMessage } from 'node:http';
import type { Billing, Charge } from './limits.ts';
import type { Caller } from './caller.ts';

export type RequestState = {
  requestId: string;
  /** performance.now() at arrival: durations and the body deadline are measured from it. */
  startedAt: number;
  createdAt: Date;
  route: string | null;
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
};

const states = new WeakMap<IncomingMessage, RequestState>();

export function startRequest(req: IncomingMessage, createdAt: Date): RequestState {
  // Time-ordered (UUIDv7, from the request's own time): the request log's rows land at the right
  // edge of its day's indexes.
  const requestId = uuidv7({ msecs: createdAt.getTime() });
  const state: RequestState = {
    requestId,
    startedAt: performance.now(),
    createdAt,
    route: null,
    caller: null,
    codigo: null,
    cost: 0,
    headers: { 'X-Request-Id': requestId },
    slotKey: null,
    charge: null,
    billing: null,
  };
  states.set(req, state);
  return state;
}

export function requestState(req: IncomingMessage): RequestState {
  const state = states.get(req);
  if (!state) throw new Error('request state missing: the pre handler did not run');
  return state;
}
