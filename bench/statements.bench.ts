// Where PostgreSQL's time goes, per unit of work (issue 20, item 8): an embedded PostgreSQL with
// pg_stat_statements and track_functions, three request kinds through the real web process
// (GET of an order, its 304, POST of a stock movement) and webhook deliveries at a steady 200
// events/s through a real worker. For each: statement time per request (execution and planning),
// the statements and PL/pgSQL functions that take it, and the WAL and rows written per request.
// Statement time is wall time inside PostgreSQL (row-lock waits included), not CPU: the other
// benches give CPU from /proc.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import path from 'node:path';
import pg from 'pg';
import { z } from 'zod';
import { projectRoot } from '#shared/config.ts';
import { installBossSchema } from '#shared/boss.ts';
import { startEmbeddedPostgres, freePort } from '#shared/db/embedded.ts';
import { movimentar } from '#shared/db/estoque.ts';
import { createDatabasePool, sql, type Pool } from '#shared/db/pool.ts';
import { release } from '#shared/db/release.ts';
import { criarEndpoint } from '#shared/db/webhooks.ts';
import { criarProdutoCompleto } from '../test/helpers/catalogo.ts';
import { novoPedido } from '../test/helpers/cotacoes.ts';
import { createAccount, createPlan } from '../test/helpers/fixtures.ts';
import { load, spawnServer, writeSection, writtenMark, writtenSince, type WrittenMark } from './lib.ts';

const ACCOUNTS = 20;
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const EVENTS_PER_SECOND = 200;

const embedded = await startEmbeddedPostgres({
  dataDir: path.join(projectRoot, '.data', 'bench-statements'),
  database: 'bench_statements',
  settings: { shared_preload_libraries: 'pg_stat_statements', 'pg_stat_statements.track_planning': 'on', track_functions: 'all' },
});
const admin = new pg.Client({ connectionString: embedded.adminUrl });
await admin.connect();
await admin.query('DROP DATABASE IF EXISTS bench_statements WITH (FORCE)');
await admin.query('CREATE DATABASE bench_statements');
await admin.end();
const url = embedded.url;
await release(url);
await installBossSchema(url);
const pool = await createDatabasePool(url, { size: 4, statementTimeoutMs: 120_000, applicationName: 'bench' });
await pool.query(sql.unsafe`CREATE EXTENSION pg_stat_statements`);
await createPlan(pool, 'bench_statements', {
  chaves_ativas: 10, leituras_por_minuto: 100_000_000, escritas_por_minuto: 100_000_000, chamadas_por_mes: 2_000_000_000,
  rajada: 1_000_000, rajada_recarga_por_segundo: 1_000_000, simultaneas_por_chave: 1000, simultaneas_por_conta: 1000,
  entregas_webhook_por_hora: 100_000_000,
});

type Alvo = { token: string; contaId: string; variacoes: string[]; pedido: string; etag: string };
const alvos: Alvo[] = [];
for (let i = 0; i < ACCOUNTS; i++) {
  const account = await createAccount(pool, { plano: 'bench_statements', escopos: ['estoque:escrever', 'pedidos:ler'] });
  const produto = await criarProdutoCompleto(pool, account.contaId, { variacoes: Array.from({ length: 10 }, () => ({})) });
  for (const v of produto.variacoes) {
    await pool.transaction((tx) => movimentar(tx, account.contaId, { tipo: 'ajuste', variacao_id: v.id, contado: 10_000_000, motivo: 'correcao' }));
  }
  alvos.push({ ...account, variacoes: produto.variacoes.map((v) => v.id), pedido: await novoPedido(pool, account.contaId), etag: '' });
}
await pool.query(sql.unsafe`ANALYZE`);
const api = await spawnServer('api/main.ts', { DATABASE_URL: url, DB_POOL_SIZE: '10' }, '/v1/openapi.json');
for (const alvo of alvos) {
  const res = await fetch(`${api.url}/v1/pedidos-producao/${alvo.pedido}`, { headers: { authorization: `Bearer ${alvo.token}` } });
  alvo.etag = res.headers.get('etag') ?? '';
}

