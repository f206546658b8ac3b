// Admission against a reference model (test/helpers/admission-model.ts): random sequences of
// requests of every cost and class, from three keys of two accounts and an unknown one, alone or
// beside an unknown key's request, and in batches that mix accounts (sql/code/admission.sql,
// api_admit), with slots given back, repetitions known before charging (a completed
// Idempotency-Key, an ETag of the current version) and found only after (settled as the web
// process settles them), and time moved; every answer and, after every step, each account's month and e-mails are
// compared with the model. Each sequence runs in one transaction (the database's clock stands
// still) and time is moved by moving the stored timestamps. A failure prints its seed, path and
// shrunk sequence; FUZZ_SEED, FUZZ_PATH and MODEL_RUNS replay or lengthen it.
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { chargeOf } from '../api/admission/admission-queue.ts';
import { AdmissionRow } from '../api/admission/admission-row.ts';
import { settlementFor } from '../api/admission/limits.ts';
import { sql, type Tx } from '#shared/db/pool.ts';
import { AdmissionModel, type Answer, type Classe, type Holder, type Plan, type Request } from './helpers/admission-model.ts';
import type { Prova } from '../api/admission/admission-row.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import { admitBatch, type BatchItem } from './helpers/limits.ts';
import { addKey, createAccount, createPlan } from './helpers/fixtures.ts';
import { seededRuns } from './helpers/seeded.ts';

const test = suite('limits: admission against a reference model');
const RUNS = seededRuns('MODEL_RUNS', 100);

// Small ceilings, so that a sequence of a few dozen steps reaches each of them; a month of 4,000
// calls charges monthly_usage in blocks of 4, and each sequence starts near its ceiling.
const PLAN: Plan = { rajada: 4, recarga: 1, leituras: 8, escritas: 4, mes: 4000, porChave: 2, porConta: 3 };
const PLANO = 'modelo';
const KEYS = ['a1', 'a2', 'b1'] as const;
const ACCOUNT_OF: Record<(typeof KEYS)[number], 'A' | 'B'> = { a1: 'A', a2: 'A', b1: 'B' };
/** The serving processes: one alive, one that crashed holding its slots. */
type Process = Exclude<Holder, 'none'>;
const HOLDERS: Record<Process, string> = { live: 'modelo-vivo', dead: 'modelo-morto' };

let db: TestDatabase;
test.before(async () => {
  db = await createTestDatabase();
  await createPlan(db.pool, PLANO, {
    rajada: PLAN.rajada, rajada_recarga_por_segundo: PLAN.recarga, leituras_por_minuto: PLAN.leituras,
    escritas_por_minuto: PLAN.escritas, chamadas_por_mes: PLAN.mes, simultaneas_por_chave: PLAN.porChave,
    simultaneas_por_conta: PLAN.porConta,
  });
});
test.after(async () => db.close());

/** The database side of a sequence: its transaction, keys and accounts, and the slots to give back. */
type Real = {
  tx: Tx;
  tokens: Record<string, string>;
  chaves: Record<string, string>;
  contas: Record<'A' | 'B', string>;
  /** Each account's product, whose version conditional GETs name. */
  produtos: Record<'A' | 'B', string>;
  nowMs: number;
  finished: { contaId: string; chaveId: string }[];
};

const Row = AdmissionRow.extend({ outcome: z.string() }).partial().required({ outcome: true });

function answerOf(row: z.infer<typeof Row>, nowMs: number): Answer {
  if (row.outcome === 'nao_autenticado') return { outcome: row.outcome };
  const suspended_for = row.suspended_until ? Math.round((Date.parse(row.suspended_until) - nowMs) / 1000) : null;
  const answer: Answer = { outcome: row.outcome, reason: row.reason ?? null, retry_after: row.retry_after ?? null, suspended_for };
  if (row.rajada_r !== undefined && row.rajada_r !== null) {
    Object.assign(answer, {
      slot_held: row.slot_held ?? false, repeticao: row.repeticao ?? false,
      rajada_r: row.rajada_r, rajada_t: row.rajada_t, minuto_r: row.minuto_r, mes_r: row.mes_r,
    });
  }
  return answer;
}

