// The baselines the API is measured against: plain restify routes on the same database, with no
// admission, no validation and no logging. GET /hello answers without the database; GET /bare does
// one UPDATE and one SELECT; POST /bare-tx does one transaction with one UPDATE and one INSERT.
import pg from 'pg';
import restify from 'restify';

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
await pool.query(`CREATE TABLE IF NOT EXISTS bench_counters (id int PRIMARY KEY, n bigint NOT NULL DEFAULT 0);
  CREATE TABLE IF NOT EXISTS bench_rows (id bigserial PRIMARY KEY, counter int NOT NULL, at timestamptz NOT NULL DEFAULT now());
  INSERT INTO bench_counters (id) SELECT g FROM generate_series(1, 1000) g ON CONFLICT DO NOTHING`);

const server = restify.createServer({ handleUncaughtExceptions: false });
let next = 0;
server.get('/hello', (_req: restify.Request, res: restify.Response, done: restify.Next) => {
  res.sendRaw(200, '{"ok":true}', { 'Content-Type': 'application/json' });
  done();
});
server.get('/bare', async (_req: restify.Request, res: restify.Response) => {
  const id = (next++ % 1000) + 1;
  await pool.query('UPDATE bench_counters SET n = n + 1 WHERE id = $1', [id]);
  const { rows } = await pool.query('SELECT id, n FROM bench_counters WHERE id = $1', [id]);
  res.sendRaw(200, JSON.stringify(rows[0]), { 'Content-Type': 'application/json' });
});
server.post('/bare-tx', async (_req: restify.Request, res: restify.Response) => {
  const id = (next++ % 1000) + 1;
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query('UPDATE bench_counters SET n = n + 1 WHERE id = $1', [id]);
    const { rows } = await client.query('INSERT INTO bench_rows (counter) VALUES ($1) RETURNING id', [id]);
    await client.query('COMMIT');
    res.sendRaw(201, JSON.stringify(rows[0]), { 'Content-Type': 'application/json' });
  } catch (error) {
    await client.query('ROLLBACK');
    throw error;
  } finally {
    client.release();
  }
});
server.listen(Number(process.env.PORT), process.env.HOST ?? '127.0.0.1');
process.on('SIGTERM', () => server.close(() => void pool.end().then(() => process.exit(0))));
