// The baselines of one-record reads (bench/reads.bench.ts): what a competent team would ship for GET of
// one production order with off-the-shelf parts. Per request: one point of rate-limiter-flexible on the
// store RATE_LIMIT_STORE names (redis: RateLimiterRedis with ioredis; postgres: RateLimiterPostgres in a
// table of its own on the same database, with the library's defaults), then the SELECT the service
// runs for an order (its representation with its items, built by PostgreSQL: sql/code/pedidos.sql,
// pedido_representacao), prepared once per connection as SQL_DRIVER says (pg: a named statement
// through pg.Pool; postgres: postgres.js, which prepares by default), and its JSON sent as it came. No
// authentication, validation, ETag or request log.
import { Redis } from 'ioredis';
import pg from 'pg';
import postgres from 'postgres';
import restify from 'restify';
import { RateLimiterPostgres, RateLimiterRedis, type RateLimiterAbstract } from 'rate-limiter-flexible';

const STORE = process.env.RATE_LIMIT_STORE;
const DRIVER = process.env.SQL_DRIVER ?? 'pg';
// Far above what a run sends: every request is counted, none refused.
const LIMITS = { points: 1_000_000_000, duration: 60, keyPrefix: 'bench_reads' };
// The service's pool size (DB_POOL_SIZE 10).
const POOL_SIZE = 10;

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: POOL_SIZE });

/** The limiter on the chosen store, ready to count (the Postgres one creates its table first). */
async function limiter(): Promise<RateLimiterAbstract> {
  if (STORE === 'redis') {
    const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: 1 });
    return new RateLimiterRedis({ ...LIMITS, storeClient: redis });
  }
  if (STORE === 'postgres') {
    return new Promise((resolve, reject) => {
      const created: RateLimiterPostgres = new RateLimiterPostgres(
        { ...LIMITS, storeClient: pool, tableName: 'bench_reads_rate_limits' },
        (error?: unknown) => (error ? reject(error) : resolve(created)));
    });
  }
  throw new Error(`RATE_LIMIT_STORE must be redis or postgres, not ${STORE}`);
}

// The service's statement for an order, as a caller holding custos.ver reads it.
const SELECT_ORDER = "SELECT versao, corpo FROM pedido_representacao($1, $2, '{custos.ver}')";

/** The order's version and body, or undefined: its statement parsed and planned once per connection. */
function orderReader(): (conta: string, id: string) => Promise<unknown> {
  if (DRIVER === 'pg') {
    return async (conta, id) => (await pool.query({ name: 'ler_pedido', text: SELECT_ORDER, values: [conta, id] })).rows[0];
  }
  if (DRIVER === 'postgres') {
    const sql = postgres(process.env.DATABASE_URL ?? '', { max: POOL_SIZE });
    return async (conta, id) => (await sql.unsafe(SELECT_ORDER, [conta, id], { prepare: true }))[0];
  }
  throw new Error(`SQL_DRIVER must be pg or postgres, not ${DRIVER}`);
}

const limits = await limiter();
const readOrder = orderReader();
const server = restify.createServer({ handleUncaughtExceptions: false });
server.get('/hello', (_req: restify.Request, res: restify.Response, done: restify.Next) => {
  res.sendRaw(200, '{"ok":true}', { 'Content-Type': 'application/json' });
  done();
});
// The account is in the path: the baseline authenticates nobody, and limits by the key sent.
server.get('/pedidos/:conta/:id', async (req: restify.Request, res: restify.Response) => {
  try {
    await limits.consume(req.headers.authorization ?? 'anonymous');
  } catch (refusal) {
    // A refusal is a RateLimiterRes; anything else is the store failing.
    res.sendRaw(refusal instanceof Error ? 503 : 429, '{}', { 'Content-Type': 'application/json' });
    return;
  }
  const row = await readOrder(req.params.conta, req.params.id) as { corpo: string } | undefined;
  if (!row) return res.sendRaw(404, '{}', { 'Content-Type': 'application/json' });
  res.sendRaw(200, row.corpo, { 'Content-Type': 'application/json' });
});
server.listen(Number(process.env.PORT), process.env.HOST ?? '127.0.0.1');
process.on('SIGTERM', () => server.close(() => void pool.end().then(() => process.exit(0))));