type Sent = Request & { prova?: Prova | null };

/**
 * One call of admission as a web process makes it: its requests, and the slots it gives back. A
 * single request goes alone ('one') or after an unknown key's request ('many').
 */
async function callAdmission(real: Real, requests: Sent[], holder: Process, path: 'one' | 'many', semVaga = false): Promise<z.infer<typeof Row>[]> {
  const releases = holder === 'live' && !semVaga ? real.finished.splice(0) : [];
  const unknown = () => `chv_desconhecida_${randomBytes(8).toString('hex')}`;
  const items: BatchItem[] = requests.map((r) => ({
    token: r.key === null ? unknown() : real.tokens[r.key] ?? '',
    escopo: r.escopoAusente ? 'escopo:ausente' : 'catalogo:ler', custo: r.custo, custoMes: r.custoMes ?? null, classe: r.classe,
    prova: r.prova ?? null,
  }));
  const padded = path === 'many' && items.length === 1;
  const rows = await admitBatch(real.tx, padded ? [{ token: unknown() }, ...items] : items,
    { holder: HOLDERS[holder], release: releases, semVaga });
  return (padded ? rows.slice(1) : rows).map((row) => Row.parse(row));
}

/** After every step: each account's calls this month, and the e-mails its suspensions sent. */
async function checkAccounts(model: AdmissionModel, real: Real, step: string): Promise<void> {
  for (const [name, contaId] of Object.entries(real.contas)) {
    const { month, emails } = await real.tx.one(sql.type(z.object({ month: z.number(), emails: z.number() }))`
      SELECT coalesce((SELECT calls FROM effective_monthly_usage
                        WHERE conta_id = ${contaId} AND month = date_trunc('month', now() AT TIME ZONE 'UTC')::date), 0)::int AS month,
             (SELECT count(*)::int FROM outgoing_emails WHERE conta_id = ${contaId} AND kind = 'chave_suspensa') AS emails`);
    const expected = { month: model.monthOf(name), emails: model.emailsOf(name) };
    assert.equal({ month, emails }, expected, `account ${name} after ${step}: the model says ${JSON.stringify(expected)}, the database ${JSON.stringify({ month, emails })}`);
  }
}

type Cmd = fc.AsyncCommand<AdmissionModel, Real>;

const request = fc.record({
  key: fc.oneof({ weight: 12, arbitrary: fc.constantFrom(...KEYS) }, { weight: 1, arbitrary: fc.constant(null) }),
  custo: fc.constantFrom(1, 1, 1, 2, 3, 5),
  // The month's units when not the same: free there (GET /conta), or a batch's every movement.
  custoMes: fc.constantFrom<number | null>(null, null, null, null, 0, 12),
  classe: fc.constantFrom<Classe>('leitura', 'leitura', 'escrita'),
  escopoAusente: fc.nat(9).map((n) => n === 0),
});

const describe = (r: Request) =>
  `${r.key ?? '?'}:${r.custo}${r.classe === 'escrita' ? 'e' : 'l'}${r.custoMes == null ? '' : `/m${r.custoMes}`}${r.escopoAusente ? '!' : ''}`;

/** One request; the live process's usually ends at once (its slot is given back with the next call). */
class Admit implements Cmd {
  readonly req: Request;
  readonly holder: Process;
  readonly path: 'one' | 'many';
  readonly ends: boolean;
  constructor(req: Request, holder: Process, path: 'one' | 'many', ends: boolean) {
    this.req = req; this.holder = holder; this.path = path; this.ends = ends;
  }
  check = () => true;
  async run(model: AdmissionModel, real: Real) {
    if (this.holder === 'live') model.giveBack();
    const expected = model.admit(this.req, this.holder);
    const [row] = await callAdmission(real, [this.req], this.holder, this.path);
    compare([row], [expected], this.toString(), real, model);
    if (this.ends && row?.slot_held && this.holder === 'live' && this.req.key) {
      endRequest(model, real, this.req.key);
    }
    await checkAccounts(model, real, this.toString());
  }
  toString = () => `admit(${describe(this.req)}, ${this.holder}, ${this.path}${this.ends ? ', ends' : ''})`;
}

