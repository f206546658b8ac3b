// Queries on accounts, users and plans.
import { z } from 'zod';
import { PERMISSOES } from '../domain/acesso.ts';
import { sql, type Db } from './pool.ts';

export const Plano = z.object({
  id: z.string(),
  nome: z.string(),
  api_disponivel: z.boolean(),
  chaves_ativas: z.number().int(),
  webhook_endpoints: z.number().int(),
  leituras_por_minuto: z.number().int(),
  escritas_por_minuto: z.number().int(),
  chamadas_por_mes: z.number().int(),
  rajada: z.number().int(),
  rajada_recarga_por_segundo: z.number().int(),
  simultaneas_por_chave: z.number().int(),
  simultaneas_por_conta: z.number().int(),
  entregas_webhook_por_hora: z.number().int(),
});
export type Plano = z.infer<typeof Plano>;

const ContaRow = z.object({
  id: z.string(),
  nome: z.string(),
  plano_id: z.string(),
  bloqueada: z.boolean(),
  api_ativa: z.boolean(),
  fuso_horario: z.string(),
  criado_em: z.string(),
});
export type ContaRow = z.infer<typeof ContaRow>;

export async function criarConta(db: Db, input: { nome: string; planoId: string; fusoHorario?: string }): Promise<ContaRow> {
  return db.one(sql.type(ContaRow)`
    INSERT INTO contas (nome, plano_id, fuso_horario)
    VALUES (${input.nome}, ${input.planoId}, ${input.fusoHorario ?? 'America/Sao_Paulo'})
    RETURNING id, nome, plano_id, bloqueada, api_ativa, fuso_horario, criado_em`);
}

export async function listarContas(db: Db): Promise<readonly ContaRow[]> {
  return db.any(sql.type(ContaRow)`
    SELECT id, nome, plano_id, bloqueada, api_ativa, fuso_horario, criado_em FROM contas ORDER BY criado_em, id`);
}

export async function lerPlanoDaConta(db: Db, contaId: string): Promise<Plano> {
  return db.one(sql.type(Plano)`
    SELECT p.* FROM contas c JOIN planos p ON p.id = c.plano_id WHERE c.id = ${contaId}`);
}

export async function alterarConta(
  db: Db,
  contaId: string,
  change: { bloqueada?: boolean; apiAtiva?: boolean; planoId?: string },
): Promise<ContaRow | null> {
  return db.maybeOne(sql.type(ContaRow)`
    UPDATE contas SET
      bloqueada = coalesce(${change.bloqueada ?? null}, bloqueada),
      api_ativa = coalesce(${change.apiAtiva ?? null}, api_ativa),
      plano_id = coalesce(${change.planoId ?? null}, plano_id)
    WHERE id = ${contaId}
    RETURNING id, nome, plano_id, bloqueada, api_ativa, fuso_horario, criado_em`);
}

const UsuarioRow = z.object({
  id: z.string(),
  conta_id: z.string(),
  nome: z.string(),
  email: z.string(),
  permissoes: z.array(z.enum(PERMISSOES)),
  ativo: z.boolean(),
});
export type UsuarioRow = z.infer<typeof UsuarioRow>;

export async function criarUsuario(
  db: Db,
  input: { contaId: string; nome: string; email: string; permissoes: readonly string[] },
): Promise<UsuarioRow> {
  return db.one(sql.type(UsuarioRow)`
    INSERT INTO usuarios (conta_id, nome, email, permissoes)
    VALUES (${input.contaId}, ${input.nome}, ${input.email}, ${sql.array([...input.permissoes], 'text')})
    RETURNING id, conta_id, nome, email, permissoes, ativo`);
}

export async function definirPermissoes(
  db: Db,
  contaId: string,
  usuarioId: string,
  permissoes: readonly string[],
): Promise<UsuarioRow | null> {
  return db.maybeOne(sql.type(UsuarioRow)`
    UPDATE usuarios SET permissoes = ${sql.array([...permissoes], 'text')}
    WHERE conta_id = ${contaId} AND id = ${usuarioId}
    RETURNING id, conta_id, nome, email, permissoes, ativo`);
}

export async function listarUsuarios(db: Db, contaId: string): Promise<readonly UsuarioRow[]> {
  return db.any(sql.type(UsuarioRow)`
    SELECT id, conta_id, nome, email, permissoes, ativo FROM usuarios WHERE conta_id = ${contaId} ORDER BY criado_em, id`);
}
