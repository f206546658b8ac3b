// Content coding of answers (RFC 9110 §8.4, §12.5.3): a JSON body of GZIP_MIN_BYTES or more goes
// gzipped to a client whose Accept-Encoding takes gzip; a smaller one, or to any other client, as it
// is. Every answer of a route says Vary: Accept-Encoding, whatever its size, so a cache keeps the two
// codings apart. The ETag names the content (the JSON text), the same under either coding
// (docs/decisions/0002-head-etags-and-compression.md).
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import type { JsonBody } from '../routes/types.ts';

/** Below this, gzip saves less than it costs: the body fits in a packet or two either way. */
export const GZIP_MIN_BYTES = 1024;

/**
 * Level 1 with zlib's largest hash table (memLevel 9): nearly the bytes of the default level 6 for a
 * fraction of its CPU, and memLevel 9 less CPU than the default 8 for the same bytes, at the price of
 * a larger table while it runs (BENCHMARKS.md, "Stock movements and the catalog").
 */
export const GZIP_OPTIONS = { level: 1, memLevel: 9 } as const;

const gzipAsync = promisify(gzip);

/**
 * Whether an Accept-Encoding takes gzip: named (or x-gzip), or covered by *, with a q above 0.
 * An explicit gzip;q=0 refuses it even when * is allowed.
 */
export function acceptsGzip(header: string | undefined): boolean {
  if (!header) return false;
  let gzipQ: number | undefined;
  let anyQ: number | undefined;
  for (const part of header.split(',')) {
    const [name = '', ...params] = part.split(';').map((s) => s.trim().toLowerCase());
    const qParam = params.find((p) => p.startsWith('q='));
    const q = qParam === undefined ? 1 : Number(qParam.slice(2));
    if (!Number.isFinite(q)) continue;
    if (name === 'gzip' || name === 'x-gzip') gzipQ = Math.max(gzipQ ?? 0, q);
    else if (name === '*') anyQ = q;
  }
  return (gzipQ ?? anyQ ?? 0) > 0;
}

/** A serialized body's UTF-8 bytes as pieces: each string encoded alone (small ones share Node's pool). */
export function jsonPieces(json: JsonBody): Buffer[] {
  const pieces = typeof json === 'string' || Buffer.isBuffer(json) ? [json] : json;
  return pieces.map((piece) => (typeof piece === 'string' ? Buffer.from(piece, 'utf8') : piece));
}

/** Pieces as one buffer (a single piece as it is). */
const joined = (pieces: readonly Buffer[]): Buffer => (pieces.length === 1 && pieces[0] ? pieces[0] : Buffer.concat(pieces));

/** A serialized body's UTF-8 bytes in one buffer. */
export function jsonBytes(json: JsonBody): Buffer {
  return joined(jsonPieces(json));
}

/**
 * The body as it goes on the wire, in pieces written one after another, its length, and its
 * Content-Encoding when it is coded. A body in pieces stays in pieces unless it is gzipped: joining
 * a catalog page would copy its hundreds of KB into memory the process must first map.
 */
export async function encodeBody(
  json: JsonBody,
  acceptEncoding: string | undefined,
): Promise<{ pieces: Buffer[]; length: number; encoding?: 'gzip' }> {
  const pieces = jsonPieces(json);
  const length = pieces.reduce((sum, piece) => sum + piece.length, 0);
  if (length < GZIP_MIN_BYTES || !acceptsGzip(acceptEncoding)) return { pieces, length };
  // zlib runs on libuv's thread pool: the event loop serves other requests meanwhile.
  const gzipped = await gzipAsync(joined(pieces), GZIP_OPTIONS);
  return { pieces: [gzipped], length: gzipped.length, encoding: 'gzip' };
}