/** A client that ignores Retry-After: the same request again and again, each ending at once. */
class Hammer implements Cmd {
  readonly req: Request;
  readonly times: number;
  constructor(req: Request, times: number) { this.req = req; this.times = times; }
  check = () => true;
  async run(model: AdmissionModel, real: Real) {
    // Every other time in a batch behind a request of another key, as a loaded process would send it
    // (a key suspended there is not the batch's first).
    const other: Request = { key: KEYS.find((k) => k !== this.req.key) ?? null, custo: 1, classe: 'leitura', escopoAusente: false };
    for (let i = 0; i < this.times; i++) {
      await (i % 2 ? new Batch([other, this.req], 'live', true) : new Admit(this.req, 'live', 'one', true)).run(model, real);
    }
  }
  toString = () => `hammer(${describe(this.req)} × ${this.times})`;
}

/** Which rules the sequences reached: the last test checks that each was. */
const reached = new Set<string>();

function compare(rows: (z.infer<typeof Row> | undefined)[], expected: Answer[], step: string, real: Real, model: AdmissionModel): void {
  const answers = rows.map((r) => answerOf(r ?? { outcome: 'none' }, real.nowMs));
  assert.equal(answers, expected, `${step}: the model says ${JSON.stringify(expected)}, the database ${JSON.stringify(answers)}`);
  for (const a of answers) reached.add(a.reason ?? a.outcome);
  if (answers.some((a) => a.suspended_for === 900)) reached.add('suspensão');
  if (model.suspensions > Object.keys(real.contas).reduce((n, c) => n + model.emailsOf(c), 0)) reached.add('suspensão sem e-mail');
  if (answers.some((a) => a.repeticao && a.outcome === 'ok')) reached.add('repetição');
  if (answers.some((a) => a.repeticao && a.outcome === 'ok' && a.mes_r === 0)) reached.add('repetição no teto do mês');
}

/** An admitted request of the live process ends: its slot goes back with the process's next call. */
function endRequest(model: AdmissionModel, real: Real, key: string): void {
  model.finish(key);
  real.finished.push(slotOf(real, key));
}

// An admitted request of the live process stays in flight until a Finish step ends it.
const slotOf = (real: Real, key: string) => ({ contaId: real.contas[ACCOUNT_OF[key as (typeof KEYS)[number]]], chaveId: real.chaves[key] ?? '' });

/** Several requests in one call, as a loaded process sends them; the live process's may end at once. */
class Batch implements Cmd {
  readonly reqs: Request[];
  readonly holder: Process;
  readonly ends: boolean;
  constructor(reqs: Request[], holder: Process, ends = false) { this.reqs = reqs; this.holder = holder; this.ends = ends; }
  check = () => true;
  async run(model: AdmissionModel, real: Real) {
    if (this.holder === 'live') model.giveBack();
    const expected = this.reqs.map((r) => model.admit(r, this.holder));
    const rows = await callAdmission(real, this.reqs, this.holder, 'many');
    compare(rows, expected, this.toString(), real, model);
    if (rows.some((r) => r.suspended_until && r.outcome === 'limite_excedido') && new Set(this.reqs.map((r) => r.key)).size > 1) {
      reached.add('suspensão num lote de várias chaves');
    }
    if (this.ends && this.holder === 'live') {
      rows.forEach((row, i) => {
        const key = this.reqs[i]?.key;
        if (row.slot_held && key) endRequest(model, real, key);
      });
    }
    await checkAccounts(model, real, this.toString());
  }
  toString = () => `batch([${this.reqs.map(describe).join(', ')}], ${this.holder}${this.ends ? ', ends' : ''})`;
}

class Finish implements Cmd {
  readonly key: string;
  constructor(key: string) { this.key = key; }
  check = (model: Readonly<AdmissionModel>) => (model as AdmissionModel).canFinish(this.key);
  async run(model: AdmissionModel, real: Real) {
    endRequest(model, real, this.key);
  }
  toString = () => `finish(${this.key})`;
}

