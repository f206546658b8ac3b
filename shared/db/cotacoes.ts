// Queries on quotations: their representation (items included, in one round trip),
// the list, creation as a draft with catalog prices from the channel's tiers, and the status
// change serialized by a row lock. The state machine itself lives in the database (sql/code/cotacoes.sql).
import { z } from 'zod';
import { dadosInvalidos, naoEncontrado, regraRecusou, totalAcimaDoMaximo, VALOR_MAXIMO_CENTAVOS } from '../errors.ts';
import { ITEM_COTACAO_TIPOS, STATUS_COTACAO, STATUS_SO_DA_ROTINA, type StatusCotacao } from '../domain/cotacoes.ts';
import { pageClauses, type Posicao } from './paging.ts';
import { sql, type Db } from './pool.ts';
import { resolverVariacoes } from './referencias.ts';

const ItemCotacaoRow = z.object({
  id: z.string(),
  tipo: z.enum(ITEM_COTACAO_TIPOS),
  produto_id: z.string().nullable(),
  variacao_id: z.string().nullable(),
  nome: z.string(),
  quantidade: z.number().int(),
  preco_unitario_centavos: z.number().int(),
});

export const CotacaoRow = z.object({
  id: z.string(),
  codigo: z.string(),
  status: z.enum(STATUS_COTACAO),
  versao: z.number().int(),
  cliente_nome: z.string().nullable(),
  canal_id: z.string().nullable(),
  validade: z.string().nullable(),
  observacao: z.string().nullable(),
  itens: z.array(ItemCotacaoRow),
  valor_total_centavos: z.number().int(),
  enviada_em: z.string().nullable(),
  criado_em: z.string(),
  atualizado_em: z.string(),
  referencia_externa: z.string().nullable(),
  metadados: z.record(z.string(), z.string()),
  row_version: z.number().int(),
});
export type CotacaoRow = z.infer<typeof CotacaoRow>;
const CotacaoPageRow = CotacaoRow.extend({ cursor_ts: z.string() });

const colunas = sql.fragment`
  c.id, c.codigo, c.status, c.versao, c.cliente_nome, c.canal_id, c.validade, c.observacao,
  coalesce((SELECT json_agg(json_build_object(
                     'id', i.id, 'tipo', i.tipo, 'produto_id', i.produto_id, 'variacao_id', i.variacao_id,
                     'nome', i.nome, 'quantidade', i.quantidade, 'preco_unitario_centavos', i.preco_unitario_centavos)
                   ORDER BY i.posicao)
              FROM cotacao_itens i WHERE i.conta_id = c.conta_id AND i.cotacao_id = c.id), '[]'::json) AS itens,
  -- bigint would arrive as BigInt; money and versions stay far below 2^53.
  c.valor_total_centavos::float8 AS valor_total_centavos, c.enviada_em, c.criado_em, c.atualizado_em,
  c.referencia_externa, c.metadados, c.row_version::float8 AS row_version`;

export async function lerCotacao(db: Db, contaId: string, id: string): Promise<CotacaoRow | null> {
  // A named statement: parsed and planned once per connection (a one-record read is a hot path).
  return db.maybeOne(sql.prepared('ler_cotacao', CotacaoRow)`SELECT ${colunas} FROM cotacoes c WHERE c.conta_id = ${contaId} AND c.id = ${id}`);
}

export type FiltroCotacoes = {
  limite: number;
  cursor?: Posicao;
  atualizado_desde?: string;
  criado_desde?: string;
  status?: StatusCotacao;
  referencia_externa?: string;
};

export async function listarCotacoes(db: Db, contaId: string, filtro: FiltroCotacoes) {
  const page = pageClauses('c', 'criado_em', filtro);
  const status = filtro.status ? sql.fragment`c.status = ${filtro.status}` : sql.fragment`true`;
  const criado = filtro.criado_desde ? sql.fragment`c.criado_em >= ${filtro.criado_desde}::timestamptz` : sql.fragment`true`;
  const referencia = filtro.referencia_externa ? sql.fragment`c.referencia_externa = ${filtro.referencia_externa}` : sql.fragment`true`;
  return db.any(sql.type(CotacaoPageRow)`
    SELECT ${colunas}, ${page.cursorColumn}
      FROM cotacoes c
     WHERE c.conta_id = ${contaId} AND ${page.where} AND ${status} AND ${criado} AND ${referencia}
     ${page.orderLimit}`);
}

export type NovoItemCotacao =
  | { tipo: 'catalogo'; variacaoId: string; quantidade: number; precoUnitarioCentavos?: number; nome?: string }
  | { tipo: 'avulso'; nome: string; quantidade: number; precoUnitarioCentavos: number };

export type NovaCotacao = {
  clienteNome: string;
  referenciaExterna?: string | null;
  metadados?: Record<string, string> | null;
  clienteEmail?: string | null;
  canalId?: string | null;
  validade?: string | null;
  observacao?: string | null;
  itens: readonly NovoItemCotacao[];
};

const Contexto = z.object({ hoje: z.string(), canal_ativo: z.boolean().nullable() });

