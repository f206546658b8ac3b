// The webhooks section of BENCHMARKS.md from the runs of bench/webhooks.bench.ts: every figure as the
// spread of its runs (min–max) beside its baseline of the same runs, each goal met or missed and by
// how much, and where the CPU went.
import type { Config } from '#shared/config.ts';
import { usOf, type CpuUse, type Drain } from './webhooks-rig.ts';

type Steady = { p50: number; p99: number; max: number; cpu: CpuUse; pgByRole: Record<string, number>; emitOnly: CpuUse | null };
type Drained = Drain & { pgByRole: Record<string, number>; peakRssMb: number };
export type Run = { fresh: Steady; one: Drained & { postMs: number }; oneRaw: Drain; many: Drained; manyRaw: Drain; after: Steady };

type Input = {
  runs: Run[];
  boss: { send: number; work: number; p50: number; p99: number; pgUs: number };
  counts: { received: number; badSignatures: number; rawBodiesDiffering: number };
  cores: number;
  defaults: Config;
  rawClient: string;
  relaySpacingMs: number;
  sizes: { accounts: number; backlog: number; oneBacklog: number; rate: number; seconds: number; emitOnlySeconds: number; bossBacklog: number };
  embedded: boolean;
};

const fmt = (v: number, digits = 0) => v.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
/** min–max of the runs (one figure when they agree). */
function span(values: readonly number[], digits = 0): string {
  const lo = Math.min(...values);
  const hi = Math.max(...values);
  return fmt(lo, digits) === fmt(hi, digits) ? fmt(lo, digits) : `${fmt(lo, digits)}–${fmt(hi, digits)}`;
}
/** The runs' figures in order. */
const each = (values: readonly number[], digits = 0) => values.map((v) => fmt(v, digits)).join(', ');
/** A goal's verdict over every run: met in all, or missed by how much at worst. */
function verdict(values: readonly number[], goal: number, atMost: boolean, unit: string, digits = 0): string {
  const worst = atMost ? Math.max(...values) : Math.min(...values);
  const missed = values.filter((v) => (atMost ? v > goal : v < goal)).length;
  if (missed === 0) return 'met in every run';
  const by = atMost ? worst - goal : goal - worst;
  return `missed in ${missed} of ${values.length} runs, by up to ${fmt(by, digits)}${unit} (${fmt((by / goal) * 100)} %)`;
}

