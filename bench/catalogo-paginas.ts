// The catalog page of bench/estoque.bench.ts (issue 20, item 5): GET /v1/produtos?limite=100 from
// the stored documents against the same pipeline building every product per request
// (bench/produtos-por-requisicao.ts), alternately, in the same run; then with gzip, and alone; the
// page query one at a time, and what gzip costs a page in-process.
import os from 'node:os';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import { GZIP_OPTIONS } from '../api/http/compression.ts';
import { sql, type Pool } from '#shared/db/pool.ts';
import { DocumentCache, paginaDeDocumentos } from '../api/routes/document-cache.ts';
import { consultaDaPagina } from '#shared/db/produtos.ts';
import { listarProdutos } from '../test/helpers/produtos-por-requisicao.ts';
import type { load, LoadResult } from './lib.ts';

const PAGINA = '/v1/produtos?limite=100';
/** The figure before issue 20, item 5 (BENCHMARKS.md of 2026-11-25): the goal is 5 times it. */
const ANTES_PAGINAS_POR_SEGUNDO = 93;

type Measure = (name: string, options: Parameters<typeof load>[0]) => Promise<LoadResult>;
type Setup = (req: Record<string, any>) => Record<string, any>;

const p50 = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
/** The CPU per request of the server started from `script` (lib.ts labels it "server (<script>)"). */
const cpuOf = (r: LoadResult, script: string) => r.cpu[`server (${script})`] ?? 0;
const API = 'api/main.ts';
const ANTES_SCRIPT = 'bench/produtos-por-requisicao.ts';

