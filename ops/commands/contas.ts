// Accounts, users and API keys, as the application's screen manages them.
import { z } from 'zod';
import { criarChave, listarChaves, revogarChave } from '#shared/db/chaves.ts';
import { alterarConta, criarConta, criarUsuario, definirPermissoes, listarContas, listarUsuarios } from '#shared/db/contas.ts';
import { ESCOPOS, PERMISSOES } from '#shared/domain/acesso.ts';
import { defineCommand, list, UsageError } from '../command.ts';

const booleano = z.enum(['true', 'false']).transform((v) => v === 'true');

export const contaCommands = [
  defineCommand({
    name: 'contas create',
    summary: 'Create an account on a plan (bancada, oficina, farm).',
    options: z.object({
      nome: z.string().min(1),
      plano: z.string().default('oficina'),
      fusoHorario: z.string().optional(),
    }),
    run: async (o, { pool, out }) => out(await criarConta(pool, { nome: o.nome, planoId: o.plano, fusoHorario: o.fusoHorario })),
  }),
  defineCommand({
    name: 'contas list',
    summary: 'List accounts.',
    options: z.object({}),
    run: async (_o, { pool, out }) => out(await listarContas(pool)),
  }),
  defineCommand({
    name: 'contas set',
    summary: 'Block or unblock an account, switch its API module, or move it to another plan.',
    options: z.object({
      conta: z.uuid(),
      bloqueada: booleano.optional(),
      apiAtiva: booleano.optional(),
      plano: z.string().optional(),
    }),
    run: async (o, { pool, out }) => {
      const conta = await alterarConta(pool, o.conta, { bloqueada: o.bloqueada, apiAtiva: o.apiAtiva, planoId: o.plano });
      if (!conta) throw new UsageError(`no account ${o.conta}`);
      out(conta);
    },
  }),
  defineCommand({
    name: 'usuarios add',
    summary: `Add a user to an account with permissions (${PERMISSOES.join(', ')}).`,
    options: z.object({
      conta: z.uuid(),
      nome: z.string().min(1),
      email: z.email(),
      permissoes: list(z.enum(PERMISSOES)).default([]),
    }),
    run: async (o, { pool, out }) =>
      out(await criarUsuario(pool, { contaId: o.conta, nome: o.nome, email: o.email, permissoes: o.permissoes })),
  }),
  defineCommand({
    name: 'usuarios set-permissions',
    summary: 'Replace the permissions of a user (their keys lose what they lose, at once).',
    options: z.object({ conta: z.uuid(), usuario: z.uuid(), permissoes: list(z.enum(PERMISSOES)).default([]) }),
    run: async (o, { pool, out }) => {
      const usuario = await definirPermissoes(pool, o.conta, o.usuario, o.permissoes);
      if (!usuario) throw new UsageError(`no user ${o.usuario} in account ${o.conta}`);
      out(usuario);
    },
  }),
  defineCommand({
    name: 'usuarios list',
    summary: 'List the users of an account.',
    options: z.object({ conta: z.uuid() }),
    run: async (o, { pool, out }) => out(await listarUsuarios(pool, o.conta)),
  }),
  defineCommand({
    name: 'chaves create',
    summary: `Create an API key for a user; the token is printed once. Scopes: ${ESCOPOS.join(', ')}.`,
    options: z.object({
      conta: z.uuid(),
      usuario: z.uuid(),
      nome: z.string().min(1).max(100),
      escopos: list(z.enum(ESCOPOS)).default([]),
      expiraEm: z.iso.datetime({ offset: true }).optional(),
    }),
    run: async (o, { pool, out }) => {
      const { chave, token } = await criarChave(pool, {
        contaId: o.conta,
        usuarioId: o.usuario,
        nome: o.nome,
        escopos: o.escopos,
        expiraEm: o.expiraEm ? new Date(o.expiraEm) : null,
      });
      out({ ...chave, token });
    },
  }),
  defineCommand({
    name: 'chaves revoke',
    summary: 'Revoke an API key (it answers 401 from now on).',
    options: z.object({ conta: z.uuid(), chave: z.uuid() }),
    run: async (o, { pool, out }) => {
      const chave = await revogarChave(pool, o.conta, o.chave);
      if (!chave) throw new UsageError(`no key ${o.chave} in account ${o.conta}`);
      out(chave);
    },
  }),
  defineCommand({
    name: 'chaves list',
    summary: 'List the keys of an account (never their tokens).',
    options: z.object({ conta: z.uuid() }),
    run: async (o, { pool, out }) => out(await listarChaves(pool, o.conta)),
  }),
];
