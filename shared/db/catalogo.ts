// Writes of the catalog as the application's screen makes them (the operator CLI stands in for
// it): channels, products, variations, parts and price tiers. Triggers keep the product's
// atualizado_em and version current and emit produto.criado / produto.atualizado.
import { z } from 'zod';
import { CanalRow } from './canais.ts';
import { sql, type Db } from './pool.ts';

const Canal = CanalRow.omit({ cursor_ts: true });

export async function lerCanal(db: Db, contaId: string, id: string): Promise<z.infer<typeof Canal> | null> {
  return db.maybeOne(sql.type(Canal)`
    SELECT id, nome, tipo, taxa_percentual_bps, ativo, criado_em, atualizado_em FROM canais WHERE conta_id = ${contaId} AND id = ${id}`);
}

export async function alterarCanal(
  db: Db,
  contaId: string,
  id: string,
  change: { nome?: string; tipo?: z.infer<typeof Canal>['tipo']; taxaPercentualBps?: number; ativo?: boolean },
): Promise<z.infer<typeof Canal> | null> {
  return db.maybeOne(sql.type(Canal)`
    UPDATE canais SET
      nome = coalesce(${change.nome ?? null}, nome),
      tipo = coalesce(${change.tipo ?? null}, tipo),
      taxa_percentual_bps = coalesce(${change.taxaPercentualBps ?? null}::int, taxa_percentual_bps),
      ativo = coalesce(${change.ativo ?? null}, ativo)
     WHERE conta_id = ${contaId} AND id = ${id}
    RETURNING id, nome, tipo, taxa_percentual_bps, ativo, criado_em, atualizado_em`);
}

const Produto = z.object({
  id: z.string(),
  sku: z.string(),
  nome: z.string(),
  descricao: z.string().nullable(),
  ativo: z.boolean(),
  criado_em: z.string(),
  atualizado_em: z.string(),
});
const produtoColumns = sql.fragment`id, sku, nome, descricao, ativo, criado_em, atualizado_em`;

export async function criarProduto(
  db: Db,
  contaId: string,
  input: { sku: string; nome: string; descricao?: string | null; ativo?: boolean },
): Promise<z.infer<typeof Produto>> {
  return db.one(sql.type(Produto)`
    INSERT INTO produtos (conta_id, sku, nome, descricao, ativo)
    VALUES (${contaId}, ${input.sku}, ${input.nome}, ${input.descricao ?? null}, ${input.ativo ?? true})
    RETURNING ${produtoColumns}`);
}

export async function alterarProduto(
  db: Db,
  contaId: string,
  id: string,
  change: { sku?: string; nome?: string; descricao?: string; ativo?: boolean },
): Promise<z.infer<typeof Produto> | null> {
  return db.maybeOne(sql.type(Produto)`
    UPDATE produtos SET
      sku = coalesce(${change.sku ?? null}, sku),
      nome = coalesce(${change.nome ?? null}, nome),
      descricao = coalesce(${change.descricao ?? null}, descricao),
      ativo = coalesce(${change.ativo ?? null}, ativo)
     WHERE conta_id = ${contaId} AND id = ${id}
    RETURNING ${produtoColumns}`);
}

const Variacao = z.object({
  id: z.string(),
  produto_id: z.string(),
  sku: z.string(),
  nome: z.string(),
  ativa: z.boolean(),
  quantidade_minima: z.number().int(),
  multiplo: z.number().int(),
  posicao: z.number().int(),
});
const variacaoColumns = sql.fragment`id, produto_id, sku, nome, ativa, quantidade_minima, multiplo, posicao`;

export type NovaVariacao = {
  produtoId: string;
  sku: string;
  nome: string;
  ativa?: boolean;
  quantidadeMinima?: number;
  multiplo?: number;
  posicao?: number;
};

