// GET /insumos/materiais: materials with their colors. The cost per kg is cost data (DESIGN §4):
// present only when the key's creator holds custos.ver, absent (not null) otherwise.
import { z } from 'zod';
import { listarMateriais, TIPOS_MATERIAL, type MaterialRow } from '../../shared/db/materiais.ts';
import { PERMISSAO_CUSTOS } from '../../shared/domain/acesso.ts';
import { envelope, listCost, listQuery, toPage } from '../lists.ts';
import { exemploMaterial } from './exemplos.ts';
import { defineRoute } from './types.ts';

export const Material = z.object({
  id: z.uuid(),
  nome: z.string(),
  tipo: z.enum(TIPOS_MATERIAL),
  cores: z.array(z.object({
    id: z.uuid().describe('The material_cor id: insumo.id of its supply balance in /estoque-insumos.'),
    nome: z.string(),
    hex: z.string().regex(/^#[0-9A-Fa-f]{6}$/),
    ativa: z.boolean(),
  }).strict()),
  custo_por_kg_centavos: z.number().int().min(0).optional()
    .describe('Cost data: present only when the key\'s creator holds custos.ver.'),
  criado_em: z.iso.datetime({ offset: true }),
  atualizado_em: z.iso.datetime({ offset: true }).describe('Moves when the material or one of its colors changes.'),
}).strict();

export const listMateriais = defineRoute({
  operationId: 'listMateriais',
  method: 'GET',
  path: '/insumos/materiais',
  tag: 'Catálogo',
  summary: 'List materials and colors',
  scope: 'catalogo:ler',
  permission: 'produtos.ver',
  cost: listCost,
  query: listQuery,
  responses: { 200: { description: 'A page of materials, oldest first.', schema: envelope(Material), example: { dados: [exemploMaterial], proximo_cursor: null } } },
  handler: async ({ caller, query, db }) => {
    const custos = caller.permissoes.includes(PERMISSAO_CUSTOS);
    const present = ({ cursor_ts: _c, custo_por_kg_centavos, ...material }: MaterialRow) =>
      custos ? { ...material, custo_por_kg_centavos } : material;
    return { status: 200, body: toPage(await listarMateriais(db, caller.contaId, query), query.limite, present) };
  },
});
