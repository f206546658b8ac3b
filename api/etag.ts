// Conditional requests (DESIGN §7): a strong ETag per representation, and If-None-Match (a list of
// tags or *, compared weakly) answered with a bodiless 304 that costs nothing in the month.
import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { Reply } from './routes/types.ts';

export const IF_NONE_MATCH_MAX = 100;

/** Headers of a route that honours If-None-Match (over 100 characters is a 400). */
export const conditionalHeaders = z.object({
  'if-none-match': z.string().max(IF_NONE_MATCH_MAX).optional().describe('An ETag received earlier (at most 100 characters).'),
});

/**
 * A strong tag from the row's version and everything else that shapes the body (e.g. whether cost
 * fields are shown to this caller), so two different bodies never share a tag.
 */
export function etagFor(id: string, rowVersion: number, variant = ''): string {
  const digest = createHash('sha256').update(`${id}:${rowVersion}:${variant}`).digest('base64url').slice(0, 22);
  return `"${digest}"`;
}

const opaque = (tag: string) => tag.trim().replace(/^W\//, '');

export function ifNoneMatchMatches(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  if (header.trim() === '*') return true;
  return header.split(',').some((tag) => opaque(tag) === opaque(etag));
}

/** 304 with the tag when the client's copy is current, otherwise 200 with body and tag. */
export function conditionalReply(ifNoneMatch: string | undefined, etag: string, body: () => unknown): Reply {
  if (ifNoneMatchMatches(ifNoneMatch, etag)) return { status: 304, headers: { ETag: etag }, billing: 'not_modified' };
  return { status: 200, body: body(), headers: { ETag: etag } };
}
