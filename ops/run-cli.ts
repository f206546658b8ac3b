// The operator CLI as a function: argv and an environment in, an exit status out, what it prints
// written to the sinks it is given. ops/cli.ts runs it for a terminal; the suites call it in their
// own process, as starting a process per command made the CLI suites the slowest of npm test.
import { z } from 'zod';
import { ConfigError, loadConfig } from '#shared/config.ts';
import { release } from '#shared/db/release.ts';
import { createDatabasePool } from '#shared/db/pool.ts';
import { defineCommand, parseOptions, usage, UsageError, type Command } from './command.ts';
import { commands } from './commands/index.ts';
import { issueDemoKey, loadDemo } from './demo.ts';

/**
 * Where the CLI writes: its results (stdout) and its messages (stderr); and the signal that stops a
 * command that runs until stopped (`status --watch`), which a terminal aborts on SIGINT.
 */
export type CliOutput = { stdout: (text: string) => void; stderr: (text: string) => void; signal?: AbortSignal };

const builtIn: Command[] = [
  defineCommand({
    name: 'db release',
    summary: 'Apply pending migrations and rebuild the database code when it changed (npm run release also installs pg-boss).',
    options: z.object({}),
    run: async (_o, { databaseUrl, out }) => out(await release(databaseUrl)),
  }),
  defineCommand({
    name: 'demo load',
    summary: 'Load the demo account and data (once) and print a fresh demo API key.',
    options: z.object({}),
    run: async (_o, { pool, out }) => {
      const loaded = await loadDemo(pool);
      out({ loaded, token: await issueDemoKey(pool) });
    },
  }),
];

const all = [...builtIn, ...commands];

function help(): string {
  return `usage: npm run ops -- <resource> <verb> [--option value …]\n\n${all.map(usage).join('\n')}\n`;
}

/** Runs one command line; the status is the process's: 0, 1 (the command failed), 64 (usage), 78 (configuration). */
export async function runCli(argv: string[], env: NodeJS.ProcessEnv, io: CliOutput): Promise<number> {
  try {
    return await dispatch(argv, env, io);
  } catch (error) {
    return failed(error, io);
  }
}

async function dispatch(argv: string[], env: NodeJS.ProcessEnv, io: CliOutput): Promise<number> {
  const name = argv.slice(0, 2).join(' ');
  // Commands are "<resource> <verb>", and a few are one word (status).
  const command = all.find((c) => c.name === name) ?? all.find((c) => c.name === argv[0]);
  if (!command) {
    io.stderr(argv.length ? `unknown command: ${name}\n\n${help()}` : help());
    return argv.length ? 64 : 0;
  }
  const options = parseOptions(command, argv.slice(command.name.split(' ').length));
  const config = loadConfig(env);
  const databaseUrl = config.DATABASE_URL;
  if (!databaseUrl) {
    io.stderr('DATABASE_URL is not set: the ops process needs it. For a local run on the embedded database, use npm start.\n');
    return 78;
  }
  const pool = await createDatabasePool(databaseUrl, { size: 2, statementTimeoutMs: 60_000, applicationName: 'ops' });
  try {
    await command.run(options as never, {
      pool, config, databaseUrl, signal: io.signal,
      out: (v) => io.stdout(`${JSON.stringify(v, null, 2)}\n`),
      write: io.stdout,
    });
    return 0;
  } finally {
    await pool.end();
  }
}

function failed(error: unknown, io: CliOutput): number {
  if (error instanceof ConfigError) {
    io.stderr(`${error.message}\n`);
    return 78;
  }
  if (error instanceof UsageError || (error instanceof Error && 'code' in error && String(error.code).startsWith('ERR_PARSE_ARGS'))) {
    io.stderr(`${error.message}\n`);
    return 64;
  }
  const cause = error instanceof Error ? (error.cause as Error | undefined) : undefined;
  io.stderr(`error: ${error instanceof Error ? error.message : String(error)}${cause?.message ? `\n  ${cause.message}` : ''}\n`);
  return 1;
}
