// HTTP over a bare socket, for what fetch cannot do: send part of a body and stall, or stream a
// body without ever finishing it. Resolves when the server has answered (and closed, or sent the
// whole Content-Length).
import net from 'node:net';

export type RawResponse = { status: number; headers: Record<string, string>; body: string; elapsedMs: number };

export function rawRequest(
  baseUrl: string,
  head: { method: string; path: string; headers: Record<string, string> },
  chunks: (string | Buffer)[],
  timeoutMs = 15_000,
): Promise<RawResponse> {
  const url = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const socket = net.connect(Number(url.port), url.hostname);
    let received = Buffer.alloc(0);
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer within ${timeoutMs} ms`));
    }, timeoutMs);
    const finish = () => {
      clearTimeout(timer);
      socket.destroy();
      const text = received.toString('utf8');
      const [headText = '', ...rest] = text.split('\r\n\r\n');
      const [statusLine = '', ...headerLines] = headText.split('\r\n');
      const headers = Object.fromEntries(headerLines.map((l) => {
        const i = l.indexOf(':');
        return [l.slice(0, i).trim().toLowerCase(), l.slice(i + 1).trim()];
      }));
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body: rest.join('\r\n\r\n'), elapsedMs: performance.now() - started });
    };
    socket.on('data', (data: Buffer) => {
      received = Buffer.concat([received, data]);
      const text = received.toString('utf8');
      const end = text.indexOf('\r\n\r\n');
      const length = /\r\ncontent-length:\s*(\d+)/i.exec(text.slice(0, end));
      if (end >= 0 && length && Buffer.byteLength(text.slice(end + 4)) >= Number(length[1])) finish();
    });
    socket.on('end', finish);
    socket.on('error', (error) => {
      // The server may reset a connection whose body it refused; what it answered still counts.
      if (received.length > 0) finish();
      else {
        clearTimeout(timer);
        reject(error);
      }
    });
    socket.on('connect', () => {
      const lines = [`${head.method} ${url.pathname}${head.path} HTTP/1.1`, `Host: ${url.host}`,
        ...Object.entries(head.headers).map(([k, v]) => `${k}: ${v}`)];
      socket.write(`${lines.join('\r\n')}\r\n\r\n`);
      for (const chunk of chunks) socket.write(chunk);
    });
  });
}
