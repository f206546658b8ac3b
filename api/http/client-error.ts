// Requests Node cannot parse (a bad request line, headers over the limit, headers too slow) never
// reach restify, and Node would answer them itself with a bare 400 or 431 in plain text. Where the
// socket can still be written they get a problem+json like every other refusal, with a
// requisicao_id that the log line carries too.
import { randomUUID } from 'node:crypto';
import { STATUS_CODES, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { ApiError } from '#shared/errors.ts';
import type { Logger } from '#shared/log.ts';
import { problemBody } from './respond.ts';

function refusal(code: string | undefined): ApiError {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return new ApiError(431, 'dados_invalidos', 'Os cabeçalhos da requisição passam do tamanho aceito.');
    case 'ERR_HTTP_REQUEST_TIMEOUT':
    case 'HPE_HEADERS_TIMEOUT':
      return new ApiError(408, 'tempo_esgotado', 'A requisição não chegou inteira a tempo.');
    default:
      return new ApiError(400, 'dados_invalidos', 'A requisição não é HTTP válido (linha de requisição ou cabeçalhos malformados).');
  }
}

export function answerClientErrors(server: Server, log: Logger, baseUrl: string): void {
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    if (error.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const requestId = randomUUID();
    const problem = refusal(error.code);
    const body = JSON.stringify(problemBody(problem, requestId, baseUrl));
    socket.end([
      `HTTP/1.1 ${problem.status} ${STATUS_CODES[problem.status] ?? ''}`,
      'Content-Type: application/problem+json; charset=utf-8',
      `Content-Length: ${Buffer.byteLength(body)}`,
      `X-Request-Id: ${requestId}`,
      'Connection: close',
      '',
      body,
    ].join('\r\n'));
    log.info({ requisicao_id: requestId, status: problem.status, codigo: problem.codigo, parser: error.code ?? null }, 'malformed request');
  });
}
