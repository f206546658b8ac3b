// The webhook pipeline's archive against a reference model (sql/code/archive.sql): random sequences
// of events emitted (with deliveries to two endpoints, or none), attempts, deliveries ending,
// archive passes and redeliveries. The model knows only what each event's deliveries are and how
// many attempts each made; after every step the history views (eventos, all_deliveries,
// all_delivery_attempts) must say exactly that, each event and delivery once, wherever the rows
// live, and every attempt where its delivery is; after an archive pass nothing that has ended is left in the working tables, and nothing
// pending ever leaves them. Each sequence runs in one transaction, rolled back. A failure prints
// its seed, path and shrunk sequence; FUZZ_SEED, FUZZ_PATH and MODEL_RUNS replay or lengthen it.
import fc from 'fast-check';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { archiveEnded, FROM_THE_START } from '#shared/db/archive.ts';
import { replayEvent } from '#shared/db/outbox.ts';
import { sql, type Tx } from '#shared/db/pool.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import { createAccount, type TestAccount } from './helpers/fixtures.ts';
import { plantDeliveries, plantEndpoint, plantEvents } from './helpers/planted.ts';
import { seededRuns } from './helpers/seeded.ts';

const test = suite('webhook archive: against a reference model');
const RUNS = seededRuns('MODEL_RUNS', 60);

let db: TestDatabase;
let conta: TestAccount;
let endpoints: readonly [string, string];
test.before(async () => {
  db = await createTestDatabase();
  conta = await createAccount(db.pool);
  endpoints = [await plantEndpoint(db.pool, conta, 'https://erp.example.com/a'), await plantEndpoint(db.pool, conta, 'https://erp.example.com/b')];
});
test.after(async () => db.close());

type Status = 'pending' | 'succeeded' | 'failed';
type Entrega = { status: Status; attempts: number };
/** Per event (in emission order), its deliveries by endpoint (0 or 1). */
type Model = { events: Map<number, Entrega>[] };
type Real = { tx: Tx; ids: string[] };
const reached = new Set<string>();

const Row = z.object({ event: z.string(), endpoint: z.string().nullable(), status: z.string().nullable(), attempts: z.number().nullable(), logged: z.number() });

/** The views say what the model says: each event once, each of its deliveries once, with its status, attempts and attempt rows. */
async function agree(model: Model, real: Real): Promise<void> {
  const rows = await real.tx.any(sql.type(Row)`
    SELECT e.id AS event, d.endpoint_id AS endpoint, d.status, d.attempts,
           (SELECT count(*)::int FROM all_delivery_attempts t WHERE t.conta_id = d.conta_id AND t.delivery_id = d.id) AS logged
      FROM eventos e LEFT JOIN all_deliveries d ON d.conta_id = e.conta_id AND d.event_id = e.id
     WHERE e.conta_id = ${conta.contaId}`);
  const seen = rows.map((r) => `${real.ids.indexOf(r.event)} ${r.endpoint === null ? '-' : endpoints.indexOf(r.endpoint)} ${r.status ?? '-'} ${r.attempts ?? '-'} ${r.endpoint === null ? '-' : r.logged}`).sort();
  const expected = model.events.flatMap((deliveries, i) => deliveries.size === 0 ? [`${i} - - - -`]
    : [...deliveries].map(([ep, d]) => `${i} ${ep} ${d.status} ${d.attempts} ${d.attempts}`)).sort();
  assert.equal(seen, expected);
  // An attempt lives where its delivery lives.
  const apart = await real.tx.oneFirst(sql.type(z.object({ n: z.number() }))`
    SELECT (SELECT count(*) FROM delivery_attempts_archive a WHERE a.conta_id = ${conta.contaId}
               AND EXISTS (SELECT FROM deliveries d WHERE d.conta_id = a.conta_id AND d.id = a.delivery_id))::int
         + (SELECT count(*) FROM delivery_attempts a WHERE a.conta_id = ${conta.contaId}
               AND EXISTS (SELECT FROM deliveries_archive d WHERE d.conta_id = a.conta_id AND d.id = a.delivery_id))::int AS n`);
  assert.is(apart, 0, 'attempts apart from their delivery');
}

class Emit implements fc.AsyncCommand<Model, Real> {
  readonly deliveries: boolean;
  constructor(deliveries: boolean) {
    this.deliveries = deliveries;
  }
  check = () => true;
  async run(model: Model, real: Real) {
    const [id] = await plantEvents(real.tx, conta.contaId, { relayedAgo: '10 minutes' });
    real.ids.push(id ?? '');
    const entregas = new Map<number, Entrega>();
    if (this.deliveries) {
      for (const [i, endpointId] of endpoints.entries()) {
        await plantDeliveries(real.tx, { contaId: conta.contaId, endpointId, eventIds: [id ?? ''], status: 'pending', nextAttemptAt: '1 hour' });
        entregas.set(i, { status: 'pending', attempts: 0 });
      }
    }
    model.events.push(entregas);
    await agree(model, real);
  }
  toString = () => `emit(${this.deliveries ? 'two deliveries' : 'none'})`;
}

