// Every command of the operator CLI, by resource.
import type { Command } from '../command.ts';
import { contaCommands } from './contas.ts';

export const commands: readonly Command[] = [...contaCommands];