export function webhooksReport(input: Input): string {
  const { runs, boss, counts, cores, defaults, sizes } = input;
  const n = runs.length;
  const per = defaults.WEBHOOK_CONCURRENCY_PER_ENDPOINT;
  const all = <T>(f: (r: Run) => T) => runs.map(f);
  const pgOne = all((r) => usOf(r.one.cpu, 'PostgreSQL'));
  const pgMany = all((r) => usOf(r.many.cpu, 'PostgreSQL'));
  const pgRatio = all((r) => usOf(r.many.cpu, 'PostgreSQL') / Math.max(1, usOf(r.one.cpu, 'PostgreSQL')));
  const service = (c: CpuUse | null) => usOf(c, 'worker') + usOf(c, 'PostgreSQL') + usOf(c, 'bench');
  const cpuBound = (us: number) => (us > 0 ? Math.round((cores * 1e6) / us) : 0);
  const role = (s: Steady | Drained, name: string) => s.pgByRole[name] ?? 0;
  const others = Math.round(Math.max(...runs.flatMap((r) => [r.fresh, r.after].map((s) => s.cpu.others)
    .concat([r.one, r.oneRaw, r.many, r.manyRaw].map((d) => d.cpu?.others ?? 0)))) * 100);
  const manyRate = all((r) => r.many.fromFirst);
  const afterP50 = all((r) => r.after.p50);

  return `## Webhooks (outbox → relay → deliveries taken under a lease → signed POST)

One worker process (\`node worker/main.ts\`, default settings: WEBHOOK_CONCURRENCY ${defaults.WEBHOOK_CONCURRENCY}, ${per} per endpoint,
DB_POOL_SIZE ${defaults.DB_POOL_SIZE}, no heap flags) delivering to a local receiver in the bench process (Node http, answers 204 at once,
verifies every signature with \`standardwebhooks\`: ${counts.badSignatures} bad of ${counts.received}); the bench also emits the events (\`emit_event\`,
one transaction each at the steady rate, one statement for a backlog). PostgreSQL ${input.embedded ? 'embedded (18, default settings, fsync on)' : 'from DATABASE_URL'}.
${n} runs, each in this order:

1. **fresh tables**: a new database; ${sizes.rate} events/s for ${sizes.seconds} s over ${sizes.accounts} accounts after a 2 s warm-up (and, before the worker
   starts, ${sizes.emitOnlySeconds} s of emitting alone);
2. **one endpoint**: a worker started on the working tables as a quiet spell leaves them (what ended archived, as the
   webhook-maintenance job does 5 minutes after; the tables vacuumed, as autovacuum does) polls them for 2 s; then
   ${fmt(sizes.oneBacklog)} events are committed at once, and it drains them; then the **raw sender** (bench/webhooks-raw-sender.ts,
   a process of its own, no database) POSTs the same signed bodies (the §6.1 envelope, signed as worker/webhooks/attempt.ts
   does) to the same receiver, ${per} at a time over keep-alive ${input.rawClient === 'http' ? 'node:http' : 'fetch'} connections;
3. **${sizes.accounts} accounts**: the same with ${fmt(sizes.backlog)} events over ${sizes.accounts} accounts with one endpoint each; then the raw sender with
   those bodies, ${defaults.WEBHOOK_CONCURRENCY} at a time (the worker's concurrency in all);
4. **right after that drain**: the same worker, on the tables the drain left (no VACUUM, no ANALYZE: autovacuum as it comes),
   ${sizes.rate} events/s for ${sizes.seconds} s as in 1.

The raw sender's bodies differed from the worker's in
${counts.rawBodiesDiffering} deliveries. Rates count from the first arrival to the last; CPU is read from /proc (bench/cpu.ts) over the same
interval: the worker, the raw sender, this bench's PostgreSQL (its postmaster's processes only) and the bench process (the
receiver, and the emitter in the steady runs). All on one machine of ${cores} cores shared with other work: the last column is the
largest share of the machine's CPU other processes took during any of the runs' measured intervals (${others} % at most in all).

| measure (${n} runs: min–max) | figure | baseline, same runs | goal | verdict |
| --- | ---: | ---: | ---: | --- |
| deliveries/s to ONE endpoint, ${fmt(sizes.oneBacklog)} events | **${span(all((r) => r.one.fromFirst))}** (${each(all((r) => r.one.fromFirst))}) | raw sender ${span(all((r) => r.oneRaw.fromFirst))} | ≥ 2,000 | ${verdict(all((r) => r.one.fromFirst), 2000, false, '/s')} |
| same, counted from the backlog's commit (the raw sender: from its spawn) | ${span(all((r) => r.one.fromStart))} | ${span(all((r) => r.oneRaw.fromStart))} | | |
| worker / raw sender, same run | **${span(all((r) => r.one.fromFirst / r.oneRaw.fromFirst), 2)}** | | ≥ 0.9 | ${verdict(all((r) => r.one.fromFirst / r.oneRaw.fromFirst), 0.9, false, '', 2)} |
| PostgreSQL CPU µs per delivery, that drain | **${span(pgOne)}** (${each(pgOne)}) | raw sender: none | | |
| deliveries/s, ${sizes.accounts} accounts, ${fmt(sizes.backlog)} events | **${span(manyRate)}** (${each(manyRate)}) | raw sender, ${defaults.WEBHOOK_CONCURRENCY} in flight: ${span(all((r) => r.manyRaw.fromFirst))} | ≥ 2,500 | ${verdict(manyRate, 2500, false, '/s')} |
| same, counted from the backlog's commit (the raw sender: from its spawn) | ${span(all((r) => r.many.fromStart))} | ${span(all((r) => r.manyRaw.fromStart))} | | |
| PostgreSQL CPU µs per delivery, that drain | **${span(pgMany)}** (${each(pgMany)}) | the one-endpoint drain of the same run: ×${span(pgRatio, 2)} | ≤ 300 µs and ≤ ×1.5 | ${verdict(pgMany, 300, true, ' µs')}; ratio ${verdict(pgRatio, 1.5, true, '', 2)} |
| commit → receipt p50 at ${sizes.rate} events/s right after that drain | **${span(afterP50, 1)} ms** (${each(afterP50, 1)}) | fresh tables: ${span(all((r) => r.fresh.p50), 1)} ms | ≤ 10 ms | ${verdict(afterP50, 10, true, ' ms', 1)} |
| same, p99 (max ${span(all((r) => r.after.max), 1)} ms) | **${span(all((r) => r.after.p99), 1)} ms** | fresh tables: ${span(all((r) => r.fresh.p99), 1)} ms | ≤ 500 ms | ${verdict(all((r) => r.after.p99), 500, true, ' ms', 1)} |
| PostgreSQL CPU µs per event at ${sizes.rate}/s right after, emitting included | **${span(all((r) => usOf(r.after.cpu, 'PostgreSQL')))}** | fresh tables: ${span(all((r) => usOf(r.fresh.cpu, 'PostgreSQL')))}; of it emitting alone ${span(all((r) => usOf(r.fresh.emitOnly, 'PostgreSQL')))} | ≤ 1,000 µs | ${verdict(all((r) => usOf(r.after.cpu, 'PostgreSQL')), 1000, true, ' µs')} |
| of it by process: emitting / worker / its LISTEN / PostgreSQL's own | ${span(all((r) => role(r.after, 'emitting')))} / ${span(all((r) => role(r.after, 'worker')))} / ${span(all((r) => role(r.after, 'LISTEN')))} / ${span(all((r) => role(r.after, 'server')))} | fresh: ${span(all((r) => role(r.fresh, 'emitting')))} / ${span(all((r) => role(r.fresh, 'worker')))} / ${span(all((r) => role(r.fresh, 'LISTEN')))} / ${span(all((r) => role(r.fresh, 'server')))} | | |
| worker CPU µs per event at ${sizes.rate}/s | **${span(all((r) => usOf(r.after.cpu, 'worker')))}** | fresh tables: ${span(all((r) => usOf(r.fresh.cpu, 'worker')))} | | |
| CPU µs per delivery, one endpoint: worker / PostgreSQL / receiver | ${span(all((r) => usOf(r.one.cpu, 'worker')))} / ${span(pgOne)} / ${span(all((r) => usOf(r.one.cpu, 'bench')))} | raw sender / receiver: ${span(all((r) => usOf(r.oneRaw.cpu, 'raw sender')))} / ${span(all((r) => usOf(r.oneRaw.cpu, 'bench')))} | | |
| same, ${sizes.accounts} accounts | ${span(all((r) => usOf(r.many.cpu, 'worker')))} / ${span(pgMany)} / ${span(all((r) => usOf(r.many.cpu, 'bench')))} | ${span(all((r) => usOf(r.manyRaw.cpu, 'raw sender')))} / ${span(all((r) => usOf(r.manyRaw.cpu, 'bench')))} | | |
| PostgreSQL per delivery by process, ${sizes.accounts} accounts: the worker's connections / PostgreSQL's own (autovacuum, WAL writer, …) | ${span(all((r) => role(r.many, 'worker')))} / ${span(all((r) => role(r.many, 'server')))} | | | |
| a slot's time per delivery to one endpoint (${per} / rate), of which the POST as the worker timed it | ${span(all((r) => (per / Math.max(1, r.one.fromFirst)) * 1000), 1)} ms, POST ${span(all((r) => r.one.postMs), 1)} ms | raw sender: ${span(all((r) => (per / Math.max(1, r.oneRaw.fromFirst)) * 1000), 1)} ms, all of it the POST | | |
| worker's peak RSS (VmHWM): the ${sizes.accounts} accounts' drain and the steady run after it / one endpoint | ${span(all((r) => r.many.peakRssMb))} / ${span(all((r) => r.one.peakRssMb))} MB | | | |
| pg-boss alone: send() of ${fmt(sizes.bossBacklog)} empty jobs, 50 in parallel / work(), batch 50 with burst / send → handler p50, p99 at ${sizes.rate}/s / PostgreSQL CPU per job | ${fmt(boss.send)} / ${fmt(boss.work)} jobs/s / ${fmt(boss.p50, 1)}, ${fmt(boss.p99, 1)} ms / ${fmt(boss.pgUs)} µs | | | |

What the figures mean:

- **PostgreSQL per delivery with a backlog**: ${fmt(sizes.backlog)} events over ${sizes.accounts} accounts cost PostgreSQL ${span(pgMany)} µs of CPU
  a delivery, ×${span(pgRatio, 2)} the ${fmt(sizes.oneBacklog)}-event drain of the same run (goal ≤ 300 µs: ${verdict(pgMany, 300, true, ' µs')}; ≤ ×1.5:
  ${verdict(pgRatio, 1.5, true, '', 2)}). Most of it is the worker's connections (${span(all((r) => role(r.many, 'worker')))} µs); what makes a delivery cost
  that much is writing it: a delivery, its attempt and its event are inserted and updated (the attempt recorded before its request,
  completed after it), a dozen index entries in all, with a durable commit per statement; one endpoint's drain costs more a
  delivery than ${sizes.accounts} endpoints' because its statements carry fewer deliveries each (at most ${3 * per} of one endpoint held). Why a
  backlog used to cost several times as much, and what changed: docs/decisions, "Webhooks that stay fast with a backlog".
- **${sizes.accounts} accounts drain** at ${span(manyRate)} deliveries/s (goal ≥ 2,500: ${verdict(manyRate, 2500, false, '/s')}), against ${span(all((r) => r.manyRaw.fromFirst))}/s for the raw
  sender. CPU bounds it: the worker, PostgreSQL and the receiver spent ${span(all((r) => service(r.many.cpu)))} µs a delivery, so ${cores} cores allow at most
  about ${span(all((r) => cpuBound(service(r.many.cpu))))} a second whatever the concurrency; of it the worker ${span(all((r) => usOf(r.many.cpu, 'worker')))} µs (building, signing and
  sending the request, reading the answer: the raw sender does the same for ${span(all((r) => usOf(r.manyRaw.cpu, 'raw sender')))} µs) and PostgreSQL
  ${span(pgMany)} µs.
- **Right after that drain**, on the tables it left, the steady ${sizes.rate} events/s arrive ${span(afterP50, 1)} ms after their commit at p50
  (fresh tables: ${span(all((r) => r.fresh.p50), 1)} ms; goal ≤ 10 ms: ${verdict(afterP50, 10, true, ' ms', 1)}). Between the event's commit and its POST comes
  the relay's statement, woken by NOTIFY, which also takes the delivery for its worker: one round trip and one durable commit. Relay
  passes start at least ${input.relaySpacingMs} ms apart, so an event that comes sooner after the last pass waits for the rest: that wait is most of
  the p50. PostgreSQL's CPU per event is ${span(all((r) => usOf(r.after.cpu, 'PostgreSQL')))} µs after the drain and ${span(all((r) => usOf(r.fresh.cpu, 'PostgreSQL')))} µs on fresh tables,
  of which the emitting transactions (an INSERT, a NOTIFY and a durable commit each: here every event is a transaction of its own,
  where an application's event rides its change's commit) ${span(all((r) => role(r.after, 'emitting')))} and ${span(all((r) => role(r.fresh, 'emitting')))} µs; the worker's connections
  ${span(all((r) => role(r.after, 'worker')))} and ${span(all((r) => role(r.fresh, 'worker')))} µs (goal ≤ 1,000 µs counting everything: ${verdict(all((r) => usOf(r.after.cpu, 'PostgreSQL')), 1000, true, ' µs')}).
- **One endpoint**: the worker delivered ${span(all((r) => r.one.fromFirst))}/s where the raw sender, with the same ${per} requests in flight to the same
  receiver, delivered ${span(all((r) => r.oneRaw.fromFirst))}/s (goal ≥ 2,000/s: ${verdict(all((r) => r.one.fromFirst), 2000, false, '/s')}; ratio ≥ 0.9:
  ${verdict(all((r) => r.one.fromFirst / r.oneRaw.fromFirst), 0.9, false, '', 2)}). A slot spends ${span(all((r) => (per / Math.max(1, r.one.fromFirst)) * 1000), 1)} ms per delivery, of which ${span(all((r) => r.one.postMs), 1)} ms in
  the POST as the worker timed it: the rest is the worker's turn and the take that refills the endpoint (a round trip that
  writes the outcomes that made room and records the next attempts' start). The service spent ${span(all((r) => service(r.one.cpu)))} µs of CPU a
  delivery (about ${span(all((r) => cpuBound(service(r.one.cpu))))}/s on ${cores} cores), the raw sender and receiver ${span(all((r) => usOf(r.oneRaw.cpu, 'raw sender') + usOf(r.oneRaw.cpu, 'bench')))} µs: a sender
  as cheap as the raw one that also wrote PostgreSQL's ${span(pgOne)} µs a delivery would reach at most about
  ${span(all((r) => cpuBound(usOf(r.oneRaw.cpu, 'raw sender') + usOf(r.one.cpu, 'PostgreSQL') + usOf(r.one.cpu, 'bench'))))}/s here.${others >= 20 ? `
- **A busy machine**: other processes took up to ${others} % of the CPU during these runs; CPU time per event grows on a busy
  machine too (shared caches and cores), so both rates and CPU figures are worse than the same code on an idle one.` : ''}`;
}
