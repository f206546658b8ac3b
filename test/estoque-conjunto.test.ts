// A batch of POST /estoque/movimentos moved as a set (api_estoque_movimentar_conjunto,
// sql/code/estoque_conjunto.sql) answers and writes exactly what the same batch moved one by one
// (api_estoque_movimentar_lote_em) would: random batches of entradas and saídas, by id or SKU, with
// parts, other accounts' variations, quantities under the minimum or off the multiple, balances too
// small, and Idempotency-Keys new, repeated in the batch, replayed, in conflict or held elsewhere.
// Each batch runs both ways on the same state, each in a transaction rolled back. A failure prints
// its seed and shrunk batch (FUZZ_SEED, FUZZ_PATH replay it).
import { createHash, randomUUID } from 'node:crypto';
import fc from 'fast-check';
import pg from 'pg';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { sql } from '../shared/db/pool.ts';
import { criarProdutoCompleto, definirSaldo } from './helpers/catalogo.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import { createAccount, type TestAccount } from './helpers/fixtures.ts';
import { seededRuns } from './helpers/seeded.ts';

const test = suite('a batch of movements moved as a set');
const RUNS = seededRuns('FUZZ_RUNS', 500);
const ROUTE = 'POST /estoque/movimentos';

let db: TestDatabase;
let client: pg.Client;
let holder: pg.Client;
let conta: TestAccount;
let outra: TestAccount;
/** Variations by role: plain, minimum 2, multiple 5, with a part, its part; SKUs of two of them. */
let v: { plain: string; min2: string; mult5: string; partida: string; parte: string; skuPlain: string; skuMin2: string; deOutra: string };

const hash = (s: string) => `\\x${createHash('sha256').update(s).digest('hex')}`;
/** Keys with a record (one replayed with the body it was made with, one with another) and one held by another session. */
const SEEDED = 'chave-gravada';
const SEEDED_OTHER = 'chave-gravada-2';
const HELD = 'chave-presa';

test.before(async () => {
  db = await createTestDatabase();
  conta = await createAccount(db.pool);
  outra = await createAccount(db.pool);
  const p = await criarProdutoCompleto(db.pool, conta.contaId, {
    variacoes: [{}, { quantidadeMinima: 2 }, { multiplo: 5 }, { partes: ['tampa'] }],
  });
  const [plain, min2, mult5, partida] = p.variacoes;
  const q = await criarProdutoCompleto(db.pool, outra.contaId);
  v = {
    plain: plain!.id, min2: min2!.id, mult5: mult5!.id, partida: partida!.id, parte: partida!.parteIds[0]!,
    skuPlain: plain!.sku, skuMin2: min2!.sku, deOutra: q.variacoes[0]!.id,
  };
  for (const id of [v.plain, v.min2, v.mult5, v.partida]) await definirSaldo(db.pool, conta.contaId, id, 6);
  await definirSaldo(db.pool, conta.contaId, v.partida, 6, v.parte);
  await definirSaldo(db.pool, outra.contaId, v.deOutra, 6);
  // The windows those balances opened, closed as the relay would: a batch's first movement of a
  // variation opens its estoque.movimentado window with its own data.
  await db.pool.query(sql.unsafe`UPDATE outbox SET relayed_at = now() WHERE relayed_at IS NULL`);
  client = new pg.Client({ connectionString: db.url });
  await client.connect();
  holder = new pg.Client({ connectionString: db.url });
  await holder.connect();
  // Keys whose records exist (each made by a movement of 1 of the plain variation's balance).
  for (const key of [SEEDED, SEEDED_OTHER]) await client.query(`SELECT api_estoque_movimentar_lote($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::text[]::bytea[],
      '{entrada}', $6::uuid[], '{NULL}', '{NULL}', '{1}', '{NULL}', '{devolucao}', '{NULL}', '{NULL}', '{NULL}')`,
    [[conta.contaId], [conta.chaveId], [key], [ROUTE], [hash('gravada')], [v.plain]]);
  await holder.query(`SELECT pg_advisory_lock(hashtextextended($1::text || $2::text || $3, 7410204))`, [conta.contaId, conta.chaveId, HELD]);
});
test.after(async () => {
  await holder.end();
  await client.end();
  await db.close();
});

type Movimento = {
  conta: 'propria' | 'outra';
  tipo: 'entrada' | 'saida';
  alvo: 'plain' | 'min2' | 'mult5' | 'partida' | 'parte' | 'parteErrada' | 'skuPlain' | 'skuMin2' | 'deOutra' | 'inexistente';
  quantidade: number;
  key: 'nenhuma' | 'nova' | 'repetida' | 'gravada' | 'conflito' | 'presa';
};

const movimento = fc.record<Movimento>({
  conta: fc.constantFrom('propria', 'propria', 'propria', 'outra'),
  tipo: fc.constantFrom('entrada', 'saida'),
  // An entrada of a part the variation does not have would open a balance: such a batch goes one by one.
  alvo: fc.constantFrom('plain', 'min2', 'mult5', 'partida', 'parte', 'skuPlain', 'skuMin2', 'deOutra', 'inexistente',
    'plain', 'min2', 'mult5', 'partida', 'parte', 'skuPlain', 'skuMin2', 'deOutra', 'inexistente', 'parteErrada'),
  quantidade: fc.oneof(fc.constantFrom(1, 2, 5, 6, 7), fc.integer({ min: 1, max: 12 })),
  key: fc.constantFrom('nenhuma', 'nova', 'nova', 'nova', 'repetida', 'gravada', 'conflito', 'presa'),
});