/** A pending delivery of event `event % n`, endpoint `endpoint`: an attempt, or its end. */
class Step implements fc.AsyncCommand<Model, Real> {
  readonly event: number;
  readonly endpoint: number;
  readonly kind: 'attempt' | 'succeeded' | 'failed';
  constructor(event: number, endpoint: number, kind: 'attempt' | 'succeeded' | 'failed') {
    this.event = event;
    this.endpoint = endpoint;
    this.kind = kind;
  }
  check = (model: Readonly<Model>) => model.events[this.event % Math.max(1, model.events.length)]?.get(this.endpoint)?.status === 'pending';
  async run(model: Model, real: Real) {
    const i = this.event % model.events.length;
    const d = model.events[i]?.get(this.endpoint);
    if (!d) throw new Error('no delivery');
    const key = sql.fragment`conta_id = ${conta.contaId} AND event_id = ${real.ids[i] ?? ''} AND endpoint_id = ${endpoints[this.endpoint] ?? ''}`;
    if (this.kind === 'attempt') {
      // Only the working table holds what is pending: the update must find it there.
      const updated = await real.tx.query(sql.typeAlias('void')`
        WITH d AS (UPDATE deliveries SET attempts = attempts + 1, run_attempts = run_attempts + 1 WHERE ${key} AND status = 'pending'
                   RETURNING conta_id, id, attempts)
        INSERT INTO delivery_attempts (conta_id, delivery_id, attempt, started_at, duration_ms, succeeded, response_status)
        SELECT conta_id, id, attempts, now() - interval '2 minutes', 5, false, 500 FROM d`);
      assert.is(updated.rowCount, 1, 'a pending delivery is in the working table');
      d.attempts += 1;
    } else {
      const updated = await real.tx.query(sql.typeAlias('void')`
        UPDATE deliveries SET status = ${this.kind}, completed_at = now() - interval '1 minute' WHERE ${key} AND status = 'pending'`);
      assert.is(updated.rowCount, 1, 'a pending delivery is in the working table');
      d.status = this.kind;
    }
    await agree(model, real);
  }
  toString = () => `${this.kind}(event ${this.event}, endpoint ${this.endpoint})`;
}

const Leftover = z.object({ ended: z.number(), idle: z.number(), orphans: z.number() });

class Archive implements fc.AsyncCommand<Model, Real> {
  check = () => true;
  async run(model: Model, real: Real) {
    const pass = await archiveEnded(real.tx, FROM_THE_START, { afterSeconds: 0, batch: 2 });
    if (pass.deliveries > 0) reached.add('deliveries archived');
    if (pass.events > 0) reached.add('events archived');
    const left = await real.tx.one(sql.type(Leftover)`
      SELECT (SELECT count(*)::int FROM deliveries WHERE conta_id = ${conta.contaId} AND status <> 'pending') AS ended,
             (SELECT count(*)::int FROM outbox o WHERE o.conta_id = ${conta.contaId}
                 AND NOT EXISTS (SELECT FROM deliveries d WHERE d.conta_id = o.conta_id AND d.event_id = o.id)) AS idle,
             (SELECT count(*)::int FROM outbox_archive a WHERE a.conta_id = ${conta.contaId}
                 AND EXISTS (SELECT FROM deliveries d WHERE d.conta_id = a.conta_id AND d.event_id = a.id)) AS orphans`);
    assert.equal(left, { ended: 0, idle: 0, orphans: 0 }, 'nothing ended left behind, nothing pending archived');
    await agree(model, real);
  }
  toString = () => 'archive';
}

class Replay implements fc.AsyncCommand<Model, Real> {
  readonly event: number;
  constructor(event: number) {
    this.event = event;
  }
  check = (model: Readonly<Model>) => model.events.length > 0;
  async run(model: Model, real: Real) {
    const i = this.event % model.events.length;
    const id = real.ids[i] ?? '';
    const archived = await real.tx.exists(sql.type(z.object({}))`SELECT FROM outbox_archive WHERE id = ${id}`);
    if (archived) reached.add('archived event replayed');
    const attempts = await real.tx.exists(sql.type(z.object({}))`
      SELECT FROM delivery_attempts_archive a JOIN deliveries_archive d ON d.conta_id = a.conta_id AND d.id = a.delivery_id WHERE d.event_id = ${id}`);
    if (attempts) reached.add('archived attempts brought back');
    await replayEvent(real.tx, conta.contaId, id);
    const deliveries = model.events[i] ?? new Map<number, Entrega>();
    for (const ep of endpoints.keys()) {
      const d = deliveries.get(ep);
      if (d) d.status = 'pending';
      else deliveries.set(ep, { status: 'pending', attempts: 0 });
    }
    await agree(model, real);
  }
  toString = () => `replay(event ${this.event})`;
}

class Rollback extends Error {}

const kind = fc.constantFrom('attempt', 'attempt', 'succeeded', 'failed') as fc.Arbitrary<'attempt' | 'succeeded' | 'failed'>;
const step = fc.tuple(fc.nat(3), fc.integer({ min: 0, max: 1 }), kind).map(([e, ep, k]) => new Step(e, ep, k));
// Few events and many steps, so that deliveries with attempts end, are archived and come back.
const commands = fc.commands([
  fc.boolean().map((b) => new Emit(b)),
  step,
  step,
  fc.constant(new Archive()),
  fc.nat(3).map((e) => new Replay(e)),
], { maxCommands: 40, size: 'max' });

test('the history views say what the model says after every step, and archive passes leave only work in progress', async () => {
  await fc.assert(fc.asyncProperty(commands, async (cmds) => {
    await db.pool.transaction(async (tx) => {
      await fc.asyncModelRun(() => ({ model: { events: [] }, real: { tx, ids: [] } }), cmds);
      throw new Rollback();
    }).catch((error: unknown) => {
      if (!(error instanceof Rollback)) throw error;
    });
  }), RUNS.parameters);
});

// A short replay (FUZZ_SEED, or MODEL_RUNS below the default) need not reach every case.
const coverage = RUNS.full ? test : test.skip;
coverage('the sequences reached every case: deliveries and events archived, an archived event replayed, archived attempts brought back', () => {
  assert.equal(['deliveries archived', 'events archived', 'archived event replayed', 'archived attempts brought back'].filter((r) => !reached.has(r)), [], [...reached].join(', '));
});

test.run();
