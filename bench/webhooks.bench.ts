// Webhooks (issue 6): a worker process (node worker/main.ts) relaying the outbox and delivering to
// a local receiver that verifies every signature. (1) Sustained deliveries/s draining a backlog of
// queued events; (2) commit-to-receipt latency at a steady 200 events/s. Against pg-boss alone in
// the same run and database: send() and work() of empty jobs, throughput and send-to-handler
// latency at 200 jobs/s. Figures are reported, never asserted.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import http from 'node:http';
import { PgBoss } from 'pg-boss';
import { Webhook } from 'standardwebhooks';
import { z } from 'zod';
import { projectRoot } from '../shared/config.ts';
import { freePort } from '../shared/db/embedded.ts';
import { createDatabasePool, sql } from '../shared/db/pool.ts';
import { criarEndpoint } from '../shared/db/webhooks.ts';
import { createAccount, createPlan } from '../test/helpers/fixtures.ts';
import { BOSS_SCHEMA } from '../shared/boss.ts';
import { benchDatabase, percentile, writeSection } from './lib.ts';

const ACCOUNTS = 20;
const BACKLOG = Number(process.env.BENCH_WEBHOOK_BACKLOG ?? 20_000);
const RATE = 200;
const SECONDS = Number(process.env.BENCH_SECONDS ?? 15);

const db = await benchDatabase('webhooks');
const pool = await createDatabasePool(db.url, { size: 4, statementTimeoutMs: 120_000, applicationName: 'bench' });
await createPlan(pool, 'bench_webhooks', {
  chaves_ativas: 10, leituras_por_minuto: 1000, escritas_por_minuto: 1000, chamadas_por_mes: 1_000_000, rajada: 100,
  rajada_recarga_por_segundo: 100, simultaneas_por_chave: 10, simultaneas_por_conta: 10, entregas_webhook_por_hora: 100_000_000,
});

// The receiver: answers 204 at once, verifies every signature, notes when each event arrived.
const arrivals = new Map<string, number>();
let received = 0;
let badSignatures = 0;
const secrets = new Map<string, Webhook>();
const receiver = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const id = String(req.headers['webhook-id']);
    try {
      secrets.get(req.url ?? '')?.verify(Buffer.concat(chunks), req.headers as Record<string, string>);
    } catch {
      badSignatures++;
    }
    received++;
    if (!arrivals.has(id)) arrivals.set(id, performance.now());
    res.writeHead(204).end();
  });
});
const port = await freePort();
await new Promise<void>((resolve) => receiver.listen(port, '127.0.0.1', resolve));

const contas: string[] = [];
for (let i = 0; i < ACCOUNTS; i++) {
  const account = await createAccount(pool, { plano: 'bench_webhooks', escopos: [] });
  const path = `/r${i}`;
  const endpoint = await criarEndpoint(pool, { contaId: account.contaId, usuarioId: account.usuarioId, url: `http://127.0.0.1:${port}${path}`, tipos: [], descricao: null });
  secrets.set(path, new Webhook(endpoint.segredo));
  contas.push(account.contaId);
}