/** The live process gives its finished slots back on its own (its bookkeeper's flush). */
class Flush implements Cmd {
  check = () => true;
  async run(model: AdmissionModel, real: Real) {
    model.giveBack();
    const done = real.finished.splice(0);
    await real.tx.query(sql.typeAlias('void')`
      SELECT FROM api_release(${HOLDERS.live}, ${sql.array(done.map((d) => d.contaId), 'uuid')}, ${sql.array(done.map((d) => d.chaveId), 'uuid')})`);
  }
  toString = () => 'flush()';
}

/** A conditional GET whose ETag matched, or a repetition of a POST: admitted, then settled as the web process settles it. */
class Repetition implements Cmd {
  readonly req: Request;
  constructor(req: Request) { this.req = req; }
  check = () => true;
  async run(model: AdmissionModel, real: Real) {
    model.giveBack();
    const expected = model.admit(this.req, 'live');
    const [row] = await callAdmission(real, [this.req], 'live', 'one');
    compare([row], [expected], this.toString(), real, model);
    if (row?.outcome === 'ok' && this.req.key) {
      const admitted = AdmissionRow.parse(row);
      const settlement = settlementFor(chargeOf({ tokenHash: Buffer.alloc(0), escopo: null, permissao: null, custo: this.req.custo, custoMes: this.req.custoMes ?? null, classe: this.req.classe }, admitted), 'replay');
      if (settlement) {
        const s = settlement;
        await real.tx.query(sql.typeAlias('void')`
          SELECT FROM api_settle(ARRAY[${s.charge.chaveId}]::uuid[], ARRAY[${s.charge.contaId}]::uuid[], ARRAY[${s.charge.classe}],
                                 ARRAY[${s.charge.windowStart}]::timestamptz[], ARRAY[${s.charge.mes}]::date[], ARRAY[${s.burst}]::int[],
                                 ARRAY[${s.minute}]::int[], ARRAY[${s.month}]::int[], ARRAY[${s.readCharge}]::int[])`);
      }
      model.settleAsRepetition(this.req.key, this.req.custo, this.req.classe, this.req.custoMes ?? null);
      endRequest(model, real, this.req.key);
    }
    await checkAccounts(model, real, this.toString());
  }
  toString = () => `repetition(${describe(this.req)})`;
}

const ROTA = 'POST /cotacoes';
const IDEM_KEYS = ['k1', 'k2', 'k3'] as const;

/** A client that keeps hammering across suspensions: suspended, it waits them out and starts again. */
class Relentless implements Cmd {
  readonly req: Request;
  constructor(req: Request) { this.req = req; }
  check = () => true;
  async run(model: AdmissionModel, real: Real) {
    for (const step of [new Hammer(this.req, 40), new NextMinutes(15), new Hammer(this.req, 40)]) await step.run(model, real);
  }
  toString = () => `relentless(${describe(this.req)})`;
}

/**
 * A POST with an Idempotency-Key. Admission looks for the key's completed record on its path: found,
 * the request is charged as a repetition; not found and admitted, the write completes and leaves one.
 */
class Write implements Cmd {
  readonly req: Request;
  readonly idem: string;
  constructor(req: Request, idem: string) { this.req = req; this.idem = idem; }
  check = () => true;
  async run(model: AdmissionModel, real: Real) {
    model.giveBack();
    const key = this.req.key ?? '';
    const record = `${key}|${this.idem}|${ROTA}`;
    const expected = model.admit({ ...this.req, repeticao: model.records.has(record) }, 'live');
    const [row] = await callAdmission(real, [{ ...this.req, prova: { chave: this.idem, rota: ROTA } }], 'live', 'one');
    compare([row], [expected], this.toString(), real, model);
    if (row?.outcome === 'ok') {
      if (!row.repeticao) {
        await real.tx.query(sql.typeAlias('void')`
          INSERT INTO idempotency_keys (conta_id, chave_id, key, route, request_hash, status_code)
          VALUES (${row.conta_id ?? ''}, ${row.chave_id ?? ''}, ${this.idem}, ${ROTA}, sha256('corpo'), 201)`);
        model.records.add(record);
      }
      endRequest(model, real, key);
    }
    await checkAccounts(model, real, this.toString());
  }
  toString = () => `write(${describe(this.req)}, ${this.idem})`;
}