/** A variation of one of the account's products (null when the product is not in the account). */
export async function criarVariacao(db: Db, contaId: string, input: NovaVariacao): Promise<z.infer<typeof Variacao> | null> {
  return db.maybeOne(sql.type(Variacao)`
    INSERT INTO variacoes (conta_id, produto_id, sku, nome, ativa, quantidade_minima, multiplo, posicao)
    SELECT p.conta_id, p.id, ${input.sku}, ${input.nome}, ${input.ativa ?? true}, ${input.quantidadeMinima ?? 1},
           ${input.multiplo ?? 1},
           coalesce(${input.posicao ?? null}::int,
                    (SELECT coalesce(max(posicao) + 1, 0) FROM variacoes WHERE conta_id = p.conta_id AND produto_id = p.id))
      FROM produtos p WHERE p.conta_id = ${contaId} AND p.id = ${input.produtoId}
    RETURNING ${variacaoColumns}`);
}

export async function alterarVariacao(
  db: Db,
  contaId: string,
  id: string,
  change: Partial<Omit<NovaVariacao, 'produtoId'>>,
): Promise<z.infer<typeof Variacao> | null> {
  return db.maybeOne(sql.type(Variacao)`
    UPDATE variacoes SET
      sku = coalesce(${change.sku ?? null}, sku),
      nome = coalesce(${change.nome ?? null}, nome),
      ativa = coalesce(${change.ativa ?? null}, ativa),
      quantidade_minima = coalesce(${change.quantidadeMinima ?? null}::int, quantidade_minima),
      multiplo = coalesce(${change.multiplo ?? null}::int, multiplo),
      posicao = coalesce(${change.posicao ?? null}::int, posicao)
     WHERE conta_id = ${contaId} AND id = ${id}
    RETURNING ${variacaoColumns}`);
}

const Parte = z.object({ id: z.string(), variacao_id: z.string(), nome: z.string(), quantidade: z.number().int(), posicao: z.number().int() });

export async function criarParte(
  db: Db,
  contaId: string,
  input: { variacaoId: string; nome: string; quantidade?: number },
): Promise<z.infer<typeof Parte> | null> {
  return db.maybeOne(sql.type(Parte)`
    INSERT INTO partes (conta_id, variacao_id, nome, quantidade, posicao)
    SELECT v.conta_id, v.id, ${input.nome}, ${input.quantidade ?? 1},
           (SELECT coalesce(max(posicao) + 1, 0) FROM partes WHERE conta_id = v.conta_id AND variacao_id = v.id)
      FROM variacoes v WHERE v.conta_id = ${contaId} AND v.id = ${input.variacaoId}
    RETURNING id, variacao_id, nome, quantidade, posicao`);
}

export async function alterarParte(
  db: Db,
  contaId: string,
  id: string,
  change: { nome?: string; quantidade?: number },
): Promise<z.infer<typeof Parte> | null> {
  return db.maybeOne(sql.type(Parte)`
    UPDATE partes SET
      nome = coalesce(${change.nome ?? null}, nome),
      quantidade = coalesce(${change.quantidade ?? null}::int, quantidade)
     WHERE conta_id = ${contaId} AND id = ${id}
    RETURNING id, variacao_id, nome, quantidade, posicao`);
}

export type Faixa = { aPartirDe: number; precoCentavos: number };

/**
 * Replaces the price tiers of a variation on a channel (no tiers: the variation is not sold
 * there). Run it in a transaction: the delete and the inserts are one change of the product.
 */
export async function definirPrecos(
  db: Db,
  contaId: string,
  input: { variacaoId: string; canalId: string; faixas: readonly Faixa[] },
): Promise<readonly { a_partir_de: number; preco_centavos: number }[]> {
  await db.query(sql.typeAlias('void')`
    DELETE FROM precos WHERE conta_id = ${contaId} AND variacao_id = ${input.variacaoId} AND canal_id = ${input.canalId}`);
  if (input.faixas.length === 0) return [];
  return db.many(sql.type(z.object({ a_partir_de: z.number().int(), preco_centavos: z.number().int() }))`
    INSERT INTO precos (conta_id, variacao_id, canal_id, a_partir_de, preco_centavos)
    SELECT ${contaId}, ${input.variacaoId}, ${input.canalId}, f.a_partir_de, f.preco_centavos
      FROM unnest(${sql.array(input.faixas.map((f) => f.aPartirDe), 'int4')}::int[],
                  ${sql.array(input.faixas.map((f) => f.precoCentavos), 'int8')}::bigint[]) AS f (a_partir_de, preco_centavos)
    RETURNING a_partir_de, preco_centavos::float8 AS preco_centavos`);
}
