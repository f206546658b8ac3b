// The catalog benchmark's baseline: the web process as it was before products kept their documents
// (issue 20, item 5). The same pipeline (admission, conditional page, ETag, request log), but
// GET /produtos builds every product's JSON in PostgreSQL on each request (the per-request builder,
// test/helpers/produtos-por-requisicao.ts), parses and validates the rows, and serializes the page
// again. Run by bench/estoque.bench.ts beside the API, on the same database.
import { startWeb } from '../api/main.ts';
import { toPage } from '../api/routes/lists.ts';
import { routes } from '../api/routes/index.ts';
import { unidadesProdutos } from '../api/routes/produtos.ts';
import type { AnyRoute } from '../api/routes/types.ts';
import type { FiltrosProdutos } from '#shared/db/produtos.ts';
import { loadConfigOrExit } from '#shared/config.ts';
import { requireDatabaseUrl, stopOnSignals } from '#shared/lifecycle.ts';
import { createLogger } from '#shared/log.ts';
import { listarProdutos, present } from '../test/helpers/produtos-por-requisicao.ts';

const porRequisicao: AnyRoute['handler'] = async ({ caller, query, db }) => {
  const filtros = query as FiltrosProdutos & { vinculo: string };
  const page = toPage(await listarProdutos(db, caller.contaId, filtros), filtros, present);
  return { status: 200, body: page, billing: { units: unidadesProdutos(page.dados.length) } };
};
const table = routes.map((route) => (route.operationId === 'listProdutos' ? { ...route, handler: porRequisicao } : route));

const config = loadConfigOrExit(process.env, { role: 'web' });
const log = createLogger(config.LOG_LEVEL, 'web');
const web = await startWeb(config, requireDatabaseUrl(config.DATABASE_URL, 'web'), log, table);
stopOnSignals(log, config.SHUTDOWN_GRACE_MS, () => web.stop());