/** A GET with If-None-Match naming the current version of the account's product, an old one, or *. */
class Conditional implements Cmd {
  readonly key: (typeof KEYS)[number];
  readonly tag: 'current' | 'old' | 'any';
  constructor(key: (typeof KEYS)[number], tag: 'current' | 'old' | 'any') { this.key = key; this.tag = tag; }
  check = () => true;
  async run(model: AdmissionModel, real: Real) {
    model.giveBack();
    const produto = real.produtos[ACCOUNT_OF[this.key]];
    const version = model.versions.get(produto) ?? 1;
    const versoes = this.tag === 'any' ? [] : [this.tag === 'current' ? version : version - 1];
    const req: Request = { key: this.key, custo: 1, classe: 'leitura', escopoAusente: false };
    const expected = model.admit({ ...req, repeticao: this.tag !== 'old' }, 'live');
    const [row] = await callAdmission(real, [{ ...req, prova: { tabela: 'produtos', id: produto, versoes } }], 'live', 'many');
    compare([row], [expected], this.toString(), real, model);
    if (row?.outcome === 'ok') {
      endRequest(model, real, this.key);
    }
    await checkAccounts(model, real, this.toString());
  }
  toString = () => `conditional(${this.key}, ${this.tag})`;
}

/**
 * A poller's list GET with If-None-Match: admitted as a repetition while its page is unknown; when
 * the page changed, the rest of the list's price is charged (a top-up, taking no slot) or refused.
 */
class ListPoll implements Cmd {
  readonly key: (typeof KEYS)[number];
  readonly custo: number;
  readonly changed: boolean;
  constructor(key: (typeof KEYS)[number], custo: number, changed: boolean) { this.key = key; this.custo = custo; this.changed = changed; }
  check = () => true;
  async run(model: AdmissionModel, real: Real) {
    model.giveBack();
    const req: Request = { key: this.key, custo: this.custo, classe: 'leitura', escopoAusente: false };
    const expected = model.admit({ ...req, repeticao: true }, 'live');
    const [row] = await callAdmission(real, [{ ...req, prova: { provisoria: true } }], 'live', 'one');
    compare([row], [expected], this.toString(), real, model);
    if (row?.outcome !== 'ok') return checkAccounts(model, real, this.toString());
    if (this.changed) {
      const rest: Request = { ...req, custo: this.custo - 1, custoMes: this.custo };
      const topExpected = model.admit(rest, 'none');
      const topped = await callAdmission(real, [rest], 'live', 'one', true);
      compare(topped, [{ ...topExpected, slot_held: topExpected.outcome === 'ok' }], `${this.toString()} top-up`, real, model);
      if (topExpected.outcome === 'ok') reached.add('lista completada');
    }
    endRequest(model, real, this.key);
    await checkAccounts(model, real, this.toString());
  }
  toString = () => `listPoll(${this.key}, ${this.custo}, ${this.changed ? 'changed' : 'same'})`;
}

/** The account's product changes: its version moves on, and ETags of the old one stop matching. */
class Touch implements Cmd {
  readonly account: 'A' | 'B';
  constructor(account: 'A' | 'B') { this.account = account; }
  check = () => true;
  async run(model: AdmissionModel, real: Real) {
    const produto = real.produtos[this.account];
    model.versions.set(produto, (model.versions.get(produto) ?? 1) + 1);
    await real.tx.query(sql.typeAlias('void')`UPDATE produtos SET ativo = NOT ativo WHERE id = ${produto}`);
  }
  toString = () => `touch(${this.account})`;
}

