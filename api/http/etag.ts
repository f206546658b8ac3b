// Conditional requests (docs/decisions/0002-head-etags-and-compression.md): a strong ETag per
// representation, and If-None-Match (a list of tags or *, compared weakly) answered with a bodiless
// 304 that costs nothing in the month.
import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { Reply } from '../routes/types.ts';

export const IF_NONE_MATCH_MAX = 100;

/** Headers of a route that honours If-None-Match (over 100 characters is a 400). */
export const conditionalHeaders = z.object({
  'if-none-match': z.string().max(IF_NONE_MATCH_MAX).optional().describe('Um ETag recebido antes (até 100 caracteres).'),
});

/**
 * A strong tag from the row's version and everything else that shapes the body (e.g. whether cost
 * fields are shown to this caller), so two different bodies never share a tag. It begins with the
 * version, so admission can tell a 304 before it charges (repetition.ts): "<version>-<digest>".
 */
export function etagFor(id: string, rowVersion: number, variant = ''): string {
  const digest = createHash('sha256').update(`${id}:${rowVersion}:${variant}`).digest('base64url').slice(0, 22);
  return `"${rowVersion}-${digest}"`;
}

/** The tag of a page of a list (its JSON text's bytes): its content's, so any change of what the page shows changes it. */
export function etagForPage(json: Buffer): string {
  return listTag(json);
}

/**
 * The tag of a page whose every item is a record whose text changes only with its version: the
 * items by id and version, and the rest of the page (its cursor). Any change of what the page shows
 * changes it, as the bytes' tag would, without a pass over the bytes (a catalog page is hundreds
 * of KB).
 */
export function etagForVersions(versions: string, rest: string): string {
  return listTag(`${versions}|${rest}`);
}

const listTag = (content: string | Buffer) => `"L-${createHash('sha256').update(content).digest('base64url').slice(0, 22)}"`;

const VERSIONED = /^"(\d{1,15})-[\w-]+"$/;

/**
 * The row versions of record `id` whose tags an If-None-Match names ([] for *), or null when it
 * names none. A tag counts only whole, as this service made it for one of the representations
 * (`variants`) of that record: a made-up digest names no version.
 */
export function versionsIn(header: string, id: string, variants: readonly string[]): number[] | null {
  if (header.trim() === '*') return [];
  const versions = header.split(',').flatMap((tag) => {
    const opaqueTag = opaque(tag);
    const match = VERSIONED.exec(opaqueTag);
    if (!match) return [];
    const version = Number(match[1]);
    return variants.some((variant) => etagFor(id, version, variant) === opaqueTag) ? [version] : [];
  });
  return versions.length ? versions : null;
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
