// Demo data for a first run of npm start: an account on the Oficina plan with a catalog, stock,
// supplies, quotations and orders, and a user holding every permission.
import { z } from 'zod';
import { criarChave, listarChaves, revogarChave } from '#shared/db/chaves.ts';
import { sql, type Pool, type Tx } from '#shared/db/pool.ts';
import { ESCOPOS, PERMISSOES } from '#shared/domain/acesso.ts';

export const DEMO_CONTA_ID = '00000000-0000-4000-8000-00000000d3e0';
export const DEMO_USUARIO_ID = '00000000-0000-4000-8000-00000000d3e1';
const DEMO_KEY_NAME = 'demo (npm start)';

const Id = z.object({ id: z.string() });

export async function demoExists(pool: Pool): Promise<boolean> {
  return pool.exists(sql.type(z.object({ exists: z.boolean() }))`SELECT 1 FROM contas WHERE id = ${DEMO_CONTA_ID}`);
}

/** Loads the demo account and its data unless it is already there. Returns whether it loaded. */
export async function loadDemo(pool: Pool): Promise<boolean> {
  if (await demoExists(pool)) return false;
  await pool.transaction(async (tx) => {
    await tx.query(sql.typeAlias('void')`SELECT set_config('app.via', 'tela', true)`);
    await tx.query(sql.typeAlias('void')`
      INSERT INTO contas (id, nome, plano_id) VALUES (${DEMO_CONTA_ID}, 'Oficina Demo 3D', 'oficina')`);
    await tx.query(sql.typeAlias('void')`
      INSERT INTO usuarios (conta_id, id, nome, email, permissoes)
      VALUES (${DEMO_CONTA_ID}, ${DEMO_USUARIO_ID}, 'Ana Demo', 'ana@demo.printfarm.invalid',
              ${sql.array([...PERMISSOES], 'text')})`);
    const canais = await criarCanais(tx);
    await criarMateriaisEInsumos(tx);
    await criarProdutos(tx, canais);
    await criarEtapas(tx);
    await criarCotacoesEPedidos(tx);
  });
  return true;
}

/**
 * A fresh demo key with every scope. Earlier demo keys are revoked first, so repeated starts stay
 * within the plan's active key limit.
 */
export async function issueDemoKey(pool: Pool): Promise<string> {
  for (const chave of await listarChaves(pool, DEMO_CONTA_ID)) {
    if (chave.nome === DEMO_KEY_NAME && !chave.revogada_em) await revogarChave(pool, DEMO_CONTA_ID, chave.id);
  }
  const { token } = await criarChave(pool, {
    contaId: DEMO_CONTA_ID,
    usuarioId: DEMO_USUARIO_ID,
    nome: DEMO_KEY_NAME,
    escopos: ESCOPOS,
  });
  return token;
}

async function criarCanais(tx: Tx): Promise<string[]> {
  const rows = await tx.many(sql.type(Id)`
    INSERT INTO canais (conta_id, nome, tipo, taxa_percentual_bps)
    VALUES (${DEMO_CONTA_ID}, 'Loja própria', 'loja_propria', 0),
           (${DEMO_CONTA_ID}, 'Marketplace', 'marketplace', 1600),
           (${DEMO_CONTA_ID}, 'Atacado', 'atacado', 0)
    RETURNING id`);
  return rows.map((r) => r.id);
}

async function criarMateriaisEInsumos(tx: Tx): Promise<void> {
  const materiais: [string, 'filamento' | 'resina', number, [string, string, number, number][]][] = [
    ['PLA', 'filamento', 12000, [['Preto', '#111111', 4200, 1000], ['Branco', '#F5F5F5', 800, 1000], ['Vermelho', '#C62828', 2500, 500]]],
    ['PETG', 'filamento', 15000, [['Transparente', '#DDEEFF', 1800, 500], ['Azul', '#1565C0', 1200, 500]]],
    ['Resina padrão', 'resina', 28000, [['Cinza', '#9E9E9E', 900, 300]]],
  ];
  for (const [nome, tipo, custo, cores] of materiais) {
    const material = await tx.one(sql.type(Id)`
      INSERT INTO materiais (conta_id, nome, tipo, custo_por_kg_centavos)
      VALUES (${DEMO_CONTA_ID}, ${nome}, ${tipo}, ${custo}) RETURNING id`);
    for (const [cor, hex, saldo, minimo] of cores) {
      const { id } = await tx.one(sql.type(Id)`
        INSERT INTO cores (conta_id, material_id, nome, hex) VALUES (${DEMO_CONTA_ID}, ${material.id}, ${cor}, ${hex})
        RETURNING id`);
      await tx.query(sql.typeAlias('void')`
        INSERT INTO insumos (conta_id, id, tipo, cor_id, nome, unidade, saldo, minimo)
        VALUES (${DEMO_CONTA_ID}, ${id}, 'material_cor', ${id}, ${`${nome} ${cor}`},
                ${tipo === 'resina' ? 'ml' : 'g'}, ${saldo}, ${minimo})`);
    }
  }
  await tx.query(sql.typeAlias('void')`
    INSERT INTO insumos (conta_id, tipo, nome, unidade, saldo, minimo)
    VALUES (${DEMO_CONTA_ID}, 'componente', 'Ímã de neodímio 6x2 mm', 'un', 340, 100),
           (${DEMO_CONTA_ID}, 'componente', 'Soquete E27 com cabo', 'un', 12, 20),
           (${DEMO_CONTA_ID}, 'embalagem', 'Caixa kraft P', 'un', 150, 50)`);
}

