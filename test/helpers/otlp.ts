// A real OTLP/HTTP receiver (JSON encoding, as the service's exporters send it) on loopback: it keeps
// every export's raw body (to search for what must never be exported) and reads spans and metric
// points out of them with the resource's service.name.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

type AnyValue = { stringValue?: string; intValue?: string | number; doubleValue?: number; boolValue?: boolean };
type KeyValue = { key: string; value: AnyValue };

export type ExportedSpan = {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  attributes: Record<string, string | number | boolean>;
  links: { traceId: string; spanId: string }[];
  /** The span's events, by name. */
  events: string[];
};

export type MetricPoint = { service: string; name: string; attributes: Record<string, string | number | boolean>; value: number; count?: number };

export type OtlpReceiver = {
  endpoint: string;
  /** Every export body received, as sent. */
  raw(): string[];
  spans(): ExportedSpan[];
  points(): MetricPoint[];
  close(): Promise<void>;
};

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const bodies: { path: string; text: string }[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      bodies.push({ path: req.url ?? '', text: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const of = (path: string) => bodies.filter((b) => b.path === path).map((b) => JSON.parse(b.text));
  return {
    endpoint: `http://127.0.0.1:${port}`,
    raw: () => bodies.map((b) => b.text),
    spans: () => of('/v1/traces').flatMap(spansOf),
    points: () => of('/v1/metrics').flatMap(pointsOf),
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

const valueOf = (v: AnyValue): string | number | boolean =>
  v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : undefined) ?? v.doubleValue ?? v.boolValue ?? '';

const attributesOf = (list: KeyValue[] | undefined) => Object.fromEntries((list ?? []).map((a) => [a.key, valueOf(a.value)]));

function serviceOf(resource: { attributes?: KeyValue[] } | undefined): string {
  return String(attributesOf(resource?.attributes)['service.name'] ?? '');
}

function spansOf(body: any): ExportedSpan[] {
  return (body.resourceSpans ?? []).flatMap((rs: any) => (rs.scopeSpans ?? []).flatMap((ss: any) => (ss.spans ?? []).map((s: any) => ({
    service: serviceOf(rs.resource),
    traceId: s.traceId,
    spanId: s.spanId,
    parentSpanId: s.parentSpanId ?? '',
    name: s.name,
    kind: s.kind,
    attributes: attributesOf(s.attributes),
    links: (s.links ?? []).map((l: any) => ({ traceId: l.traceId, spanId: l.spanId })),
    events: (s.events ?? []).map((e: any) => e.name),
  }))));
}

function pointsOf(body: any): MetricPoint[] {
  return (body.resourceMetrics ?? []).flatMap((rm: any) => (rm.scopeMetrics ?? []).flatMap((sm: any) => (sm.metrics ?? []).flatMap((m: any) => {
    const data = m.sum ?? m.gauge ?? m.histogram;
    return (data?.dataPoints ?? []).map((p: any) => ({
      service: serviceOf(rm.resource),
      name: m.name,
      attributes: attributesOf(p.attributes),
      value: p.asDouble ?? (p.asInt !== undefined ? Number(p.asInt) : p.sum ?? 0),
      ...(p.count !== undefined ? { count: Number(p.count) } : {}),
    }));
  })));
}
