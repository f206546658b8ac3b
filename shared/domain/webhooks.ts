// Rules of webhook delivery (docs/decisions/0035-delivery-requests-and-retries.md): the retry
// schedule, what counts as success, when an endpoint is disabled, Retry-After, secrets and Standard
// Webhooks signatures. Pure functions; the worker and the operator CLI apply them.
import { createHmac, createSecretKey, randomBytes, type KeyObject } from 'node:crypto';

/** Delays before attempts 2 to 8; a delivery whose eighth attempt fails is failed. */
export const RETRY_DELAYS_SECONDS = [5, 5 * 60, 30 * 60, 2 * 3600, 5 * 3600, 10 * 3600, 10 * 3600] as const;
export const MAX_ATTEMPTS = RETRY_DELAYS_SECONDS.length + 1;
/** An endpoint failing every attempt for this long is disabled (falhas_5_dias). */
export const FAILING_DAYS_BEFORE_DISABLE = 5;
/** After a rotation the previous secret also signs for this long. */
export const PREVIOUS_SECRET_HOURS = 24;
/** Bytes of a receiver's response body kept with the attempt. */
export const RESPONSE_BODY_LIMIT = 4096;
/** A Retry-After beyond this is capped, so one answer cannot park a delivery for months. */
export const RETRY_AFTER_MAX_SECONDS = 7 * 24 * 3600;

export type MotivoDesativacao = 'operador' | 'recebedor_410' | 'falhas_5_dias';

/** What one HTTP attempt produced: a status (any response) or an error (no response). */
export type AttemptOutcome = { status: number | null; error: string | null; retryAfter: string | null };

export type Decision =
  | { status: 'succeeded' }
  | { status: 'failed'; disable: MotivoDesativacao | null }
  | { status: 'pending'; nextAttemptAt: Date };

/**
 * Decides what follows an attempt. runAttempts counts attempts of the current run, this one
 * included. Any 2xx is success; 410 fails the delivery and disables the endpoint; everything else
 * (other statuses, redirects, timeouts, refused addresses) is retried on the schedule, no sooner
 * than a 429/503 Retry-After asks.
 */
export function decide(outcome: AttemptOutcome, runAttempts: number, now: Date): Decision {
  if (outcome.status !== null && outcome.status >= 200 && outcome.status < 300) return { status: 'succeeded' };
  if (outcome.status === 410) return { status: 'failed', disable: 'recebedor_410' };
  const delay = RETRY_DELAYS_SECONDS[runAttempts - 1];
  if (delay === undefined) return { status: 'failed', disable: null };
  let next = new Date(now.getTime() + delay * 1000);
  if (outcome.status === 429 || outcome.status === 503) {
    const asked = parseRetryAfter(outcome.retryAfter, now);
    if (asked && asked > next) next = asked;
  }
  return { status: 'pending', nextAttemptAt: next };
}

/** Retry-After as delay-seconds or an HTTP-date (RFC 9110 §10.2.3); null when absent or invalid. */
export function parseRetryAfter(value: string | null, now: Date): Date | null {
  if (!value) return null;
  const trimmed = value.trim();
  let at: number;
  if (/^\d+$/.test(trimmed)) at = now.getTime() + Number(trimmed) * 1000;
  else {
    at = Date.parse(trimmed);
    if (Number.isNaN(at)) return null;
  }
  return new Date(Math.min(at, now.getTime() + RETRY_AFTER_MAX_SECONDS * 1000));
}

/** The next hour (UTC) boundary: when a delivery over the hourly cap is tried again. */
export function nextHour(now: Date): Date {
  const next = new Date(now);
  next.setUTCMinutes(0, 0, 0);
  next.setUTCHours(next.getUTCHours() + 1);
  return next;
}

const SECRET_PREFIX = 'whsec_';

/** A new endpoint secret: whsec_ + 32 random bytes in base64 (Standard Webhooks). */
export function gerarSegredo(): string {
  return `${SECRET_PREFIX}${randomBytes(32).toString('base64')}`;
}

// Secrets are reused across many deliveries: each one's HMAC key is decoded once. Signing runs on
// node:crypto (the standardwebhooks package hashes in JavaScript, several times slower); receivers,
// and the tests, verify with the package.
const keys = new Map<string, KeyObject>();
function keyOf(secret: string): KeyObject {
  let key = keys.get(secret);
  if (!key) {
    if (keys.size > 10_000) keys.clear();
    key = createSecretKey(Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64'));
    keys.set(secret, key);
  }
  return key;
}

/** The webhook-signature header: one v1 signature per secret, space-separated. */
export function assinar(segredos: readonly string[], id: string, timestamp: Date, body: string): string {
  const signed = `${id}.${Math.floor(timestamp.getTime() / 1000)}.${body}`;
  return segredos.map((s) => `v1,${createHmac('sha256', keyOf(s)).update(signed).digest('base64')}`).join(' ');
}
