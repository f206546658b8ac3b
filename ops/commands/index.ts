// Every command of the operator CLI, by resource.
import type { Command } from '../command.ts';
import { catalogoCommands } from './catalogo.ts';
import { contaCommands } from './contas.ts';
import { estoqueCommands } from './estoque.ts';
import { cotacaoCommands } from './cotacoes.ts';
import { producaoCommands } from './producao.ts';
import { statusCommands } from './status.ts';
import { webhookCommands } from './webhooks.ts';

export const commands: readonly Command[] = [...contaCommands, ...catalogoCommands, ...estoqueCommands, ...webhookCommands, ...cotacaoCommands, ...producaoCommands, ...statusCommands];
