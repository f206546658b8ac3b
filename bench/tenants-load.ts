// What the tenants benchmark sends (bench/tenants.bench.ts): the shape of a request, the
// neighbour's requests, autocannon runs and their figures. Shared by the bench's process, which
// drives the well-behaved accounts, and the neighbour's child process (bench/tenants-neighbour.ts):
// each load generator has an event loop of its own, so the neighbour's flood does not delay the clock
// that times the well-behaved requests.
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import autocannon from 'autocannon';

export type Req = { method: 'GET' | 'POST'; path: string; headers: Record<string, string>; body?: string };

/** The neighbour's accounts: one on Bancada (two keys), one whose plan lets its input reach validation. */
export type Neighbour = {
  ceilingTokens: string[];
  ceilingProduto: string;
  ceilingVariacao: string;
  hostileToken: string;
  hostileVariacao: string;
};

/** Past every ceiling of the Bancada plan: lists of 100 (3 units), reads and writes, without pause. */
export function ceilingRequests(nb: Neighbour): () => Req {
  let b = 0;
  return () => {
    const n = b++;
    const json = { authorization: `Bearer ${nb.ceilingTokens[n % nb.ceilingTokens.length]}`, 'content-type': 'application/json' };
    const requests: Req[] = [
      { method: 'GET', path: '/v1/produtos?limite=100', headers: json },
      { method: 'GET', path: `/v1/produtos/${nb.ceilingProduto}`, headers: json },
      { method: 'POST', path: '/v1/estoque/movimentos', headers: { ...json, 'idempotency-key': randomUUID() },
        body: JSON.stringify({ tipo: 'entrada', variacao_id: nb.ceilingVariacao, quantidade: 1, motivo: 'correcao' }) },
    ];
    return requests[n % requests.length] as Req;
  };
}

const forged = Buffer.from(JSON.stringify(['0000-01-01 00:00:00+00', randomUUID(), 'x'])).toString('base64url');
/** Whatever input a careless or hostile client sends. */
export function hostileRequests(nb: Neighbour): () => Req {
  let h = 0;
  return () => {
    const n = h++;
    const json = { authorization: `Bearer ${nb.hostileToken}`, 'content-type': 'application/json' };
    const variacao = nb.hostileVariacao;
    const hostile: Req[] = [
      { method: 'POST', path: '/v1/estoque/movimentos', headers: { ...json, 'idempotency-key': randomUUID() },
        body: JSON.stringify({ tipo: 'entrada', variacao_id: variacao, quantidade: 1, motivo: 'correcao', observacao: 'a\u0000b' }) },
      { method: 'POST', path: '/v1/estoque/movimentos', headers: { ...json, 'idempotency-key': randomUUID() }, body: '{"tipo": "entrada", ' },
      { method: 'POST', path: '/v1/estoque/movimentos', headers: { ...json, 'idempotency-key': randomUUID() }, body: `{"observacao":"${'x'.repeat(70_000)}"}` },
      { method: 'POST', path: '/v1/estoque/movimentos', headers: { ...json, 'idempotency-key': randomUUID() },
        body: JSON.stringify({ tipo: 'saida', variacao_id: variacao, quantidade: 1e12, motivo: 'correcao' }) },
      { method: 'GET', path: `/v1/estoque?cursor=${forged}`, headers: json },
      { method: 'GET', path: '/v1/cotacoes?criado_desde=0000-01-01T00:00:00Z', headers: json },
      { method: 'POST', path: '/v1/cotacoes', headers: { ...json, 'idempotency-key': randomUUID() },
        body: JSON.stringify({ cliente_nome: 'x', itens: [{ tipo: 'avulso', nome: 'x', quantidade: 99999, preco_unitario_centavos: 2_000_000_000 }] }) },
      { method: 'GET', path: '/v1/pedidos-producao/%00', headers: json },
      { method: 'GET', path: `/v1/produtos?sku=a%00b&ordem=nenhuma`, headers: json },
      { method: 'GET', path: '/v1/conta', headers: { authorization: `Bearer chv_${randomUUID()}` } },
    ];
    return hostile[n % hostile.length] as Req;
  };
}

/** Request lines Node cannot parse, a few a second, on sockets of their own. */
export function malformedHttp(port: number): () => void {
  const timer = setInterval(() => {
    const socket = net.connect(port, '127.0.0.1', () => socket.end('NOT HTTP AT ALL\r\n\r\n'));
    socket.on('error', () => undefined);
    socket.on('data', () => undefined);
  }, 50);
  return () => clearInterval(timer);
}

export const cpuText = (cpu: Record<string, number>) =>
  Object.entries(cpu).sort((x, y) => y[1] - x[1]).map(([label, s]) => `${label.replace(/ \(.*\)$/, '')} ${s.toFixed(1)}`).join(', ');

export type Stats = {
  requests: number; p50: number; p99: number; s2xx: number; s4xx: number; s5xx: number; errors: number;
  /** Answers by status, most frequent first. */
  statuses: string;
};
export const statsOf = (r: autocannon.Result): Stats => ({
  requests: r.requests.total, p50: r.latency.p50, p99: r.latency.p99,
  s2xx: r['2xx'], s4xx: r['4xx'], s5xx: r['5xx'], errors: r.errors + r.timeouts,
  statuses: Object.entries((r as { statusCodeStats?: Record<string, { count: number }> }).statusCodeStats ?? {})
    .sort((x, y) => y[1].count - x[1].count).map(([status, { count }]) => `${status}: ${count}`).join(', '),
});

/** autocannon over `seconds`, each request made by `next` (at `overallRate` per second in all, or as fast as answered). */
export function cannon(url: string, options: { connections: number; seconds: number; overallRate?: number; next: () => Req }): Promise<autocannon.Result> {
  return autocannon({
    url, connections: options.connections, duration: options.seconds, ...(options.overallRate ? { overallRate: options.overallRate } : {}),
    requests: [{ setupRequest: (req: autocannon.Request) => ({ ...req, ...options.next() }) }],
  });
}
