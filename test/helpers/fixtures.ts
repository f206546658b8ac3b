// Accounts, users and keys for tests, made through the same queries the operator CLI uses.
import { criarChave } from '#shared/db/chaves.ts';
import { criarConta, criarUsuario } from '#shared/db/contas.ts';
import { sql, type Db } from '#shared/db/pool.ts';
import { ESCOPOS, PERMISSOES, type Escopo, type Permissao } from '#shared/domain/acesso.ts';

export type TestAccount = { contaId: string; usuarioId: string; chaveId: string; token: string };

let counter = 0;

export async function createAccount(
  db: Db,
  options: { plano?: string; permissoes?: readonly Permissao[]; escopos?: readonly Escopo[]; nome?: string } = {},
): Promise<TestAccount> {
  counter++;
  const conta = await criarConta(db, { nome: options.nome ?? `Conta de teste ${counter}`, planoId: options.plano ?? 'farm' });
  const usuario = await criarUsuario(db, {
    contaId: conta.id,
    nome: 'Pessoa de teste',
    email: `pessoa${counter}@teste.invalid`,
    permissoes: options.permissoes ?? PERMISSOES,
  });
  const { chave, token } = await criarChave(db, {
    contaId: conta.id,
    usuarioId: usuario.id,
    nome: 'chave de teste',
    escopos: options.escopos ?? ESCOPOS,
  });
  return { contaId: conta.id, usuarioId: usuario.id, chaveId: chave.id, token };
}

export async function addKey(
  db: Db,
  account: { contaId: string; usuarioId: string },
  options: { escopos?: readonly Escopo[]; expiraEm?: Date } = {},
): Promise<{ chaveId: string; token: string }> {
  const { chave, token } = await criarChave(db, {
    contaId: account.contaId,
    usuarioId: account.usuarioId,
    nome: 'outra chave',
    escopos: options.escopos ?? ESCOPOS,
    expiraEm: options.expiraEm ?? null,
  });
  return { chaveId: chave.id, token };
}

export type Ceilings = Partial<Record<
  'chaves_ativas' | 'webhook_endpoints' | 'leituras_por_minuto' | 'escritas_por_minuto' | 'chamadas_por_mes' | 'rajada'
  | 'rajada_recarga_por_segundo' | 'simultaneas_por_chave' | 'simultaneas_por_conta' | 'entregas_webhook_por_hora', number>>;

/** A plan of its own for a suite or a benchmark: Farm's ceilings, with some changed. */
export async function createPlan(db: Db, id: string, ceilings: Ceilings): Promise<void> {
  const c = (name: keyof Ceilings) => ceilings[name] ?? null;
  await db.query(sql.typeAlias('void')`
    INSERT INTO planos (id, nome, chaves_ativas, webhook_endpoints, leituras_por_minuto, escritas_por_minuto, chamadas_por_mes,
                        rajada, rajada_recarga_por_segundo, simultaneas_por_chave, simultaneas_por_conta, entregas_webhook_por_hora)
    SELECT ${id}, ${id},
           coalesce(${c('chaves_ativas')}::int, chaves_ativas), coalesce(${c('webhook_endpoints')}::int, webhook_endpoints),
           coalesce(${c('leituras_por_minuto')}::int, leituras_por_minuto), coalesce(${c('escritas_por_minuto')}::int, escritas_por_minuto),
           coalesce(${c('chamadas_por_mes')}::int, chamadas_por_mes), coalesce(${c('rajada')}::int, rajada),
           coalesce(${c('rajada_recarga_por_segundo')}::int, rajada_recarga_por_segundo),
           coalesce(${c('simultaneas_por_chave')}::int, simultaneas_por_chave), coalesce(${c('simultaneas_por_conta')}::int, simultaneas_por_conta),
           coalesce(${c('entregas_webhook_por_hora')}::int, entregas_webhook_por_hora)
      FROM planos WHERE id = 'farm'
    ON CONFLICT (id) DO NOTHING`);
}
