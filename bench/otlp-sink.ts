// An OTLP/HTTP sink for bench/telemetry.bench.ts, in a process of its own: the receiving end of a
// collector without its pipeline. It reads every export body to its end, counts it (exports, bytes,
// and spans: each span has one "startTimeUnixNano", its events and links none) and drops it, and
// answers 200 {} as a collector does. GET /stats gives the counts so far. Listens on PORT.
import http from 'node:http';

const SPAN = Buffer.from('"startTimeUnixNano"');
export type SinkStats = { traces: { exports: number; bytes: number; spans: number }; metrics: { exports: number; bytes: number }; other: number };
const stats: SinkStats = { traces: { exports: 0, bytes: 0, spans: 0 }, metrics: { exports: 0, bytes: 0 }, other: 0 };

function occurrences(body: Buffer, needle: Buffer): number {
  let n = 0;
  for (let at = body.indexOf(needle); at >= 0; at = body.indexOf(needle, at + needle.length)) n++;
  return n;
}

const server = http.createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/stats') {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(stats));
    return;
  }
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks);
    if (req.url === '/v1/traces') {
      stats.traces.exports++;
      stats.traces.bytes += body.length;
      stats.traces.spans += occurrences(body, SPAN);
    } else if (req.url === '/v1/metrics') {
      stats.metrics.exports++;
      stats.metrics.bytes += body.length;
    } else {
      stats.other++;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
});
server.listen(Number(process.env.PORT ?? 4318), process.env.HOST ?? '127.0.0.1');
process.on('SIGTERM', () => server.close(() => process.exit(0)));
