// GET /insumos/materiais: materials with their colors. The cost per kg is cost data
// (docs/decisions/0007-keys-scopes-and-permissions.md): present only when the key's creator holds
// custos.ver, absent (not null) otherwise.
import { z } from 'zod';
import { listarMateriais, TIPOS_MATERIAL, type MaterialRow } from '#shared/db/materiais.ts';
import { PERMISSAO_CUSTOS } from '#shared/domain/acesso.ts';
import { conditionalList, listResponses, envelope, listCost, listQuery, toPage } from './lists.ts';
import { exemploMaterial } from './exemplos.ts';
import { defineRoute } from './types.ts';

export const Material = z.object({
  id: z.uuid(),
  nome: z.string(),
  tipo: z.enum(TIPOS_MATERIAL),
  cores: z.array(z.object({
    id: z.uuid().describe('O id da material_cor: o insumo.id do seu saldo em /estoque-insumos.'),
    nome: z.string(),
    hex: z.string().regex(/^#[0-9A-Fa-f]{6}$/),
    ativa: z.boolean(),
  }).strict()),
  custo_por_kg_centavos: z.number().int().min(0).optional()
    .describe('Dado de custo: só aparece quando quem criou a chave tem a permissão custos.ver.'),
  criado_em: z.iso.datetime({ offset: true }),
  atualizado_em: z.iso.datetime({ offset: true }).describe('Muda sempre que o material ou uma de suas cores é alterada.'),
}).strict();

export const listMateriais = defineRoute({
  operationId: 'listMateriais',
  method: 'GET',
  path: '/insumos/materiais',
  tag: 'Catálogo',
  summary: 'Lista os materiais e suas cores',
  scope: 'catalogo:ler',
  permission: 'produtos.ver',
  cost: listCost,
  query: listQuery('insumos-materiais'),
  ...conditionalList,
  responses: listResponses('Uma página de materiais, do mais antigo ao mais novo.', envelope(Material), { dados: [exemploMaterial], proximo_cursor: null }),
  handler: async ({ caller, query, db }) => {
    const custos = caller.permissoes.includes(PERMISSAO_CUSTOS);
    const present = ({ cursor_ts: _c, custo_por_kg_centavos, ...material }: MaterialRow) =>
      custos ? { ...material, custo_por_kg_centavos } : material;
    return { status: 200, body: toPage(await listarMateriais(db, caller.contaId, query), query, present) };
  },
});
