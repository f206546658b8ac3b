// Every command of the operator CLI, by resource.
import type { Command } from '../command.ts';
import { contaCommands } from './contas.ts';
import { cotacaoCommands } from './cotacoes.ts';
import { producaoCommands } from './producao.ts';
import { webhookCommands } from './webhooks.ts';

export const commands: readonly Command[] = [...contaCommands, ...webhookCommands, ...cotacaoCommands, ...producaoCommands];
