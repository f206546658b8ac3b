// The route table: every endpoint of the API, in the order the OpenAPI document lists them.
import { listCanais } from './canais.ts';
import { rotasDeCotacoes } from './cotacoes.ts';
import { listEstoque, listEstoqueInsumos } from './estoque.ts';
import { rotasDeEventos } from './eventos.ts';
import { recuperarEventos } from './eventos-recuperar.ts';
import { getMovimento, listMovimentos, postLoteDeMovimentos, postMovimento } from './estoque-movimentos.ts';
import { listMateriais } from './materiais.ts';
import { rotasDePedidos } from './pedidos.ts';
import { getProduto, listProdutos } from './produtos.ts';
import { rotasDoSistema } from './sistema.ts';
import type { AnyRoute } from './types.ts';

export const routes: readonly AnyRoute[] = [
  ...rotasDoSistema,
  listCanais,
  listProdutos,
  getProduto,
  listMateriais,
  listEstoque,
  listMovimentos,
  postMovimento,
  postLoteDeMovimentos,
  getMovimento,
  listEstoqueInsumos,
  ...rotasDeCotacoes,
  ...rotasDePedidos,
  ...rotasDeEventos,
  recuperarEventos,
];