let n = 0;
const next = () => alvos[n++ % ACCOUNTS] as Alvo;
const getPedido = (conditional: boolean) => (req: Record<string, any>) => {
  const alvo = next();
  const headers: Record<string, string> = { authorization: `Bearer ${alvo.token}` };
  if (conditional) headers['if-none-match'] = alvo.etag;
  return { ...req, path: `/v1/pedidos-producao/${alvo.pedido}`, headers };
};
const movimento = (req: Record<string, any>) => {
  const alvo = next();
  const tipo = n % 2 === 0 ? 'saida' : 'entrada';
  return {
    ...req, method: 'POST',
    headers: { authorization: `Bearer ${alvo.token}`, 'content-type': 'application/json', 'idempotency-key': randomUUID() },
    body: JSON.stringify({ tipo, variacao_id: alvo.variacoes[Math.floor(n / ACCOUNTS) % 10], quantidade: 1, motivo: tipo === 'saida' ? 'venda_loja' : 'devolucao' }),
  };
};

const Statement = z.object({ calls: z.number(), exec_us: z.number(), plan_us: z.number(), plans: z.number(), query: z.string() });
const Fn = z.object({ name: z.string(), calls: z.number(), self_us: z.number() });
type Profile = { name: string; units: number; rate: string; wal: number; rows: number; statements: readonly z.infer<typeof Statement>[]; functions: readonly z.infer<typeof Fn>[] };

async function reset(): Promise<WrittenMark> {
  // What backends counted before (the warm-up, the previous run) reaches the shared counters when
  // they go idle, at most once a second, else after 10 s of idleness (PGSTAT_IDLE_INTERVAL): let it
  // arrive before the reset, not into the next run's counts.
  await new Promise((resolve) => setTimeout(resolve, 11_000));
  await pool.query(sql.unsafe`SELECT pg_stat_statements_reset(), pg_stat_reset()`);
  return writtenMark(url);
}

async function measured(name: string, mark: WrittenMark, units: number, rate: string): Promise<Profile> {
  // Statistics of other backends reach the shared counters when they go idle (writtenSince waits).
  const written = await writtenSince(url, mark, units);
  const statements = await pool.any(sql.type(Statement)`
    SELECT calls::int, (total_exec_time * 1000)::float8 AS exec_us, (total_plan_time * 1000)::float8 AS plan_us, plans::int,
           left(regexp_replace(query, '[[:space:]]+', ' ', 'g'), 70) AS query
      FROM pg_stat_statements
     WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND query !~* 'pg_stat|pg_current_wal_lsn'
     ORDER BY total_exec_time + total_plan_time DESC`);
  const functions = await pool.any(sql.type(Fn)`
    SELECT funcname AS name, calls::int, (self_time * 1000)::float8 AS self_us FROM pg_stat_user_functions ORDER BY self_time DESC LIMIT 4`);
  return { name, units, rate, wal: written.walBytes, rows: written.rows, statements, functions };
}

async function requests(name: string, path: string, setupRequest: (r: Record<string, any>) => Record<string, any>): Promise<Profile> {
  await load({ url: `${api.url}${path}`, connections: 50, seconds: 2, setupRequest });
  const mark = await reset();
  const r = await load({ url: `${api.url}${path}`, connections: 50, seconds: SECONDS, setupRequest });
  return measured(name, mark, r.requests, `${r.rps} req/s`);
}