/** Moves every stored timestamp back: buckets, the dead process's slots (the live one renews its own) and suspensions. */
async function shiftTimestamps(real: Real, seconds: number): Promise<void> {
  const contas = sql.array(Object.values(real.contas), 'uuid');
  await real.tx.query(sql.typeAlias('void')`
    UPDATE rate_buckets SET refreshed_at = refreshed_at - make_interval(secs => ${seconds}) WHERE conta_id = ANY (${contas})`);
  await real.tx.query(sql.typeAlias('void')`
    UPDATE request_slots SET expires_at = expires_at - make_interval(secs => ${seconds})
     WHERE conta_id = ANY (${contas}) AND holder = ${HOLDERS.dead}`);
  await real.tx.query(sql.typeAlias('void')`
    UPDATE suspensions SET started_at = started_at - make_interval(secs => ${seconds}), ends_at = ends_at - make_interval(secs => ${seconds})
     WHERE conta_id = ANY (${contas})`);
  await real.tx.query(sql.typeAlias('void')`
    UPDATE chaves_api SET suspensa_ate = suspensa_ate - make_interval(secs => ${seconds}),
                          ultimo_uso_em = ultimo_uso_em - make_interval(secs => ${seconds})
     WHERE conta_id = ANY (${contas})`);
}

class Tick implements Cmd {
  readonly seconds: number;
  constructor(seconds: number) { this.seconds = seconds; }
  check = () => true;
  async run(model: AdmissionModel, real: Real) {
    model.tick(this.seconds);
    await shiftTimestamps(real, this.seconds);
  }
  toString = () => `tick(${this.seconds}s)`;
}

class NextMinutes implements Cmd {
  readonly minutes: number;
  constructor(minutes: number) { this.minutes = minutes; }
  check = () => true;
  async run(model: AdmissionModel, real: Real) {
    model.nextMinutes(this.minutes);
    await shiftTimestamps(real, 60 * this.minutes);
    await real.tx.query(sql.typeAlias('void')`
      UPDATE minute_windows SET window_start = window_start - make_interval(mins => ${this.minutes})
       WHERE conta_id = ANY (${sql.array(Object.values(real.contas), 'uuid')})`);
  }
  toString = () => `nextMinutes(${this.minutes})`;
}

/** An operator sets the month's calls by hand: at the ceiling, or past it (a plan lowered mid-month). */
class HandSetMonth implements Cmd {
  readonly account: 'A' | 'B';
  readonly past: number;
  constructor(account: 'A' | 'B', past: number) { this.account = account; this.past = past; }
  check = () => true;
  async run(model: AdmissionModel, real: Real) {
    const calls = PLAN.mes + this.past;
    model.setMonth(this.account, calls);
    await real.tx.query(sql.typeAlias('void')`
      INSERT INTO monthly_usage (conta_id, month, calls) VALUES (${real.contas[this.account]}, date_trunc('month', now() AT TIME ZONE 'UTC')::date, ${calls})
      ON CONFLICT (conta_id, month) DO UPDATE SET calls = excluded.calls`);
    // The calls made, whatever was charged ahead (set to the value it had, the advance would still count).
    await real.tx.query(sql.typeAlias('void')`DELETE FROM month_advances WHERE conta_id = ${real.contas[this.account]}`);
    await checkAccounts(model, real, this.toString());
  }
  toString = () => `handSetMonth(${this.account}, ceiling + ${this.past})`;
}

/**
 * A client that paces itself to the burst's refill and so meets the minute's ceiling: one request a
 * second, one more than the minute allows. Random sequences alone reach that ceiling only now and then.
 */
class PacedToMinute implements Cmd {
  readonly key: (typeof KEYS)[number];
  readonly classe: Classe;
  constructor(key: (typeof KEYS)[number], classe: Classe) { this.key = key; this.classe = classe; }
  check = () => true;
  async run(model: AdmissionModel, real: Real) {
    const req: Request = { key: this.key, custo: 1, classe: this.classe, escopoAusente: false };
    const perMinute = this.classe === 'escrita' ? PLAN.escritas : PLAN.leituras;
    for (let i = 0; i <= perMinute; i++) {
      await new Tick(1).run(model, real);
      await new Admit(req, 'live', i % 2 ? 'many' : 'one', true).run(model, real);
    }
  }
  toString = () => `pacedToMinute(${this.key}, ${this.classe})`;
}