const PRODUTOS: [string, string, [string, string, number][]][] = [
  ['VASO-GEO', 'Vaso geométrico', [['P', 'Pequeno', 3900], ['M', 'Médio', 5900], ['G', 'Grande', 8900]]],
  ['LUA', 'Luminária lua', [['15', '15 cm', 12900], ['20', '20 cm', 17900]]],
  ['SUP-FONE', 'Suporte de fone', [['PT', 'Preto', 4500], ['BR', 'Branco', 4500]]],
  ['CHAV-DRAG', 'Chaveiro dragão articulado', [['UN', 'Unidade', 1500]]],
  ['ORG-MESA', 'Organizador de mesa', [['STD', 'Padrão', 6900]]],
  ['PORTA-CAN', 'Porta-canetas hexagonal', [['STD', 'Padrão', 2900]]],
  ['MINI-SUC', 'Mini vaso para suculenta', [['UN', 'Unidade', 1900]]],
  ['ENGR-KIT', 'Kit de engrenagens educativo', [['STD', 'Padrão', 9900]]],
];

async function criarProdutos(tx: Tx, canais: string[]): Promise<void> {
  const local = await tx.one(sql.type(Id)`SELECT id FROM locais WHERE conta_id = ${DEMO_CONTA_ID} AND tipo = 'proprio'`);
  const consignado = await tx.one(sql.type(Id)`
    INSERT INTO locais (conta_id, nome, tipo) VALUES (${DEMO_CONTA_ID}, 'Loja parceira (consignado)', 'consignado')
    RETURNING id`);
  let n = 0;
  for (const [sku, nome, variacoes] of PRODUTOS) {
    const produto = await tx.one(sql.type(Id)`
      INSERT INTO produtos (conta_id, sku, nome, descricao)
      VALUES (${DEMO_CONTA_ID}, ${sku}, ${nome}, ${`${nome} impresso em 3D.`}) RETURNING id`);
    for (const [sufixo, nomeVariacao, preco] of variacoes) {
      n++;
      const multiplo = sku === 'CHAV-DRAG' ? 5 : 1;
      const variacao = await tx.one(sql.type(Id)`
        INSERT INTO variacoes (conta_id, produto_id, sku, nome, quantidade_minima, multiplo, posicao)
        VALUES (${DEMO_CONTA_ID}, ${produto.id}, ${`${sku}-${sufixo}`}, ${nomeVariacao}, ${multiplo}, ${multiplo}, ${n})
        RETURNING id`);
      if (sku === 'LUA') {
        await tx.query(sql.typeAlias('void')`
          INSERT INTO partes (conta_id, variacao_id, nome, quantidade, posicao)
          VALUES (${DEMO_CONTA_ID}, ${variacao.id}, 'Base', 1, 0), (${DEMO_CONTA_ID}, ${variacao.id}, 'Cúpula', 1, 1)`);
      }
      const [loja, marketplace, atacado] = canais;
      await tx.query(sql.typeAlias('void')`
        INSERT INTO precos (conta_id, variacao_id, canal_id, a_partir_de, preco_centavos)
        VALUES (${DEMO_CONTA_ID}, ${variacao.id}, ${loja ?? ''}, 1, ${preco}),
               (${DEMO_CONTA_ID}, ${variacao.id}, ${loja ?? ''}, 10, ${Math.round(preco * 0.9)}),
               (${DEMO_CONTA_ID}, ${variacao.id}, ${marketplace ?? ''}, 1, ${Math.round(preco * 1.2)}),
               (${DEMO_CONTA_ID}, ${variacao.id}, ${atacado ?? ''}, 20, ${Math.round(preco * 0.7)}),
               (${DEMO_CONTA_ID}, ${variacao.id}, ${atacado ?? ''}, 100, ${Math.round(preco * 0.6)})`);
      await tx.query(sql.typeAlias('void')`
        INSERT INTO estoque_saldos (conta_id, local_id, produto_id, variacao_id, saldo)
        VALUES (${DEMO_CONTA_ID}, ${local.id}, ${produto.id}, ${variacao.id}, ${(n * 7) % 23}),
               (${DEMO_CONTA_ID}, ${consignado.id}, ${produto.id}, ${variacao.id}, ${n % 4})`);
    }
  }
}