function spawnWorker(): ChildProcess {
  return spawn(process.execPath, ['worker/main.ts'], {
    cwd: projectRoot,
    env: { PATH: process.env.PATH ?? '', DATABASE_URL: db.url, PUBLIC_BASE_URL: 'http://127.0.0.1:3000/v1', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
}
async function stopWorker(child: ChildProcess): Promise<void> {
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  await exited;
}
const Count = z.object({ n: z.number() });
async function until(check: () => Promise<boolean> | boolean, timeoutMs = 600_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('benchmark timed out');
    await new Promise((r) => setTimeout(r, 5));
  }
}
const workerListening = () => pool.oneFirst(sql.type(Count)`
  SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'worker-listen'`);
const sleepUntil = (t: number) => new Promise((r) => setTimeout(r, Math.max(0, t - performance.now())));

/** Emits one event per tick at `rate` per second for `seconds`, each in its own transaction. */
async function steady(rate: number, seconds: number, send: (i: number) => Promise<string>): Promise<Map<string, number>> {
  const committed = new Map<string, number>();
  const start = performance.now();
  const pending: Promise<void>[] = [];
  for (let i = 0; i < rate * seconds; i++) {
    await sleepUntil(start + (i * 1000) / rate);
    pending.push(send(i).then((id) => void committed.set(id, performance.now())));
  }
  await Promise.all(pending);
  return committed;
}
const emitOne = (i: number) => pool.oneFirst(sql.type(z.object({ id: z.string() }))`
  SELECT emit_event(${contas[i % ACCOUNTS] ?? ''}, 'cotacao.criada',
    jsonb_build_object('objeto', 'cotacao', 'id', gen_random_uuid(), 'codigo', 'COT-000001', 'status', 'rascunho')) AS id`);
function latencies(committed: Map<string, number>, arrived: (id: string) => number | undefined) {
  const values = [...committed].flatMap(([id, t]) => {
    const a = arrived(id);
    return a === undefined ? [] : [Math.max(0, a - t)];
  }).sort((a, b) => a - b);
  return { n: values.length, p50: percentile(values, 50), p99: percentile(values, 99), max: values.at(-1) ?? 0 };
}
const ms = (v: number) => v.toFixed(1);

try {
  // (1) Sustained throughput: a backlog committed while no worker runs, drained by one worker.
  await pool.query(sql.unsafe`
    SELECT emit_event(c, 'cotacao.criada', jsonb_build_object('objeto', 'cotacao', 'id', gen_random_uuid(), 'codigo', 'COT-' || g, 'status', 'rascunho'))
      FROM generate_series(1, ${BACKLOG}) g, LATERAL (SELECT (${sql.array(contas, 'uuid')}::uuid[])[1 + g % ${ACCOUNTS}] AS c) x`);
  await pool.query(sql.unsafe`ANALYZE`);
  const started = performance.now();
  const worker = spawnWorker();
  await until(() => received >= BACKLOG);
  const firstArrival = Math.min(...arrivals.values());
  const drained = performance.now();
  const deliveriesPerSecond = (BACKLOG / (drained - firstArrival)) * 1000;
  const withStartup = (BACKLOG / (drained - started)) * 1000;
  process.stdout.write(`webhooks: ${BACKLOG} queued events drained at ${Math.round(deliveriesPerSecond)} deliveries/s (${Math.round(withStartup)}/s including worker start)\n`);
  await until(async () => (await pool.oneFirst(sql.type(Count)`SELECT count(*)::int AS n FROM deliveries WHERE status = 'pending'`)) === 0);

  // (2) Latency at a steady 200 events/s, measured from the emitting transaction's commit.
  await until(async () => (await workerListening()) === 1);
  await steady(RATE, 2, emitOne);
  const committed = await steady(RATE, SECONDS, emitOne);
  await until(() => [...committed.keys()].every((id) => arrivals.has(id)), 60_000);
  const hook = latencies(committed, (id) => arrivals.get(id));
  process.stdout.write(`webhooks: commit to receipt at ${RATE}/s: p50 ${ms(hook.p50)} ms, p99 ${ms(hook.p99)} ms, max ${ms(hook.max)} ms\n`);
  await stopWorker(worker);

  // (3) pg-boss alone on the same database: empty jobs, LISTEN/NOTIFY on as the pipeline has it.
  const boss = new PgBoss({ connectionString: db.url, schema: BOSS_SCHEMA, max: 10, supervise: false, schedule: false, useListenNotify: true });
  boss.on('error', () => undefined);
  await boss.start();
  await boss.createQueue('bench-empty', { notify: true });
  const sendStart = performance.now();
  for (let i = 0; i < BACKLOG; i += 50) await Promise.all(Array.from({ length: 50 }, () => boss.send('bench-empty', {})));
  const sendRate = (BACKLOG / (performance.now() - sendStart)) * 1000;
  await pool.query(sql.unsafe`ANALYZE`);
  let worked = 0;
  const workStart = performance.now();
  const handled = new Map<string, number>();
  await boss.work<{ i?: number }>('bench-empty', { batchSize: 50, burstWhenBatchFull: true, pollingIntervalSeconds: 0.5 }, async (jobs) => {
    worked += jobs.length;
    for (const j of jobs) handled.set(j.id, performance.now());
  });
  await until(() => worked >= BACKLOG);
  const workRate = (BACKLOG / (performance.now() - workStart)) * 1000;
  process.stdout.write(`pg-boss alone: send() 50 in parallel ${Math.round(sendRate)} jobs/s, work() batch 50 with burst ${Math.round(workRate)} jobs/s\n`);
  const sent = await steady(RATE, SECONDS, async () => (await boss.send('bench-empty', {})) ?? '');
  await until(() => [...sent.keys()].every((id) => handled.has(id)), 60_000);
  const alone = latencies(sent, (id) => handled.get(id));
  process.stdout.write(`pg-boss alone: send to handler at ${RATE}/s: p50 ${ms(alone.p50)} ms, p99 ${ms(alone.p99)} ms\n`);
  await boss.stop({ graceful: false });

  await writeSection('webhooks', `## Webhooks (outbox → relay → pg-boss → signed POST)

${ACCOUNTS} accounts with one endpoint each, on a local receiver (Node http, answers 204, verifies
every signature with \`standardwebhooks\`: ${badSignatures} bad). One worker process
(\`node worker/main.ts\`, default WEBHOOK_CONCURRENCY 100 / 10 per endpoint); emitter and receiver in
the bench process; PostgreSQL ${process.env.DATABASE_URL ? 'from DATABASE_URL' : 'embedded (default settings, fsync on)'}; all on the same machine, so
the figures move with whatever else runs on it: the pg-boss-alone rows of the same run show how
loaded it was.

| run | figure | target |
| --- | ---: | ---: |
| deliveries/s, draining ${BACKLOG} events committed beforehand (relay, fan-out, POST, attempt recorded) | **${Math.round(deliveriesPerSecond)}** | ≥ 2,000 |
| same, counted from the worker's start | ${Math.round(withStartup)} | |
| commit → receipt at a steady ${RATE} events/s for ${SECONDS} s, p50 | **${ms(hook.p50)} ms** | ≤ 100 ms |
| commit → receipt, p99 (max ${ms(hook.max)} ms) | **${ms(hook.p99)} ms** | ≤ 500 ms |
| pg-boss alone: send() of empty jobs, 50 in parallel | ${Math.round(sendRate)} jobs/s | |
| pg-boss alone: work() of those jobs, batch 50 with burstWhenBatchFull | ${Math.round(workRate)} jobs/s | |
| pg-boss alone: send → handler at ${RATE} jobs/s (LISTEN/NOTIFY), p50 / p99 | ${ms(alone.p50)} / ${ms(alone.p99)} ms | |`);
} finally {
  receiver.close();
  await pool.end();
  await db.stop();
}
