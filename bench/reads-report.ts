// The reads section of BENCHMARKS.md (bench/reads.bench.ts): every row's runs as their median and
// min–max, the ratios of each round to its baselines of the same round, and the goals beside them.
import type { load, LoadResult } from './lib.ts';
import { fmt, median, spread } from './spread.ts';

/** A row of the table: `server` is its server's label in the CPU report, `redis` whether it talks to Redis. */
export type RowSpec = {
  key: string;
  name: string;
  server: string;
  redis: boolean;
  options: Parameters<typeof load>[0] | null;
  skipped?: string;
};
export type Measured = Omit<RowSpec, 'options'> & { runs: LoadResult[] };

type Conditions = {
  accounts: number; orders: number; connections: number; seconds: number; extraSeconds: number; rounds: number;
  webFlags: string[]; database: string; redis: string; service: string; bare: string;
};

const cpuOf = (r: LoadResult, label: string) => r.cpu[label] ?? 0;
const pgOf = (r: LoadResult) => cpuOf(r, 'PostgreSQL');
const of = (row: Measured, pick: (r: LoadResult) => number) => row.runs.map(pick);

function tableRow(row: Measured): string {
  if (row.runs.length === 0) return `| ${row.name} | skipped: ${row.skipped ?? 'did not run'} | | | | | | | | |`;
  const answers = row.runs.map((r) => Object.entries(r.statuses).map(([code, n]) => `${code}: ${n}`).join(', ')).join('; ');
  const errors = row.runs.reduce((sum, r) => sum + r.errors, 0);
  return `| ${row.name} | ${spread(of(row, (r) => r.rps))} | ${spread(of(row, (r) => r.p50))} | ${spread(of(row, (r) => r.p99))} | `
    + `${spread(of(row, pgOf))} | ${spread(of(row, (r) => cpuOf(r, row.server)))} | ${row.redis ? spread(of(row, (r) => cpuOf(r, 'Redis'))) : '–'} | `
    + `${row.runs[0]?.written ? spread(of(row, (r) => r.written?.walBytes ?? 0)) : ''} | ${row.runs[0]?.written ? spread(of(row, (r) => r.written?.rows ?? 0), 1) : ''} | `
    + `${answers}${errors ? `; errors: ${errors}` : ''} | ${Math.max(...of(row, (r) => Math.round(r.othersCpu * 100)))} |`;
}

/** Each round's figure of a over b (same round), as "median (min–max)" and the rounds in order. */
function ratio(
  a: Measured | undefined, b: Measured | undefined, pick: (r: LoadResult) => number, goal: string, pickB: (r: LoadResult) => number = pick,
): string {
  if (!a?.runs.length || !b?.runs.length) return `not measured (${b?.skipped ?? 'a row did not run'}); goal ${goal}`;
  const pairs = a.runs.map((r, i) => [pick(r), pickB(b.runs[i] ?? r)] as const);
  const ratios = pairs.map(([x, y]) => x / Math.max(1, y));
  const status = goalMet(ratios, goal);
  return `**${spread(ratios, 2)}**; the rounds in order: ${pairs.map(([x, y]) => `${fmt(x)}/${fmt(y)}`).join(', ')}; goal ${goal}${status}`;
}

/** " (met in every round)", " (missed in every round)" or " (met in k of n rounds)", for goals written "≥ x" or "≤ x". */
function goalMet(ratios: number[], goal: string): string {
  const match = /^([≥≤]) ([\d.]+)/.exec(goal);
  if (!match) return '';
  const bound = Number(match[2]);
  const met = ratios.filter((x) => (match[1] === '≥' ? x >= bound : x <= bound)).length;
  if (met === ratios.length) return ' (met in every round)';
  if (met === 0) return ' (missed in every round)';
  return ` (met in ${met} of ${ratios.length} rounds)`;
}

