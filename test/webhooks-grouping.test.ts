import { randomUUID } from 'node:crypto';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { sql } from '#shared/db/pool.ts';
import { PRODUTOS_ATE_EVENTOS_POR_PRODUTO } from '#shared/domain/eventos.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { createAccount, type TestAccount } from './helpers/fixtures.ts';
import { addEndpoint, closeGroupingWindows, emit, eventually, startReceiver, type Receiver } from './helpers/receiver.ts';

const test = suite('webhooks: 60 s grouping, daily estoque.baixo, bulk catalog changes');
let app: TestApp;
let receiver: Receiver;
let account: TestAccount;
let localId: string;
let canalId: string;

const Id = z.object({ id: z.string() });
const Pending = z.object({ id: z.string(), dados: z.any(), available_at: z.string(), criado_em: z.string() });

test.before(async () => {
  receiver = await startReceiver();
  app = await startTestApp({ worker: true });
  account = await createAccount(app.db.pool, { plano: 'farm' });
  await addEndpoint(app.db.pool, receiver, { contaId: account.contaId, usuarioId: account.usuarioId, path: '/tudo' });
  localId = await app.db.pool.oneFirst(sql.type(Id)`SELECT id FROM locais WHERE conta_id = ${account.contaId} AND tipo = 'proprio'`);
  canalId = await app.db.pool.oneFirst(sql.type(Id)`
    INSERT INTO canais (conta_id, nome, tipo) VALUES (${account.contaId}, 'Loja', 'loja_propria') RETURNING id`);
});
test.after(async () => {
  await app.stop();
  await receiver.close();
});

/** Products with one variation each, created in one transaction. */
async function produtos(prefixo: string, quantos: number): Promise<{ produtoId: string; variacaoId: string }[]> {
  return app.db.pool.transaction(async (tx) => {
    const criados = [];
    for (let i = 0; i < quantos; i++) {
      const p = await tx.oneFirst(sql.type(Id)`INSERT INTO produtos (conta_id, sku, nome) VALUES (${account.contaId}, ${`${prefixo}-${i}`}, 'Peça') RETURNING id`);
      const v = await tx.oneFirst(sql.type(Id)`
        INSERT INTO variacoes (conta_id, produto_id, sku, nome) VALUES (${account.contaId}, ${p}, ${`${prefixo}-${i}-U`}, 'Única') RETURNING id`);
      criados.push({ produtoId: p, variacaoId: v });
    }
    return criados;
  });
}

const movimento = (variacaoId: string, tipo: 'entrada' | 'saida', quantidade: number, antes: number, referencia: string | null = null) =>
  app.db.pool.oneFirst(sql.type(z.object({ id: z.string() }))`
    INSERT INTO estoque_movimentos (conta_id, local_id, variacao_id, tipo, quantidade, saldo_antes, saldo_depois, motivo,
                                    referencia_externa, metadados)
    VALUES (${account.contaId}, ${localId}, ${variacaoId}, ${tipo}, ${quantidade}, ${antes},
            ${tipo === 'entrada' ? antes + quantidade : antes - quantidade}, 'outro', ${referencia},
            ${sql.jsonb(referencia ? { pedido: referencia } : {})})
    RETURNING id`);

const pendentes = (tipo: string) => app.db.pool.any(sql.type(Pending)`
  SELECT id, dados, available_at, criado_em FROM outbox
   WHERE conta_id = ${account.contaId} AND tipo = ${tipo} AND relayed_at IS NULL ORDER BY seq`);

/**
 * Emits a marker and waits for it and for every delivery to finish: the relay has then passed
 * over everything committed before the marker, and all it relayed has been received.
 */
