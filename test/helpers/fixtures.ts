// Accounts, users and keys for tests, made through the same queries the operator CLI uses.
import { criarChave } from '../../shared/db/chaves.ts';
import { criarConta, criarUsuario } from '../../shared/db/contas.ts';
import type { Db } from '../../shared/db/pool.ts';
import { ESCOPOS, PERMISSOES, type Escopo, type Permissao } from '../../shared/domain/acesso.ts';

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