export async function medirPaginas(options: {
  measure: Measure;
  apiUrl: string;
  /** The same API holding no documents (CATALOGO_CACHE_MB=0): every page reads all of its own. */
  frioUrl: string;
  antesUrl: string;
  seconds: number;
  pairs: number;
  comCatalogo: Setup;
  comGzip: Setup;
  pool: Pool;
  contas: string[];
}): Promise<{ rows: [string, LoadResult][]; markdown: string }> {
  const { measure, seconds } = options;
  const ANTES = `GET ${PAGINA}, per-request builder (before), 10 connections`;
  const DOCS = `GET ${PAGINA} (100 products × 3 variations, 2 parts, 3 channels × 3 tiers), stored documents, 10 connections`;
  const pairs: { antes: LoadResult; docs: LoadResult; ratio: number }[] = [];
  for (let i = 0; i < options.pairs; i++) {
    const antes = await measure(ANTES, { url: `${options.antesUrl}${PAGINA}`, connections: 10, seconds, setupRequest: options.comCatalogo });
    const docs = await measure(DOCS, { url: `${options.apiUrl}${PAGINA}`, connections: 10, seconds, setupRequest: options.comCatalogo });
    pairs.push({ antes, docs, ratio: docs.rps / antes.rps });
  }
  const { antes, docs, ratio } = [...pairs].sort((a, b) => a.ratio - b.ratio)[Math.floor(options.pairs / 2)]!;
  const GZ = `GET ${PAGINA}, stored documents, Accept-Encoding: gzip, 10 connections`;
  const gz = await measure(GZ, { url: `${options.apiUrl}${PAGINA}`, connections: 10, seconds, setupRequest: options.comGzip });
  const FRIO = `GET ${PAGINA}, stored documents, none held by the web process (CATALOGO_CACHE_MB=0), 10 connections`;
  const frio = await measure(FRIO, { url: `${options.frioUrl}${PAGINA}`, connections: 10, seconds, setupRequest: options.comCatalogo });
  const ALONE = `GET ${PAGINA}, stored documents, 1 connection`;
  const alone = await measure(ALONE, { url: `${options.apiUrl}${PAGINA}`, connections: 1, seconds, setupRequest: options.comCatalogo });

  // The page's bytes either way, and gzip's CPU on it in this process (zlib on the thread pool).
  const headers = options.comCatalogo({}).headers as Record<string, string>;
  const plain = Buffer.from(await (await fetch(`${options.apiUrl}${PAGINA}`, { headers })).text());
  const gzipped = await promisify(gzip)(plain, GZIP_OPTIONS);
  const gzipCpu = async (level: number) => {
    const started = process.cpuUsage();
    for (let i = 0; i < 100; i++) await promisify(gzip)(plain, { ...GZIP_OPTIONS, level });
    const used = process.cpuUsage(started);
    return Math.round((used.user + used.system) / 100);
  };
  const [cpuNivel, cpuNivel6] = [await gzipCpu(GZIP_OPTIONS.level), await gzipCpu(6)];

  // The page's statements alone, one at a time, through a pool of the bench (round trips and driver
  // included): with every document held, with none, and the per-request builder.
  const tempos = { antes: [] as number[], docs: [] as number[], frio: [] as number[] };
  const cache = new DocumentCache(64 * 1024 * 1024);
  const nenhum = new DocumentCache(0);
  for (let i = 0; i < 200; i++) {
    const contaId = options.contas[i % options.contas.length] ?? '';
    let started = performance.now();
    await listarProdutos(options.pool, contaId, { limite: 100 });
    tempos.antes.push(performance.now() - started);
    if (i < options.contas.length) await paginaDeDocumentos(options.pool, cache, contaId, { limite: 100 });
    started = performance.now();
    await paginaDeDocumentos(options.pool, cache, contaId, { limite: 100 });
    tempos.docs.push(performance.now() - started);
    started = performance.now();
    await paginaDeDocumentos(options.pool, nenhum, contaId, { limite: 100 });
    tempos.frio.push(performance.now() - started);
  }

  // Where a page's time goes in PostgreSQL: its plan, run once more with ANALYZE and BUFFERS.
  type PlanNode = { 'Node Type': string; 'Index Name'?: string; 'Shared Hit Blocks'?: number; Plans?: PlanNode[] };
  const explained = await options.pool.oneFirst(sql.unsafe`
    EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${consultaDaPagina(options.contas[0] ?? '', { limite: 100 })}`) as unknown as
    [{ Plan: PlanNode; 'Planning Time': number; 'Execution Time': number }];
  const nodes = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodes)];
  const plan = explained[0];
  const index = nodes(plan.Plan).find((n) => n['Index Name'])?.['Index Name'];
  const planText = `${nodes(plan.Plan).map((n) => n['Node Type']).join(' → ')}${index ? ` on ${index}` : ''}`;

  const pg = (r: LoadResult) => r.cpu.PostgreSQL ?? 0;
  const loadgen = (r: LoadResult) => r.cpu['load generator (autocannon)'] ?? 0;
  // The whole machine's CPU a page took, and what the goal's rate allows on these cores.
  const total = pg(docs) + cpuOf(docs, API) + loadgen(docs);
  const goal = 5 * ANTES_PAGINAS_POR_SEGUNDO;
  const cores = os.cpus().length;
  const verdict = docs.rps >= goal && docs.p99 <= 50 ? 'met'
    : `missed: ${docs.rps} pages/s is ${Math.round((100 * docs.rps) / goal)} % of ${goal}${docs.p99 > 50 ? `, p99 ${docs.p99} ms against 50` : ''}`;
  const markdown = `- GET ${PAGINA} from the stored documents: **${docs.rps} pages/s**, p99 **${docs.p99} ms** at 10
  connections (the pool's size), against ${antes.rps} pages/s (p99 ${antes.p99} ms) for the same pipeline building
  every product per request, in the same run: **${ratio.toFixed(1)}×** (goal ≥ 5× the ${ANTES_PAGINAS_POR_SEGUNDO} pages/s measured
  before, i.e. ≥ ${5 * ANTES_PAGINAS_POR_SEGUNDO}, and p99 ≤ 50 ms); the ${options.pairs} pairs in order: ${pairs.map((p) => `${p.docs.rps}/${p.antes.rps}`).join(', ')}.
  p50 ${alone.p50} ms alone.
- Goal ${verdict}.
- CPU per page: PostgreSQL ${pg(docs)} µs (per-request builder ${pg(antes)}), web process ${cpuOf(docs, API)} µs
  (${cpuOf(antes, ANTES_SCRIPT)}), load generator ${loadgen(docs)} µs: ${total} µs of the machine's ${cores} cores a page, so
  at most about ${Math.round((cores * 1e6) / total)} pages/s with every core busy; ${goal} pages/s needs under ${Math.round((cores * 1e6) / goal)} µs.
  A page reads one range of an index of produtos for its products' ids and versions
  (docs/decisions/0028-catalog-documents.md): EXPLAIN (ANALYZE, BUFFERS) of it, ${planText}: planning
  ${plan['Planning Time'].toFixed(2)} ms, execution ${plan['Execution Time'].toFixed(2)} ms, ${plan.Plan['Shared Hit Blocks'] ?? 0} buffers hit. The web process sends the documents it
  holds at those versions and reads the others in one more statement; the rest of PostgreSQL's share
  is admission and the request log, as for any request. The web process's share is mostly writing the
  page's ${Math.round(plain.length / 1024)} KB to the socket, piece by piece from where each document already is.
- Holding no documents (CATALOGO_CACHE_MB=0), every page reads all of its own: **${frio.rps} pages/s**, p99
  ${frio.p99} ms (${(frio.rps / antes.rps).toFixed(1)}× the per-request builder); PostgreSQL ${pg(frio)} µs a page, web process ${cpuOf(frio, API)} µs.
- One at a time (p50 over 200 pages, this process's pool): the page's statements ${p50(tempos.docs).toFixed(2)} ms with every
  document held, ${p50(tempos.frio).toFixed(2)} ms with none held, ${p50(tempos.antes).toFixed(2)} ms with the per-request builder.
- gzip (level ${GZIP_OPTIONS.level}, memLevel ${GZIP_OPTIONS.memLevel}; answers of 1 KiB or more to a client that sends Accept-Encoding: gzip): the page
  goes as ${Math.round(gzipped.length / 1024)} KB instead of ${Math.round(plain.length / 1024)} KB; ${gz.rps} pages/s, p99 ${gz.p99} ms; the web process
  spends ${cpuOf(gz, API) - cpuOf(docs, API)} µs more CPU per page than without it (zlib alone, in this process: ${cpuNivel} µs
  a page at level ${GZIP_OPTIONS.level}, ${cpuNivel6} µs at the default level 6).`;
  return { rows: [[ANTES, antes], [DOCS, docs], [FRIO, frio], [GZ, gz], [ALONE, alone]], markdown };
}