/** The function's fifteen arrays for a batch. */
function argumentos(batch: readonly Movimento[]) {
  const quem = (m: Movimento) => (m.conta === 'propria' ? conta : outra);
  const variacao = (m: Movimento) => ({
    plain: v.plain, min2: v.min2, mult5: v.mult5, partida: v.partida, parte: v.partida, parteErrada: v.plain, deOutra: v.deOutra,
    inexistente: randomUUID(), skuPlain: null, skuMin2: null,
  })[m.alvo];
  const key = (m: Movimento, i: number) => ({
    nenhuma: null, nova: `nova-${i}-${randomUUID()}`, repetida: 'repetida', gravada: SEEDED, conflito: SEEDED_OTHER, presa: HELD,
  })[m.key];
  const corpo = (m: Movimento, i: number) => (m.key === 'gravada' ? hash('gravada') : hash(`${i}:${JSON.stringify(m)}`));
  return [
    batch.map((m) => quem(m).contaId), batch.map((m) => quem(m).chaveId), batch.map(key), batch.map(() => ROUTE), batch.map(corpo),
    batch.map((m) => m.tipo), batch.map(variacao),
    batch.map((m) => (m.alvo === 'skuPlain' ? v.skuPlain : m.alvo === 'skuMin2' ? v.skuMin2 : null)),
    batch.map((m) => (m.alvo === 'parte' || m.alvo === 'parteErrada' ? v.parte : null)),
    batch.map((m) => m.quantidade), batch.map(() => null), batch.map((m) => (m.tipo === 'saida' ? 'venda_loja' : 'devolucao')),
    batch.map((m, i) => (i % 3 === 0 ? `obs ${i}` : null)), batch.map((m, i) => (i % 2 === 0 ? `REF-${i}` : null)),
    batch.map((m, i) => (i % 4 === 1 ? JSON.stringify({ pedido: String(i) }) : null)),
  ];
}

/**
 * Whether the set way takes a batch, said independently of it: every variation found (a SKU is the
 * own account's), each balance once, and no entrada that would open a balance (the own account's
 * plain variation has no balance of the part; the other account has a balance of its variation only).
 */
function movesAsSet(batch: readonly Movimento[]): boolean {
  const balances = batch.map((m, i) => {
    const variacao = { skuPlain: 'plain', skuMin2: 'min2', parte: 'partida', parteErrada: 'plain', inexistente: `inexistente-${i}` }[m.alvo as string] ?? m.alvo;
    return `${m.conta}:${variacao}:${m.alvo === 'parte' || m.alvo === 'parteErrada' ? 'parte' : ''}`;
  });
  const semVariacao = batch.some((m) => m.conta === 'outra' && (m.alvo === 'skuPlain' || m.alvo === 'skuMin2'));
  const abre = batch.some((m) => m.tipo === 'entrada' && m.conta === 'propria' && m.alvo === 'parteErrada');
  return !semVariacao && !abre && new Set(balances).size === batch.length;
}

const ARGS = `$1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::text[]::bytea[], $6::text[], $7::uuid[], $8::text[], $9::uuid[],
  $10::int[], $11::int[], $12::text[], $13::text[], $14::text[], $15::text[]::jsonb[]`;

/** What a batch leaves: balances, movements, the keys' records and the pending events (ids and times left out). */
const ESTADO = `SELECT
  (SELECT json_agg(json_build_object('v', variacao_id, 'p', parte_id, 's', saldo) ORDER BY variacao_id, parte_id NULLS FIRST)
     FROM estoque_saldos WHERE conta_id = ANY ($1::uuid[])) AS saldos,
  (SELECT json_agg(json_build_object('c', conta_id, 'l', local_id, 'v', variacao_id, 'p', parte_id, 't', tipo, 'q', quantidade,
                                     'a', saldo_antes, 'd', saldo_depois, 'm', motivo, 'o', observacao, 'via', via, 'k', chave_id,
                                     'r', referencia_externa, 'md', metadados, 'lote', lote_id)
                   ORDER BY variacao_id, parte_id NULLS FIRST, saldo_antes)
     FROM estoque_movimentos WHERE conta_id = ANY ($1::uuid[])) AS movimentos,
  (SELECT json_agg(json_build_object('k', key, 'r', route, 'h', request_hash, 's', status_code, 'c', codigo, 'm', motivo,
                                     'res', resource_id IS NOT NULL) ORDER BY key, request_hash, conta_id)
     FROM idempotency_keys WHERE conta_id = ANY ($1::uuid[])) AS chaves,
  (SELECT json_agg(json_build_object('t', tipo, 'g', group_key, 'd', dados - 'movimento_id') ORDER BY group_key)
     FROM outbox WHERE conta_id = ANY ($1::uuid[]) AND relayed_at IS NULL) AS eventos`;