/** The month spent (by hand, to its ceiling or past it), and the account's poller asks again. */
class PollAtCeiling implements Cmd {
  readonly key: (typeof KEYS)[number];
  readonly past: number;
  constructor(key: (typeof KEYS)[number], past: number) { this.key = key; this.past = past; }
  check = () => true;
  async run(model: AdmissionModel, real: Real) {
    await new HandSetMonth(ACCOUNT_OF[this.key], this.past).run(model, real);
    await new Conditional(this.key, 'current').run(model, real);
  }
  toString = () => `pollAtCeiling(${this.key}, ceiling + ${this.past})`;
}

class NextMonth implements Cmd {
  check = () => true;
  async run(model: AdmissionModel, real: Real) {
    model.nextMonth();
    const contas = sql.array(Object.values(real.contas), 'uuid');
    for (const table of ['monthly_usage', 'month_advances']) {
      await real.tx.query(sql.typeAlias('void')`
        DELETE FROM ${sql.identifier([table])} WHERE conta_id = ANY (${contas}) AND month < date_trunc('month', now() AT TIME ZONE 'UTC')::date`);
      await real.tx.query(sql.typeAlias('void')`
        UPDATE ${sql.identifier([table])} SET month = (month - interval '1 month')::date WHERE conta_id = ANY (${contas})`);
    }
    await checkAccounts(model, real, this.toString());
  }
  toString = () => 'nextMonth()';
}

const commands = fc.commands([
  fc.tuple(request, fc.constantFrom<Process>('live', 'live', 'live', 'dead'), fc.constantFrom<'one' | 'many'>('one', 'many'), fc.nat(3))
    .map(([r, h, p, n]) => new Admit(r, h, p, n > 0)),
  fc.tuple(request, fc.constantFrom<Process>('live', 'live', 'live', 'dead'), fc.constantFrom<'one' | 'many'>('one', 'many'), fc.nat(3))
    .map(([r, h, p, n]) => new Admit(r, h, p, n > 0)),
  fc.tuple(request.filter((r) => r.key !== null), fc.integer({ min: 5, max: 25 })).map(([r, n]) => new Hammer(r, n)),
  request.filter((r) => r.key !== null && !r.escopoAusente).map((r) => new Relentless(r)),
  fc.tuple(fc.array(request, { minLength: 2, maxLength: 6 }), fc.constantFrom<Process>('live', 'live', 'dead')).map(([rs, h]) => new Batch(rs, h)),
  fc.constantFrom(...KEYS).map((k) => new Finish(k)),
  fc.constantFrom(...KEYS).map((k) => new Finish(k)),
  fc.constant(new Flush()),
  request.filter((r) => r.key !== null).map((r) => new Repetition(r)),
  fc.tuple(request.filter((r) => r.key !== null), fc.constantFrom(...IDEM_KEYS)).map(([r, k]) => new Write({ ...r, classe: 'escrita' }, k)),
  fc.tuple(fc.constantFrom(...KEYS), fc.constantFrom<'current' | 'old' | 'any'>('current', 'current', 'old', 'any')).map(([k, t]) => new Conditional(k, t)),
  fc.constantFrom<'A' | 'B'>('A', 'B').map((a) => new Touch(a)),
  fc.tuple(fc.constantFrom(...KEYS), fc.constantFrom(1, 3, 5), fc.boolean()).map(([k, c, changed]) => new ListPoll(k, c, changed)),
  fc.integer({ min: 1, max: 40 }).map((s) => new Tick(s)),
  fc.constantFrom(1, 1, 1, 15).map((m) => new NextMinutes(m)),
  fc.constant(new NextMonth()),
  fc.tuple(fc.constantFrom<'A' | 'B'>('A', 'B'), fc.constantFrom(0, 0, 3)).map(([a, p]) => new HandSetMonth(a, p)),
  fc.tuple(fc.constantFrom(...KEYS), fc.constantFrom(0, 3)).map(([k, p]) => new PollAtCeiling(k, p)),
  fc.tuple(fc.constantFrom(...KEYS), fc.constantFrom<Classe>('leitura', 'escrita')).map(([k, c]) => new PacedToMinute(k, c)),
], { maxCommands: 80 });

