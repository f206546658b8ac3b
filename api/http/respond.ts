// Writing responses: JSON bodies and RFC 9457 problem details, with the request id on each.
import type { Response } from 'restify';
import { ApiError, TITULOS, type ItemRecusado } from '#shared/errors.ts';
import { encodeBody } from './compression.ts';
import type { Reply } from '../routes/types.ts';

export type ProblemBody = {
  type: string;
  title: string;
  status: number;
  detail: string;
  codigo: string;
  requisicao_id: string;
  erros?: { campo: string; mensagem: string }[];
  motivo?: string;
  recusas?: ItemRecusado[];
};

/** A stable identifier of the error code: its entry on the service's error page. */
export function problemType(baseUrl: string, codigo: string): string {
  return `${new URL(baseUrl).origin}/docs/erros#${codigo}`;
}

export function problemBody(error: ApiError, requestId: string, baseUrl: string): ProblemBody {
  const body: ProblemBody = {
    type: problemType(baseUrl, error.codigo),
    title: TITULOS[error.codigo],
    status: error.status,
    detail: error.message,
    codigo: error.codigo,
    requisicao_id: requestId,
  };
  if (error.status === 400) body.erros = error.erros ?? [];
  if (error.motivo) body.motivo = error.motivo;
  if (error.recusas) body.recusas = error.recusas;
  return body;
}

export function problemHeaders(error: ApiError): Record<string, string> {
  const headers: Record<string, string> = { ...error.headers };
  if (error.retryAfter !== undefined) headers['Retry-After'] = String(Math.max(0, Math.ceil(error.retryAfter)));
  return headers;
}

// sendRaw: restify's own send without its formatters (the body is already serialized), so
// restify knows the response went out; a body in pieces goes out as sendRaw would send it whole. A
// route's answer is gzipped when it is large and the client takes gzip (compression.ts); a HEAD gets
// the headers, Content-Length included, of that GET.
export async function writeReply(res: Response, reply: Reply, extraHeaders: Record<string, string>, acceptEncoding: string | undefined): Promise<void> {
  const headers: Record<string, string> = { ...extraHeaders, ...reply.headers, Vary: 'Accept-Encoding' };
  const payload = reply.json ?? (reply.body === undefined ? undefined : JSON.stringify(reply.body));
  if (payload === undefined || reply.status === 304 || reply.status === 204) {
    res.sendRaw(reply.status, '', headers);
    return;
  }
  const { pieces, length, encoding } = await encodeBody(payload, acceptEncoding);
  headers['Content-Type'] ??= 'application/json; charset=utf-8';
  if (encoding) headers['Content-Encoding'] = encoding;
  headers['Content-Length'] = String(length);
  if (pieces.length === 1 && pieces[0]) res.sendRaw(reply.status, pieces[0], headers);
  else sendPieces(res, reply.status, pieces, headers);
}

/**
 * What sendRaw does (headers, then the body, then the end), with the body in pieces: corked, they go
 * to the socket in one writev, each piece from where it already is.
 */
function sendPieces(res: Response, status: number, pieces: readonly Buffer[], headers: Record<string, string>): void {
  res.statusCode = status;
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
  res.writeHead(status);
  res.cork();
  for (const piece of pieces) res.write(piece);
  res.end();
}

/** A problem is small and goes as it is. */
function writePlain(res: Response, status: number, payload: string, headers: Record<string, string>): void {
  headers['Content-Length'] = String(Buffer.byteLength(payload));
  res.sendRaw(status, payload, headers);
}

export function writeProblem(
  res: Response,
  error: ApiError,
  requestId: string,
  baseUrl: string,
  extraHeaders: Record<string, string>,
): void {
  writePlain(res, error.status, JSON.stringify(problemBody(error, requestId, baseUrl)), {
    ...extraHeaders,
    ...problemHeaders(error),
    'Content-Type': 'application/problem+json; charset=utf-8',
  });
}