async function afterARelayPass(): Promise<void> {
  const id = await emit(app.db.pool, account.contaId, 'produto.criado', { objeto: 'produto', id: randomUUID(), sku: 'MARCADOR' });
  await receiver.waitFor(1, (r) => r.id === id);
  await eventually(
    () => app.db.pool.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM deliveries WHERE status = 'pending'`),
    (n) => n === 0);
}

const delivered = (tipo: string, match: (dados: any) => boolean = () => true) =>
  receiver.received.filter((r) => r.json?.tipo === tipo && match(r.json.dados));

test('groups estoque.movimentado per variation into one event at the end of a 60 s window, with the latest movement', async () => {
  const [a, b] = await produtos('MOV', 2);
  assert.ok(a && b);
  await movimento(a.variacaoId, 'entrada', 10, 0);
  await movimento(a.variacaoId, 'saida', 3, 10);
  await movimento(b.variacaoId, 'entrada', 1, 0);
  const ultimo = await movimento(a.variacaoId, 'entrada', 5, 7, 'MKT-77');
  const pending = await pendentes('estoque.movimentado');
  assert.is(pending.length, 2, 'one pending event per variation');
  const [first] = pending;
  assert.ok(first);
  const window = Date.parse(first.available_at) - Date.now();
  assert.ok(window > 55_000 && window <= 60_000, `goes out at the end of the window (in ${window} ms)`);

  await afterARelayPass();
  assert.is(delivered('estoque.movimentado').length, 0, 'nothing goes out before the window ends');

  assert.is(await closeGroupingWindows(app.db.pool), 2);
  await receiver.waitFor(2, (r) => r.json?.tipo === 'estoque.movimentado');
  const ofA = delivered('estoque.movimentado', (d) => d.variacao_id === a.variacaoId);
  assert.is(ofA.length, 1);
  // The latest movement's: its id and its external references.
  assert.equal(ofA[0]?.json.dados, {
    objeto: 'estoque', variacao_id: a.variacaoId, local_id: localId, tipo: 'entrada', movimento_id: ultimo,
    referencia_externa: 'MKT-77', metadados: { pedido: 'MKT-77' },
  });
  assert.is(delivered('estoque.movimentado', (d) => d.variacao_id === b.variacaoId).length, 1);

  await movimento(a.variacaoId, 'saida', 2, 12);
  const next = await pendentes('estoque.movimentado');
  assert.is(next.length, 1, 'a change after the window opens a new one');
  assert.ok(next[0]?.id !== ofA[0]?.id);
});

test('groups produto.atualizado per product within 60 s, carrying the latest data', async () => {
  const [p] = await produtos('GRP', 1);
  assert.ok(p);
  await app.db.pool.query(sql.unsafe`
    INSERT INTO precos (conta_id, variacao_id, canal_id, a_partir_de, preco_centavos) VALUES (${account.contaId}, ${p.variacaoId}, ${canalId}, 1, 1000)`);
  await app.db.pool.query(sql.unsafe`UPDATE precos SET preco_centavos = 900 WHERE variacao_id = ${p.variacaoId}`);
  await app.db.pool.query(sql.unsafe`UPDATE produtos SET sku = 'GRP-NOVO', ativo = false WHERE id = ${p.produtoId}`);
  const pending = (await pendentes('produto.atualizado')).filter((e) => e.dados.id === p.produtoId);
  assert.is(pending.length, 1);
  await closeGroupingWindows(app.db.pool);
  const [got] = await receiver.waitFor(1, (r) => r.json?.tipo === 'produto.atualizado' && r.json.dados.id === p.produtoId);
  assert.equal(got?.json.dados, { objeto: 'produto', id: p.produtoId, sku: 'GRP-NOVO' });
});

for (const fuso of ['America/Sao_Paulo', 'Asia/Tokyo']) {
  test(`warns estoque.baixo at most once per supply per calendar day in the account's time zone (${fuso})`, async () => {
    await app.db.pool.query(sql.unsafe`UPDATE contas SET fuso_horario = ${fuso} WHERE id = ${account.contaId}`);
    const insumo = await app.db.pool.oneFirst(sql.type(Id)`
      INSERT INTO insumos (conta_id, tipo, nome, unidade, saldo, minimo)
      VALUES (${account.contaId}, 'componente', ${`Ímã ${fuso}`}, 'un', 100, 50) RETURNING id`);
    const saldo = (valor: number) => app.db.pool.query(sql.unsafe`UPDATE insumos SET saldo = ${valor} WHERE id = ${insumo}`);
    const avisos = async () => {
      await afterARelayPass();
      return delivered('estoque.baixo', (d) => d.insumo.id === insumo).length;
    };
    // The last warning moved to a minute before or after the account's local midnight.
    const avisadoEm = (lado: 'antes' | 'depois') => app.db.pool.query(sql.unsafe`
      UPDATE insumo_avisos
         SET avisado_em = (date_trunc('day', now() AT TIME ZONE ${fuso}) AT TIME ZONE ${fuso})
                          + CASE WHEN ${lado} = 'antes' THEN interval '-1 minute' ELSE interval '1 minute' END
       WHERE insumo_id = ${insumo}`);

    await saldo(40);
    assert.is(await avisos(), 1, 'falling below the minimum warns');
    await saldo(80);
    await saldo(30);
    await saldo(20);
    assert.is(await avisos(), 1, 'falling again the same day does not');
    await avisadoEm('depois');
    await saldo(15);
    assert.is(await avisos(), 1, 'a warning just after local midnight is today\'s');
    await avisadoEm('antes');
    await saldo(10);
    assert.is(await avisos(), 2, 'a warning just before local midnight was yesterday\'s');
    await app.db.pool.query(sql.unsafe`UPDATE insumos SET saldo = 9, minimo = 8 WHERE id = ${insumo}`);
    await avisadoEm('antes');
    await app.db.pool.query(sql.unsafe`UPDATE insumos SET minimo = 20 WHERE id = ${insumo}`);
    assert.is(await avisos(), 3, 'a raised minimum is a path too');
  });
}

