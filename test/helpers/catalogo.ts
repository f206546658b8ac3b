// Catalog and stock fixtures, made through the same queries the operator CLI uses (the screen's
// writes), so tests read back what an operator would have made.
import { criarCanal } from '#shared/db/canais.ts';
import { criarParte, criarProduto, criarVariacao, definirPrecos } from '#shared/db/catalogo.ts';
import { movimentar } from '#shared/db/estoque.ts';
import { sql, type Db, type Pool } from '#shared/db/pool.ts';

let counter = 0;
const unique = () => `${Date.now().toString(36)}${(++counter).toString(36)}`.toUpperCase();

export type ProdutoFixture = {
  produtoId: string;
  sku: string;
  variacoes: { id: string; sku: string; parteIds: string[] }[];
};

/**
 * A product with variations (each with a minimum, a multiple, parts) and price tiers on the
 * channels given, in one transaction like the screen's save.
 */
export async function criarProdutoCompleto(
  pool: Pool,
  contaId: string,
  options: {
    sku?: string;
    ativo?: boolean;
    variacoes?: { quantidadeMinima?: number; multiplo?: number; partes?: string[] }[];
    precos?: { canalId: string; faixas: [number, number][] }[];
  } = {},
): Promise<ProdutoFixture> {
  return pool.transaction(async (tx) => {
    const sku = options.sku ?? `P-${unique()}`;
    const produto = await criarProduto(tx, contaId, { sku, nome: `Produto ${sku}`, descricao: `Descrição de ${sku}`, ativo: options.ativo });
    const variacoes: ProdutoFixture['variacoes'] = [];
    for (const [i, v] of (options.variacoes ?? [{}]).entries()) {
      const variacao = await criarVariacao(tx, contaId, {
        produtoId: produto.id,
        sku: `${sku}-V${i}`,
        nome: `Variação ${i}`,
        quantidadeMinima: v.quantidadeMinima,
        multiplo: v.multiplo,
      });
      if (!variacao) throw new Error('variation not created');
      const parteIds: string[] = [];
      for (const nome of v.partes ?? []) {
        const parte = await criarParte(tx, contaId, { variacaoId: variacao.id, nome, quantidade: 1 });
        if (parte) parteIds.push(parte.id);
      }
      for (const preco of options.precos ?? []) {
        await definirPrecos(tx, contaId, {
          variacaoId: variacao.id,
          canalId: preco.canalId,
          faixas: preco.faixas.map(([aPartirDe, precoCentavos]) => ({ aPartirDe, precoCentavos })),
        });
      }
      variacoes.push({ id: variacao.id, sku: variacao.sku, parteIds });
    }
    return { produtoId: produto.id, sku, variacoes };
  });
}

export async function criarCanalDeTeste(db: Db, contaId: string, nome = `Canal ${unique()}`): Promise<string> {
  return (await criarCanal(db, contaId, { nome, tipo: 'marketplace', taxaPercentualBps: 1600 })).id;
}

/** Sets a balance in the own location by an adjustment, as the screen's count would. */
export async function definirSaldo(pool: Pool, contaId: string, variacaoId: string, contado: number, parteId?: string): Promise<void> {
  const result = await pool.transaction((tx) =>
    movimentar(tx, contaId, { tipo: 'ajuste', variacao_id: variacaoId, parte_id: parteId, contado, motivo: 'correcao' }));
  if (!result.ok) throw new Error(`could not set the balance: ${result.recusa}`);
}

export async function saldoDe(db: Db, contaId: string, variacaoId: string): Promise<number> {
  return Number(await db.oneFirst(sql.unsafe`
    SELECT coalesce(sum(s.saldo), 0)::int FROM estoque_saldos s JOIN locais l ON l.conta_id = s.conta_id AND l.id = s.local_id
     WHERE s.conta_id = ${contaId} AND s.variacao_id = ${variacaoId} AND s.parte_id IS NULL AND l.tipo = 'proprio'`));
}

/** Raises every ceiling of a plan far out of the way (for suites firing many requests). */
export async function semLimites(db: Db, plano = 'farm'): Promise<void> {
  await db.query(sql.unsafe`
    UPDATE planos SET rajada = 1000000, rajada_recarga_por_segundo = 100000, leituras_por_minuto = 1000000,
           escritas_por_minuto = 1000000, chamadas_por_mes = 100000000, simultaneas_por_chave = 200,
           simultaneas_por_conta = 200
     WHERE id = ${plano}`);
}
