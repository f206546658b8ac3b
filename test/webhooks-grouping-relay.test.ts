// A change that joins an open grouping window writes nothing (sql/code/eventos.sql); the relay reads
// the group's latest data when it sends the event. These interleave a writer's transaction with the
// relay's, on two connections, to show that no change is ever left out of the event it joined.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { sql, type Tx } from '#shared/db/pool.ts';
import { relayOutbox } from '#shared/db/outbox.ts';
import { createAccount, type TestAccount } from './helpers/fixtures.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import { closeGroupingWindows, eventually } from './helpers/receiver.ts';

const test = suite('webhooks: a grouped event carries every change that joined its window');
let db: TestDatabase;
let account: TestAccount;
let localId: string;

const Id = z.object({ id: z.string() });
const Pending = z.object({ id: z.string(), relayed: z.boolean(), dados: z.any() });

test.before(async () => {
  db = await createTestDatabase();
  account = await createAccount(db.pool, { plano: 'farm' });
  localId = await db.pool.oneFirst(sql.type(Id)`SELECT id FROM locais WHERE conta_id = ${account.contaId} AND tipo = 'proprio'`);
});
test.after(() => db.close());

let produtos = 0;
async function variacao(): Promise<string> {
  produtos += 1;
  const p = await db.pool.oneFirst(sql.type(Id)`
    INSERT INTO produtos (conta_id, sku, nome) VALUES (${account.contaId}, ${`RELAY-${produtos}`}, 'Peça') RETURNING id`);
  return db.pool.oneFirst(sql.type(Id)`
    INSERT INTO variacoes (conta_id, produto_id, sku, nome) VALUES (${account.contaId}, ${p}, ${`RELAY-${produtos}-U`}, 'Única') RETURNING id`);
}

const entrada = (tx: Tx | TestDatabase['pool'], variacaoId: string, antes: number) => tx.oneFirst(sql.type(Id)`
  INSERT INTO estoque_movimentos (conta_id, local_id, variacao_id, tipo, quantidade, saldo_antes, saldo_depois, motivo)
  VALUES (${account.contaId}, ${localId}, ${variacaoId}, 'entrada', 1, ${antes}, ${antes + 1}, 'outro')
  RETURNING id`);

const eventos = (variacaoId: string) => db.pool.any(sql.type(Pending)`
  SELECT id, relayed_at IS NOT NULL AS relayed, dados FROM outbox
   WHERE conta_id = ${account.contaId} AND tipo = 'estoque.movimentado' AND dados ->> 'variacao_id' = ${variacaoId}
   ORDER BY seq`);

const relay = () => db.pool.transaction((tx) => relayOutbox(tx, 100));

test('a change still uncommitted keeps its group out of the relay; the event then carries it', async () => {
  const v = await variacao();
  await entrada(db.pool, v, 0);
  await closeGroupingWindows(db.pool);

  let commit!: () => void;
  const held = new Promise<void>((resolve) => { commit = resolve; });
  let joined!: (id: string) => void;
  const movimento = new Promise<string>((resolve) => { joined = resolve; });
  const writer = db.pool.transaction(async (tx) => {
    joined(await entrada(tx, v, 1));
    await held;
  });
  const segundo = await movimento;

  await relay();
  const [esperando] = await eventos(v);
  assert.ok(esperando && !esperando.relayed, 'the relay leaves the group while a writer that joined it is uncommitted');

  commit();
  await writer;
  await relay();
  const depois = await eventos(v);
  assert.is(depois.length, 1, 'the change joined the open window: no second event');
  assert.ok(depois[0]?.relayed);
  assert.is(depois[0]?.dados.movimento_id, segundo, 'the event carries the change that joined it');
});

test('a change that arrives while the relay sends its group opens the next window', async () => {
  const v = await variacao();
  await entrada(db.pool, v, 0);
  await closeGroupingWindows(db.pool);

  let commit!: () => void;
  const held = new Promise<void>((resolve) => { commit = resolve; });
  let relayed!: () => void;
  const sent = new Promise<void>((resolve) => { relayed = resolve; });
  const relaying = db.pool.transaction(async (tx) => {
    await relayOutbox(tx, 100);
    relayed();
    await held;
  });
  await sent;

  // The writer waits for the relay's commit: it must not count on the window the relay is closing.
  const writing = entrada(db.pool, v, 1);
  await eventually(
    () => db.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`),
    (n) => n === 1);
  commit();
  await relaying;
  const terceiro = await writing;

  const depois = await eventos(v);
  assert.is(depois.length, 2, 'the late change opened a new window');
  assert.ok(depois[0]?.relayed && !depois[1]?.relayed);
  await closeGroupingWindows(db.pool);
  await relay();
  const [, segundo] = await eventos(v);
  assert.is(segundo?.dados.movimento_id, terceiro, 'and went out in the next event');
});

test.run();