// The threshold the catalog's descriptions state (/tipos-de-evento, the reference, the guide).
const ATE = PRODUTOS_ATE_EVENTOS_POR_PRODUTO;

test(`one transaction changing ${ATE} products emits ${ATE} produto.atualizado; ${ATE + 1} products emit one catalogo.atualizado_em_massa`, async () => {
  const catalogo = await produtos('LOTE', ATE + 1);
  const ids = catalogo.map((p) => p.produtoId);
  await closeGroupingWindows(app.db.pool);
  await receiver.waitFor(1, (r) => r.json?.tipo === 'catalogo.atualizado_em_massa');
  const bulkBefore = delivered('catalogo.atualizado_em_massa').length;

  await app.db.pool.query(sql.unsafe`UPDATE produtos SET ativo = false WHERE id = ANY (${sql.array(ids.slice(0, ATE), 'uuid')})`);
  const porProduto = (await pendentes('produto.atualizado')).filter((e) => ids.includes(e.dados.id));
  assert.is(porProduto.length, ATE);
  await closeGroupingWindows(app.db.pool);
  await receiver.waitFor(ATE, (r) => r.json?.tipo === 'produto.atualizado' && ids.includes(r.json.dados.id));

  const before = new Date();
  await app.db.pool.query(sql.unsafe`
    INSERT INTO precos (conta_id, variacao_id, canal_id, a_partir_de, preco_centavos)
    SELECT ${account.contaId}, v, ${canalId}, 10, 500 FROM unnest(${sql.array(catalogo.map((p) => p.variacaoId), 'uuid')}) AS v`);
  const [bulk] = await receiver.waitFor(bulkBefore + 1, (r) => r.json?.tipo === 'catalogo.atualizado_em_massa').then((l) => l.slice(bulkBefore));
  assert.is(bulk?.json.dados.quantidade, ATE + 1);
  assert.ok(Math.abs(Date.parse(bulk?.json.dados.desde) - before.getTime()) < 5_000);
  assert.is((await pendentes('produto.atualizado')).filter((e) => ids.includes(e.dados.id)).length, 0, 'no per-product events');
});

test('counts products, not changes: many changes to 15 products in one transaction are not a bulk change', async () => {
  const catalogo = await produtos('MUITAS', 15);
  const bulkBefore = delivered('catalogo.atualizado_em_massa').length;
  await app.db.pool.transaction(async (tx) => {
    for (const p of catalogo) {
      await tx.query(sql.unsafe`UPDATE produtos SET nome = 'Outra' WHERE id = ${p.produtoId}`);
      await tx.query(sql.unsafe`UPDATE variacoes SET nome = 'Outra' WHERE id = ${p.variacaoId}`);
    }
  });
  const ids = catalogo.map((p) => p.produtoId);
  assert.is((await pendentes('produto.atualizado')).filter((e) => ids.includes(e.dados.id)).length, 15);
  await afterARelayPass();
  assert.is(delivered('catalogo.atualizado_em_massa').length, bulkBefore);
});

test('every request received carried valid signatures', () => {
  assert.equal(receiver.unverified(), []);
});

test.run();