/** A batch run one way in a transaction rolled back: its answers (ids and times left out) and what it left. */
async function run(fn: string, args: unknown[]): Promise<{ answers: unknown; estado: unknown } | null> {
  await client.query('BEGIN');
  try {
    const { rows } = await client.query(`SELECT ${fn}(${fn === 'api_estoque_movimentar_lote_em' ? 'false, ' : ''}${ARGS}) AS r`, args);
    const answers = rows[0].r as { movimento?: { id?: string; criado_em?: string } | null }[] | null;
    if (answers === null) return null;
    const { rows: estado } = await client.query(ESTADO, [[conta.contaId, outra.contaId]]);
    for (const a of answers) if (a.movimento) a.movimento = { ...a.movimento, id: 'id', criado_em: 'criado_em' };
    return { answers, estado: estado[0] };
  } finally {
    await client.query('ROLLBACK');
  }
}

test('answers and writes as the batch moved one by one would', async () => {
  let asSet = 0;
  let runs = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(movimento, { minLength: 1, maxLength: 6 }), async (batch) => {
      runs++;
      const args = argumentos(batch);
      const set = await run('api_estoque_movimentar_conjunto', args);
      assert.is(set !== null, movesAsSet(batch), 'moved as a set exactly when it can be');
      if (set === null) return;
      asSet++;
      const oneByOne = await run('api_estoque_movimentar_lote_em', args);
      assert.equal(set, oneByOne);
    }),
    RUNS.parameters,
  );
  // The comparison means something only when the set way took a good share of the batches.
  if (RUNS.full) assert.ok(asSet >= runs / 3, `only ${asSet} of ${runs} batches were moved as a set`);
});

test('every refusal and every claim in one batch, as a set and one by one', async () => {
  const batch: Movimento[] = [
    { conta: 'propria', tipo: 'saida', alvo: 'min2', quantidade: 1, key: 'nova' },
    { conta: 'propria', tipo: 'entrada', alvo: 'mult5', quantidade: 3, key: 'nova' },
    { conta: 'propria', tipo: 'saida', alvo: 'plain', quantidade: 100, key: 'nova' },
    { conta: 'propria', tipo: 'entrada', alvo: 'inexistente', quantidade: 1, key: 'repetida' },
    { conta: 'propria', tipo: 'entrada', alvo: 'inexistente', quantidade: 2, key: 'repetida' },
    { conta: 'propria', tipo: 'entrada', alvo: 'partida', quantidade: 1, key: 'gravada' },
    { conta: 'propria', tipo: 'saida', alvo: 'parte', quantidade: 1, key: 'presa' },
    { conta: 'propria', tipo: 'entrada', alvo: 'deOutra', quantidade: 1, key: 'conflito' },
    { conta: 'outra', tipo: 'saida', alvo: 'deOutra', quantidade: 2, key: 'nenhuma' },
  ];
  const args = argumentos(batch);
  const set = await run('api_estoque_movimentar_conjunto', args);
  assert.ok(set, 'moved as a set');
  const answers = set.answers as { claim: string; recusa: string | null; limite: number | null; status_code: number | null }[];
  assert.equal(answers.map((a) => [a.claim, a.status_code, a.recusa, a.limite]), [
    ['new', 422, 'abaixo_do_minimo', 2], ['new', 422, 'fora_do_multiplo', 5], ['new', 422, 'saldo_insuficiente', 8],
    ['new', 422, 'referencia_invalida', null], ['running', undefined, undefined, undefined], ['done', 201, null, null],
    ['running', null, null, null], ['conflito', null, null, null], ['new', 201, null, null],
  ]);
  assert.equal(set, await run('api_estoque_movimentar_lote_em', args));
});

test('a batch it cannot move as a set is left to the one-by-one way, with nothing written', async () => {
  const args = (tipo: string, variacao: string, contado: number | null) => [
    [conta.contaId], [conta.chaveId], [`k-${randomUUID()}`], [ROUTE], [hash(randomUUID())], [tipo], [variacao], [null], [null],
    [contado === null ? 1 : null], [contado], ['correcao'], [null], [null], [null]];
  assert.is(await run('api_estoque_movimentar_conjunto', args('ajuste', v.plain, 3)), null, 'an ajuste');
  const nova = await criarProdutoCompleto(db.pool, conta.contaId);
  assert.is(await run('api_estoque_movimentar_conjunto', args('entrada', nova.variacoes[0]!.id, null)), null, 'an entrada that opens a balance');
  const twice = [0, 1].map(() => args('entrada', v.plain, null));
  assert.is(await run('api_estoque_movimentar_conjunto', twice[0]!.map((a, i) => [...(a as unknown[]), ...(twice[1]![i] as unknown[])])), null, 'a balance twice');
  const { rows } = await client.query('SELECT count(*)::int AS n FROM estoque_movimentos WHERE conta_id = $1 AND variacao_id = $2', [conta.contaId, nova.variacoes[0]!.id]);
  assert.is(rows[0].n, 0);
});

test.run();
