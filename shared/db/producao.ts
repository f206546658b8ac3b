// The workshop's changes to production orders, made in the application (the operator CLI stands
// in for its screen): order situacao and payment, item situacao and stage, and the stages
// themselves. Each row is locked before its transition is checked, so concurrent changes run one
// after the other; the database enforces the same transitions whoever writes (sql/code/pedidos.sql).
import { z } from 'zod';
import { naoEncontrado, regraRecusou } from '../errors.ts';
import { ITEM_PEDIDO_SITUACOES, TRANSICOES_ITEM, type ItemPedidoSituacao, type PagamentoSituacao, type SituacaoPedido } from '../domain/producao.ts';
import { sql, type Db } from './pool.ts';

const Atual = z.object({ valor: z.string().nullable(), permitida: z.boolean().nullable() });

export async function mudarSituacaoPedido(db: Db, contaId: string, pedidoId: string, para: SituacaoPedido): Promise<void> {
  const atual = await db.maybeOne(sql.type(Atual)`
    SELECT situacao AS valor, transicao_permitida('pedido', situacao, ${para}) AS permitida
      FROM pedidos_producao WHERE conta_id = ${contaId} AND id = ${pedidoId} FOR UPDATE`);
  if (!atual) throw naoEncontrado('O pedido não existe nesta conta.');
  if (!atual.permitida) throw regraRecusou('transicao_invalida', `O pedido está ${atual.valor}; não pode passar a ${para}.`);
  await db.query(sql.typeAlias('void')`UPDATE pedidos_producao SET situacao = ${para} WHERE conta_id = ${contaId} AND id = ${pedidoId}`);
}

export async function mudarPagamento(db: Db, contaId: string, pedidoId: string, para: PagamentoSituacao): Promise<void> {
  const atual = await db.maybeOne(sql.type(Atual)`
    SELECT pagamento_situacao AS valor, transicao_permitida('pagamento', pagamento_situacao, ${para}) AS permitida
      FROM pedidos_producao WHERE conta_id = ${contaId} AND id = ${pedidoId} FOR UPDATE`);
  if (!atual) throw naoEncontrado('O pedido não existe nesta conta.');
  if (atual.valor === null) throw regraRecusou('transicao_invalida', 'Um pedido de estoque não tem pagamento.');
  if (!atual.permitida) throw regraRecusou('transicao_invalida', `O pagamento está ${atual.valor}; não pode passar a ${para}.`);
  await db.query(sql.typeAlias('void')`
    UPDATE pedidos_producao SET pagamento_situacao = ${para} WHERE conta_id = ${contaId} AND id = ${pedidoId}`);
}

/** Returns the id of the item's order. */
export async function mudarSituacaoItem(db: Db, contaId: string, itemId: string, para: ItemPedidoSituacao): Promise<string> {
  const atual = await db.maybeOne(sql.type(z.object({ situacao: z.enum(ITEM_PEDIDO_SITUACOES), pedido_id: z.string() }))`
    SELECT situacao, pedido_id FROM pedido_itens WHERE conta_id = ${contaId} AND id = ${itemId} FOR UPDATE`);
  if (!atual) throw naoEncontrado('O item não existe nesta conta.');
  if (!TRANSICOES_ITEM[atual.situacao].includes(para)) {
    throw regraRecusou('transicao_invalida', `O item está ${atual.situacao}; não pode passar a ${para}.`);
  }
  await db.query(sql.typeAlias('void')`UPDATE pedido_itens SET situacao = ${para} WHERE conta_id = ${contaId} AND id = ${itemId}`);
  return atual.pedido_id;
}

/** Moves an item to a stage, named by its name or id; null takes it out of every stage. Returns the item's order id. */
export async function mudarEtapaItem(db: Db, contaId: string, itemId: string, etapa: string | null): Promise<string> {
  let etapaId: string | null = null;
  if (etapa !== null) {
    const found = await db.maybeOne(sql.typeAlias('id')`
      SELECT id FROM etapas WHERE conta_id = ${contaId} AND (nome = ${etapa} OR id::text = ${etapa})`);
    if (!found) throw regraRecusou('referencia_invalida', `A etapa ${etapa} não existe nesta conta.`);
    etapaId = found.id;
  }
  const changed = await db.maybeOne(sql.type(z.object({ pedido_id: z.string() }))`
    UPDATE pedido_itens SET etapa_id = ${etapaId} WHERE conta_id = ${contaId} AND id = ${itemId} RETURNING pedido_id`);
  if (!changed) throw naoEncontrado('O item não existe nesta conta.');
  return changed.pedido_id;
}

export const EtapaRow = z.object({ id: z.string(), nome: z.string(), ordem: z.number().int() });

export async function listarEtapas(db: Db, contaId: string) {
  return db.any(sql.type(EtapaRow)`SELECT id, nome, ordem FROM etapas WHERE conta_id = ${contaId} ORDER BY ordem, nome`);
}

export async function criarEtapa(db: Db, contaId: string, nome: string, ordem: number | null) {
  return db.one(sql.type(EtapaRow)`
    INSERT INTO etapas (conta_id, nome, ordem)
    VALUES (${contaId}, ${nome}, coalesce(${ordem}::int, (SELECT coalesce(max(ordem) + 1, 0) FROM etapas WHERE conta_id = ${contaId})))
    RETURNING id, nome, ordem`);
}

export async function renomearEtapa(db: Db, contaId: string, etapaId: string, nome: string) {
  return db.maybeOne(sql.type(EtapaRow)`
    UPDATE etapas SET nome = ${nome} WHERE conta_id = ${contaId} AND id = ${etapaId} RETURNING id, nome, ordem`);
}
