// The operator CLI's building blocks: a command declares its options with zod and gets them
// parsed and validated; it prints JSON so scripts and tests can read it.
import { parseArgs } from 'node:util';
import { z } from 'zod';
import type { Config } from '#shared/config.ts';
import type { Pool } from '#shared/db/pool.ts';

export type OpsContext = {
  pool: Pool; config: Config; databaseUrl: string;
  /** Prints a result as JSON (what scripts and tests read). */
  out: (value: unknown) => void;
  /** Writes text as it is (a screen for a person: `status`). */
  write: (text: string) => void;
  /** Aborted when the operator interrupts a command that runs until stopped (`status --watch`). */
  signal?: AbortSignal;
};

export type Command<S extends z.ZodObject = z.ZodObject> = {
  /** "<resource> <verb>", e.g. "chaves create". */
  name: string;
  summary: string;
  options: S;
  run: (options: z.output<S>, ctx: OpsContext) => Promise<void>;
};

export function defineCommand<S extends z.ZodObject>(command: Command<S>): Command {
  return command as unknown as Command;
}

export class UsageError extends Error {}

/** Options are --kebab-case on the command line and camelCase in the schema. */
export function parseOptions(command: Command, argv: string[]): unknown {
  const keys = Object.keys(command.options.shape);
  const { values, positionals } = parseArgs({
    args: argv,
    options: Object.fromEntries(keys.map((k) => [kebab(k), { type: isFlag(command.options.shape[k]) ? 'boolean' as const : 'string' as const }])),
    strict: true,
    allowPositionals: true,
  });
  if (positionals.length > 0) throw new UsageError(`unexpected argument: ${positionals.join(' ')}`);
  const raw = Object.fromEntries(Object.entries(values).map(([k, v]) => [camel(k), v]));
  const parsed = command.options.safeParse(raw);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  --${kebab(String(i.path[0] ?? ''))}: ${i.message}`);
    throw new UsageError(`invalid options for "${command.name}":\n${lines.join('\n')}`);
  }
  return parsed.data;
}

export function usage(command: Command): string {
  const options = Object.entries(command.options.shape).map(([key, schema]) => {
    const optional = (schema as z.ZodType).safeParse(undefined).success;
    const value = isFlag(schema) ? '' : ' …';
    return optional ? `[--${kebab(key)}${value}]` : `--${kebab(key)}${value}`;
  });
  return `  ${command.name} ${options.join(' ')}\n      ${command.summary}`;
}

/** An option that takes no value (--json): its schema accepts true and no string (a coerced number takes '1'). */
function isFlag(schema: unknown): boolean {
  const s = schema as z.ZodType;
  return s.safeParse(true).success && !['x', '1', 'true'].some((text) => s.safeParse(text).success);
}

const kebab = (s: string) => s.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
const camel = (s: string) => s.replace(/-([a-z])/g, (_m, c: string) => c.toUpperCase());

/** A comma-separated list option. */
export const list = <T extends z.ZodType<unknown, string>>(item: T) =>
  z.string().transform((s) => s.split(',').map((p) => p.trim()).filter(Boolean)).pipe(z.array(item));
