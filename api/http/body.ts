// Reading a JSON request body under the contract's limits (§4.2 rules 6-7, §8.4): only
// application/json (415), at most 64 KB (413, refused without reading the rest), fully received
// within 5 s of the request start (408), in UTF-8 (400: bytes that are not UTF-8 are refused, never
// decoded with replacement, which would store U+FFFD in place of what the client meant).
import { isUtf8 } from 'node:buffer';
import type { IncomingMessage } from 'node:http';
import { ApiError, dadosInvalidos } from '#shared/errors.ts';

export const MAX_BODY_BYTES = 64 * 1024;
export const BODY_DEADLINE_MS = 5_000;

/** deadlineAt is on the performance.now() clock. */
export type BodyLimits = { maxBytes: number; deadlineAt: number };

export function isJsonContentType(value: string | undefined): boolean {
  if (!value) return false;
  const [type, ...params] = value.split(';').map((p) => p.trim().toLowerCase());
  if (type !== 'application/json') return false;
  const charset = params.find((p) => p.startsWith('charset='));
  return !charset || charset === 'charset=utf-8' || charset === 'charset="utf-8"';
}

const NAO_UTF8 = 'bytes que não são UTF-8 válido (um texto em Latin-1 ou Windows-1252, por exemplo): envie o JSON em UTF-8';

const tooLarge = () =>
  new ApiError(413, 'corpo_grande_demais', `O corpo da requisição passa de ${MAX_BODY_BYTES / 1024} KB.`, {
    headers: { Connection: 'close' },
  });
const timedOut = () =>
  new ApiError(408, 'tempo_esgotado', `O corpo da requisição não chegou inteiro em ${BODY_DEADLINE_MS / 1000} s.`, {
    headers: { Connection: 'close' },
  });

export async function readJsonBody(req: IncomingMessage, limits: BodyLimits): Promise<unknown> {
  if (!isJsonContentType(req.headers['content-type'])) {
    throw new ApiError(415, 'tipo_nao_suportado', 'Envie o corpo como application/json (UTF-8).');
  }
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limits.maxBytes) throw tooLarge();
  const raw = await collect(req, limits);
  if (raw.length === 0) throw dadosInvalidos('O corpo da requisição está vazio.');
  if (!isUtf8(raw)) {
    throw dadosInvalidos('O corpo não está em UTF-8.', [{ campo: 'corpo', mensagem: NAO_UTF8 }]);
  }
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch {
    throw dadosInvalidos('O corpo não é JSON válido.', [{ campo: 'corpo', mensagem: 'JSON malformado' }]);
  }
}

function collect(req: IncomingMessage, limits: BodyLimits): Promise<Buffer> {
  if (req.readableEnded) return Promise.resolve(Buffer.alloc(0));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const remaining = Math.max(0, limits.deadlineAt - performance.now());
    const timer = setTimeout(() => finish(timedOut()), remaining);
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limits.maxBytes) return finish(tooLarge());
      chunks.push(chunk);
    };
    const onEnd = () => finish(null);
    const onError = (error: Error) => finish(error);
    function finish(error: Error | null) {
      clearTimeout(timer);
      req.off('data', onData).off('end', onEnd).off('error', onError);
      if (error) {
        // Stop reading: the response carries Connection: close and the socket goes with it.
        req.pause();
        reject(error);
      } else {
        resolve(Buffer.concat(chunks, size));
      }
    }
    req.on('data', onData).on('end', onEnd).on('error', onError);
  });
}