async function criarEtapas(tx: Tx): Promise<void> {
  await tx.query(sql.typeAlias('void')`
    INSERT INTO etapas (conta_id, nome, ordem)
    SELECT ${DEMO_CONTA_ID}, nome, ordem
      FROM unnest(ARRAY['Fila', 'Fatiamento', 'Impressão', 'Pós-processamento', 'Embalagem']) WITH ORDINALITY AS e(nome, ordem)`);
}

async function criarCotacoesEPedidos(tx: Tx): Promise<void> {
  const cotacoes: [string, string][] = [['Marina Souza', 'rascunho'], ['Carlos Lima', 'enviada'], ['Estúdio Prisma', 'aprovada']];
  const ids: string[] = [];
  for (const [cliente, status] of cotacoes) {
    const cotacao = await tx.one(sql.type(Id)`
      INSERT INTO cotacoes (conta_id, cliente_nome, canal_id, validade)
      SELECT ${DEMO_CONTA_ID}, ${cliente}, id, (now() + interval '15 days')::date
        FROM canais WHERE conta_id = ${DEMO_CONTA_ID} AND tipo = 'loja_propria'
      RETURNING id`);
    ids.push(cotacao.id);
    await tx.query(sql.typeAlias('void')`
      INSERT INTO cotacao_itens (conta_id, cotacao_id, posicao, tipo, produto_id, variacao_id, nome, quantidade, preco_unitario_centavos)
      SELECT ${DEMO_CONTA_ID}, ${cotacao.id}, 0, 'catalogo', v.produto_id, v.id, p.nome || ' ' || v.nome, 4, 5900
        FROM variacoes v JOIN produtos p ON p.conta_id = v.conta_id AND p.id = v.produto_id
       WHERE v.conta_id = ${DEMO_CONTA_ID} AND v.sku = 'VASO-GEO-M'`);
    await tx.query(sql.typeAlias('void')`
      INSERT INTO cotacao_itens (conta_id, cotacao_id, posicao, tipo, nome, quantidade, preco_unitario_centavos)
      VALUES (${DEMO_CONTA_ID}, ${cotacao.id}, 1, 'avulso', 'Peça sob medida (modelo do cliente)', 1, 12000)`);
    if (status !== 'rascunho') {
      await tx.query(sql.typeAlias('void')`UPDATE cotacoes SET status = 'enviada' WHERE conta_id = ${DEMO_CONTA_ID} AND id = ${cotacao.id}`);
    }
    if (status === 'aprovada') {
      await tx.query(sql.typeAlias('void')`UPDATE cotacoes SET status = 'aprovada' WHERE conta_id = ${DEMO_CONTA_ID} AND id = ${cotacao.id}`);
    }
  }
  const aprovada = ids[2] ?? '';
  const pedido = await tx.one(sql.type(Id)`
    INSERT INTO pedidos_producao (conta_id, tipo, origem, cotacao_id, cliente_nome, prazo, prioridade, pagamento_situacao, valor_centavos)
    VALUES (${DEMO_CONTA_ID}, 'cliente', 'cotacao', ${aprovada}, 'Estúdio Prisma', (now() + interval '7 days')::date, 'urgente', 'sinal_pago', 35600)
    RETURNING id`);
  await tx.query(sql.typeAlias('void')`
    INSERT INTO pedido_itens (conta_id, pedido_id, posicao, tipo, produto_id, variacao_id, cotacao_id, cotacao_item_id, nome, quantidade, etapa_id)
    SELECT ${DEMO_CONTA_ID}, ${pedido.id}, ci.posicao, 'cotacao', ci.produto_id, ci.variacao_id, ci.cotacao_id, ci.id, ci.nome, ci.quantidade,
           (SELECT id FROM etapas WHERE conta_id = ${DEMO_CONTA_ID} AND nome = 'Impressão')
      FROM cotacao_itens ci WHERE ci.conta_id = ${DEMO_CONTA_ID} AND ci.cotacao_id = ${aprovada}`);
  await tx.query(sql.typeAlias('void')`UPDATE pedidos_producao SET situacao = 'em_producao' WHERE conta_id = ${DEMO_CONTA_ID} AND id = ${pedido.id}`);
  const reposicao = await tx.one(sql.type(Id)`
    INSERT INTO pedidos_producao (conta_id, tipo, origem, prioridade)
    VALUES (${DEMO_CONTA_ID}, 'estoque', 'repor', 'normal') RETURNING id`);
  await tx.query(sql.typeAlias('void')`
    INSERT INTO pedido_itens (conta_id, pedido_id, posicao, tipo, produto_id, variacao_id, nome, quantidade)
    SELECT ${DEMO_CONTA_ID}, ${reposicao.id}, 0, 'catalogo', v.produto_id, v.id, 'Chaveiro dragão articulado', 20
      FROM variacoes v WHERE v.conta_id = ${DEMO_CONTA_ID} AND v.sku = 'CHAV-DRAG-UN'`);
}