async function webhooks(db: Pool): Promise<Profile> {
  let received = 0;
  const receiver = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received++;
      res.writeHead(204).end();
    });
  });
  const port = await freePort();
  await new Promise<void>((resolve) => receiver.listen(port, '127.0.0.1', resolve));
  for (const [i, alvo] of alvos.entries()) {
    const usuario = await db.oneFirst(sql.type(z.object({ id: z.string() }))`SELECT id FROM usuarios WHERE conta_id = ${alvo.contaId} LIMIT 1`);
    await criarEndpoint(db, { contaId: alvo.contaId, usuarioId: usuario, url: `http://127.0.0.1:${port}/r${i}`, tipos: ['cotacao.criada'], descricao: null });
  }
  const worker = spawn(process.execPath, ['worker/main.ts'], {
    cwd: projectRoot,
    env: { PATH: process.env.PATH ?? '', DATABASE_URL: url, PUBLIC_BASE_URL: 'http://127.0.0.1:3000/v1', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  // The movements' run left a pending estoque.movimentado per variation (no endpoint takes them): made
  // due now and relayed before the warm-up, so their relay is not counted as the deliveries'.
  await db.query(sql.unsafe`UPDATE outbox SET available_at = now() WHERE relayed_at IS NULL`);
  while (Number(await db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM outbox WHERE relayed_at IS NULL`)) > 0) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const emit = (i: number) => db.query(sql.unsafe`
    SELECT emit_event(${alvos[i % ACCOUNTS]?.contaId ?? ''}, 'cotacao.criada',
      jsonb_build_object('objeto', 'cotacao', 'id', gen_random_uuid(), 'codigo', 'COT-1', 'status', 'rascunho'))`);
  const steady = async (count: number) => {
    const start = performance.now();
    const pending: Promise<unknown>[] = [];
    for (let i = 0; i < count; i++) {
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, start + (i * 1000) / EVENTS_PER_SECOND - performance.now())));
      pending.push(emit(i));
    }
    await Promise.all(pending);
  };
  await steady(EVENTS_PER_SECOND * 2);
  const warm = received;
  const mark = await reset();
  const count = EVENTS_PER_SECOND * SECONDS;
  await steady(count);
  while (received < warm + count) await new Promise((resolve) => setTimeout(resolve, 20));
  const profile = await measured('webhook deliveries at a steady 200 events/s (emit, relay and take, POST, record)', mark, count, `${EVENTS_PER_SECOND} events/s`);
  const exited = once(worker, 'exit');
  worker.kill('SIGTERM');
  await exited;
  receiver.close();
  return profile;
}

const us = (v: number) => Math.round(v).toLocaleString('en-US');
function section(p: Profile): string {
  const exec = p.statements.reduce((t, s) => t + s.exec_us, 0) / p.units;
  const plan = p.statements.reduce((t, s) => t + s.plan_us, 0) / p.units;
  const top = p.statements.slice(0, 5).map((s) =>
    `| \`${s.query.replace(/\|/g, '\\|')}…\` | ${(s.calls / p.units).toFixed(2)} | ${us(s.exec_us / p.units)} | ${us(s.plan_us / p.units)} (${s.plans} of ${s.calls} calls planned) |`);
  const fns = p.functions.map((f) => `${f.name} ${us(f.self_us / p.units)}`).join(', ');
  return `### ${p.name}, ${p.rate}

Statement time per unit: **${us(exec + plan)} µs** (execution ${us(exec)}, planning ${us(plan)}); WAL **${us(p.wal)} B**, rows written **${p.rows.toFixed(1)}** per unit. PL/pgSQL self time per unit: ${fns}.

| statement | calls per unit | execution µs per unit | planning µs per unit |
| --- | ---: | ---: | ---: |
${top.join('\n')}`;
}

try {
  const profiles = [
    await requests('GET /v1/pedidos-producao/{id} → 200, 50 connections', '/v1/pedidos-producao/x', getPedido(false)),
    await requests('GET /v1/pedidos-producao/{id} with its ETag → 304, 50 connections', '/v1/pedidos-producao/x', getPedido(true)),
    await requests('POST /v1/estoque/movimentos, 50 connections', '/v1/estoque/movimentos', movimento),
    await webhooks(pool),
  ];
  for (const p of profiles) process.stdout.write(`${p.name}: ${p.rate}, ${us(p.wal)} B WAL, ${p.rows.toFixed(1)} rows per unit\n`);
  await writeSection('statements', `## Where PostgreSQL's time goes (pg_stat_statements)

${ACCOUNTS} accounts, the web process (DB_POOL_SIZE 10) and, for webhooks, one worker process, on an
embedded PostgreSQL started with pg_stat_statements (planning tracked) and track_functions; ${SECONDS} s
per run after 2 s of warm-up. Statement time is wall time inside PostgreSQL, row-lock waits
included, so it is an upper bound of its CPU (the other sections give CPU from /proc). Rows written
are PostgreSQL's inserted, updated and deleted tuples, pg-boss's and the request log's included.

${profiles.map(section).join('\n\n')}`);
} finally {
  await api.stop();
  await pool.end();
  await embedded.stop();
}