async function runSequence(cmds: Iterable<Cmd>, month: { A: number; B: number }): Promise<void> {
  class Rollback extends Error {}
  await db.pool.transaction(async (tx) => {
    const a = await createAccount(tx, { plano: PLANO });
    const a2 = await addKey(tx, a);
    const b = await createAccount(tx, { plano: PLANO });
    for (const [conta, used] of [[a.contaId, month.A], [b.contaId, month.B]] as const) {
      await tx.query(sql.typeAlias('void')`
        INSERT INTO monthly_usage (conta_id, month, calls) VALUES (${conta}, date_trunc('month', now() AT TIME ZONE 'UTC')::date, ${used})`);
    }
    const clock = await tx.one(sql.type(z.object({ now_ms: z.number(), minute_left: z.number(), month_left: z.number() }))`
      SELECT (extract(epoch FROM now()) * 1000)::float8 AS now_ms,
             ceil(extract(epoch FROM date_trunc('minute', now()) + interval '1 minute' - now()))::int AS minute_left,
             ceil(extract(epoch FROM admission_month_end(now()) - now()))::int AS month_left`);
    const model = new AdmissionModel(PLAN, clock.minute_left, clock.month_left);
    model.addAccount('A', month.A);
    model.addAccount('B', month.B);
    model.addKey('a1', 'A');
    model.addKey('a2', 'A');
    model.addKey('b1', 'B');
    const produto = (conta: string) => tx.oneFirst(sql.type(z.object({ id: z.string() }))`
      INSERT INTO produtos (conta_id, sku, nome) VALUES (${conta}, 'VASO', 'Vaso') RETURNING id`);
    const real: Real = {
      tx, nowMs: clock.now_ms, finished: [],
      produtos: { A: await produto(a.contaId), B: await produto(b.contaId) },
      tokens: { a1: a.token, a2: a2.token, b1: b.token },
      chaves: { a1: a.chaveId, a2: a2.chaveId, b1: b.chaveId },
      contas: { A: a.contaId, B: b.contaId },
    };
    await fc.asyncModelRun(() => ({ model, real }), cmds);
    throw new Rollback();
  }).catch((error: unknown) => {
    if (!(error instanceof Rollback)) throw error;
  });
}

// The concurrency ceiling needs slots held across steps, which random sequences reach in most runs
// but not all (CI's 100 once missed it): one fixed sequence reaches it every time, checked against the
// model like the others, so the coverage below does not rest on chance for it. It runs first: what it
// reaches is its own.
test('a key holding its slots in a process that died is refused at its concurrency ceiling', async () => {
  const held: Request = { key: 'a1', custo: 1, custoMes: null, classe: 'leitura', escopoAusente: false };
  const steps = Array.from({ length: PLAN.porChave + 1 }, () => new Admit(held, 'dead', 'one', false));
  await runSequence(steps, { A: 0, B: 0 });
  assert.ok(reached.has('simultaneas'));
});

test('every answer, month and e-mail as the model of §8 says, alone and in batches that mix accounts', async () => {
  const nearCeiling = fc.integer({ min: PLAN.mes - 40, max: PLAN.mes - 2 });
  await fc.assert(fc.asyncProperty(commands, nearCeiling, nearCeiling, (cmds, A, B) => runSequence(cmds, { A, B })), RUNS.parameters);
});

// A short replay (FUZZ_SEED, or MODEL_RUNS below the default) need not reach every rule.
const coverage = RUNS.full ? test : test.skip;
coverage('the sequences reached every rule: each ceiling, a suspension, a refusal before limits, an unknown key', () => {
  const rules = ['ok', 'simultaneas', 'rajada', 'minuto', 'mes', 'suspensão', 'suspensão sem e-mail', 'suspensão num lote de várias chaves',
    'chave_suspensa', 'escopo', 'nao_autenticado', 'repetição', 'repetição no teto do mês', 'lista completada'];
  assert.equal(rules.filter((r) => !reached.has(r)), [], `reached: ${[...reached].join(', ')}`);
});

test.run();