/** Creates a draft with its items; returns its id. Every refusal names the offending field. */
export async function criarCotacao(db: Db, contaId: string, nova: NovaCotacao): Promise<string> {
  const canalId = nova.canalId ?? null;
  // Today in the account's time zone: validade is a calendar date there.
  const contexto = await db.one(sql.type(Contexto)`
    SELECT (now() AT TIME ZONE a.fuso_horario)::date::text AS hoje,
           (SELECT ativo FROM canais WHERE conta_id = a.id AND id = ${canalId}) AS canal_ativo
      FROM contas a WHERE a.id = ${contaId}`);
  if (canalId && contexto.canal_ativo === null) throw regraRecusou('referencia_invalida', `canal_id: o canal ${canalId} não existe nesta conta.`);
  if (canalId && !contexto.canal_ativo) throw regraRecusou('referencia_invalida', `canal_id: o canal ${canalId} está inativo.`);
  if (nova.validade && nova.validade < contexto.hoje) {
    throw dadosInvalidos('A validade já passou.', [{ campo: 'validade', mensagem: `deve ser ${contexto.hoje} ou depois` }]);
  }

  const catalogo = nova.itens.flatMap((item, i) =>
    item.tipo === 'catalogo' ? [{ campo: `itens[${i}]`, variacaoId: item.variacaoId, quantidade: item.quantidade, item, i }] : []);
  const variacoes = await resolverVariacoes(db, contaId, catalogo, canalId);
  const resolvidas = new Map(catalogo.map((c, k) => [c.i, variacoes[k]]));

  const linhas = nova.itens.map((item, posicao) => {
    if (item.tipo === 'avulso') {
      return { posicao, tipo: 'avulso', produto_id: null, variacao_id: null, nome: item.nome, quantidade: item.quantidade, preco_unitario_centavos: item.precoUnitarioCentavos };
    }
    const variacao = resolvidas.get(posicao);
    if (!variacao) throw new Error('catalog item without its variation');
    const preco = item.precoUnitarioCentavos ?? variacao.precoCentavos;
    if (preco === null) {
      throw regraRecusou('preco_indisponivel', canalId
        ? `itens[${posicao}]: o canal não tem preço para a variação ${item.variacaoId} na quantidade ${item.quantidade}; informe preco_unitario_centavos.`
        : `itens[${posicao}]: sem canal_id não há tabela de preços; informe canal_id ou preco_unitario_centavos.`);
    }
    return { posicao, tipo: 'catalogo', produto_id: variacao.produtoId, variacao_id: variacao.variacaoId, nome: item.nome ?? variacao.nome, quantidade: item.quantidade, preco_unitario_centavos: preco };
  });
  // The total the database will keep (cotacoes.valor_total_centavos), refused here with its reason
  // rather than by the column's CHECK.
  const total = linhas.reduce((sum, l) => sum + BigInt(l.quantidade) * BigInt(l.preco_unitario_centavos), 0n);
  if (total > BigInt(VALOR_MAXIMO_CENTAVOS)) throw totalAcimaDoMaximo();

  const { id } = await db.one(sql.typeAlias('id')`
    INSERT INTO cotacoes (conta_id, cliente_nome, cliente_email, canal_id, validade, observacao, referencia_externa, metadados)
    VALUES (${contaId}, ${nova.clienteNome}, ${nova.clienteEmail ?? null}, ${canalId}, ${nova.validade ?? null}, ${nova.observacao ?? null},
            ${nova.referenciaExterna ?? null}, ${sql.jsonb(nova.metadados ?? {})})
    RETURNING id`);
  await db.query(sql.typeAlias('void')`
    INSERT INTO cotacao_itens (conta_id, cotacao_id, posicao, tipo, produto_id, variacao_id, nome, quantidade, preco_unitario_centavos)
    SELECT ${contaId}, ${id}, x.posicao, x.tipo, x.produto_id, x.variacao_id, x.nome, x.quantidade, x.preco_unitario_centavos
      FROM jsonb_to_recordset(${sql.jsonb(linhas)}) AS x (posicao int, tipo text, produto_id uuid, variacao_id uuid,
                                                          nome text, quantidade int, preco_unitario_centavos bigint)`);
  return id;
}

const Atual = z.object({ status: z.enum(STATUS_COTACAO), permitida: z.boolean() });

/**
 * Changes the status of one quotation. The row is locked first, so concurrent changes of the same
 * quotation run one after the other and each sees the status the previous one left: of ten
 * concurrent approvals and refusals of a sent quotation exactly one applies, the rest are refused.
 */
export async function mudarStatusCotacao(db: Db, contaId: string, id: string, para: StatusCotacao): Promise<void> {
  const atual = await db.maybeOne(sql.type(Atual)`
    SELECT status, transicao_permitida('cotacao', status, ${para}) AS permitida
      FROM cotacoes WHERE conta_id = ${contaId} AND id = ${id}
       FOR UPDATE`);
  if (!atual) throw naoEncontrado('A cotação não existe nesta conta.');
  if (STATUS_SO_DA_ROTINA.includes(para)) {
    throw regraRecusou('transicao_invalida', `Só a rotina diária passa uma cotação a ${para}, depois da validade.`);
  }
  if (!atual.permitida) {
    throw regraRecusou('transicao_invalida', `A cotação está ${atual.status}; não pode passar a ${para}.`);
  }
  await db.query(sql.typeAlias('void')`UPDATE cotacoes SET status = ${para} WHERE conta_id = ${contaId} AND id = ${id}`);
}