export function readsSection(rows: Measured[], c: Conditions): string {
  const row = (key: string) => rows.find((r) => r.key === key);
  const [ok, notModified, saude, a, a2, b] = ['ok', 'notModified', 'saude', 'A', 'A2', 'B'].map(row);
  const server = (label: string) => (r: LoadResult) => cpuOf(r, label);
  const rps = (r: LoadResult) => r.rps;
  return `## One-record reads (GET /v1/pedidos-producao/{id}, 200 and 304)

${c.accounts} accounts with one key each and ${c.orders / c.accounts} orders of 3 items each; the requests rotate over all
${c.orders} orders and their keys, consecutive requests to different accounts; ${c.connections} connections; plans raised so
nothing is refused. autocannon in this process; the API (DB_POOL_SIZE 10) and each baseline in a process of its own,
all with the web role's flags (\`${c.webFlags.join(' ')}\`); PostgreSQL ${c.database}, Redis ${c.redis}.
${c.seconds} s per run after 2 s of warm-up; the six main rows ran ${c.rounds} times, one after the other in turn, and each
cell shows the median of its runs and their spread (min–max); the extra rows once, ${c.extraSeconds} s.

The baselines are what a competent team would ship instead: bare restify servers (bench/reads-bare-server.ts) that per
request consume one point of rate-limiter-flexible keyed by the Authorization header, then run the service's SELECT of
an order (its representation with its items, as PostgreSQL builds it for the service: pedido_representacao) prepared
once per connection (pg with a statement name; postgres.js, which prepares by default) and send its JSON as it came: no
authentication, validation, ETag or request log. CPU is per request over the measured run
(from /proc); WAL and rows written are per request in the bench's database; the last column is the largest share of the
machine's CPU that went to processes outside the benchmark during any of the row's runs.

| run | req/s | p50 ms | p99 ms | PostgreSQL CPU µs/req | server CPU µs/req | Redis CPU µs/req | WAL B/req | rows written/req | answers | others' CPU % |
| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |
${rows.map(tableRow).join('\n')}

- Service 200 / baseline A (Redis, pg prepared): ${ratio(ok, a, rps, '≥ 0.8')}.
- Service 200 / baseline A′ (Redis, postgres.js): ${ratio(ok, a2, rps, '≥ 0.8')}.
- Service 200 / baseline B (rate-limiter-flexible's Postgres store, pg prepared): ${ratio(ok, b, rps, '≥ 1')}.
- Web CPU per GET, service 200 / baseline A's server: ${ratio(ok, a, server(c.service), '≤ 1.3', server(c.bare))}.
- 304 / 200: ${ratio(notModified, ok, rps, '≥ 1.5')}.
- Admission alone (GET /v1/saude): PostgreSQL ${saude?.runs.length ? spread(of(saude, pgOf)) : '–'} µs and WAL
  ${saude?.runs[0]?.written ? spread(of(saude, (r) => r.written?.walBytes ?? 0)) : '–'} B a request, the request log's row
  and the slot's release included (goal for admission itself: ≤ 60 µs and ≤ 300 B; the section "Admission" measures
  api_admit alone, and "Where PostgreSQL's time goes" splits a request by statement).
${gap(ok, a, c)}`;
}

/** Where the service's 200 spends more than baseline A, by process, from the medians of their runs. */
function gap(ok: Measured | undefined, a: Measured | undefined, c: Conditions): string {
  if (!ok?.runs.length || !a?.runs.length) return '';
  const m = (row: Measured, pick: (r: LoadResult) => number) => median(of(row, pick));
  const pgMore = m(ok, pgOf) - m(a, pgOf);
  const webMore = m(ok, (r) => cpuOf(r, c.service)) - m(a, (r) => cpuOf(r, c.bare));
  const redis = m(a, (r) => cpuOf(r, 'Redis'));
  const machine = (row: Measured, server: string) => m(row, pgOf) + m(row, (r) => cpuOf(r, server)) + m(row, (r) => cpuOf(r, 'Redis'))
    + m(row, (r) => cpuOf(r, 'load generator (autocannon)'));
  return `- What the gap to baseline A is made of (medians): PostgreSQL ${fmt(pgMore)} µs a request more than the baseline's
  (admission, which the baseline does not do, and the request log's row; the order's own read is the same statement in
  both), the web process ${fmt(webMore)} µs more, while the baseline's Redis spends ${fmt(redis)} µs. All processes share
  the machine's cores: the service's 200 used ${fmt(machine(ok, c.service))} µs of CPU a request in all, the baseline
  ${fmt(machine(a, c.bare))} µs. The service's rate is also bound by waiting: its requests queue for the admission batch in flight (one
  at a time per process: a second one in flight is smaller and costs more per request; docs/decisions/0041-admission-decided-by-one-function.md), which the p50 column shows.`;
}
