// The operator CLI (npm run ops -- <resource> <verb> --option value …): what the application's
// screen does, for operators and tests. Needs DATABASE_URL.
import { z } from 'zod';
import { loadConfigOrExit } from '../shared/config.ts';
import { release } from '../shared/db/release.ts';
import { createDatabasePool } from '../shared/db/pool.ts';
import { requireDatabaseUrl } from '../shared/lifecycle.ts';
import { defineCommand, parseOptions, usage, UsageError, type Command } from './command.ts';
import { commands } from './commands/index.ts';
import { issueDemoKey, loadDemo } from './demo.ts';

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

async function main(argv: string[]): Promise<number> {
  const name = argv.slice(0, 2).join(' ');
  // Commands are "<resource> <verb>", and a few are one word (status).
  const command = all.find((c) => c.name === name) ?? all.find((c) => c.name === argv[0]);
  if (!command) {
    process.stderr.write(argv.length ? `unknown command: ${name}\n\n${help()}` : help());
    return argv.length ? 64 : 0;
  }
  const options = parseOptions(command, argv.slice(command.name.split(' ').length));
  const config = loadConfigOrExit();
  const databaseUrl = requireDatabaseUrl(config.DATABASE_URL, 'ops');
  const pool = await createDatabasePool(databaseUrl, { size: 2, statementTimeoutMs: 60_000, applicationName: 'ops' });
  try {
    const interrupted = new AbortController();
    process.once('SIGINT', () => interrupted.abort());
    await command.run(options as never, {
      pool, config, databaseUrl, signal: interrupted.signal,
      out: (v) => process.stdout.write(`${JSON.stringify(v, null, 2)}\n`),
      write: (text) => process.stdout.write(text),
    });
    return 0;
  } finally {
    await pool.end();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    if (error instanceof UsageError || (error instanceof Error && 'code' in error && String(error.code).startsWith('ERR_PARSE_ARGS'))) {
      process.stderr.write(`${error.message}\n`);
      process.exit(64);
    }
    const cause = error instanceof Error ? (error.cause as Error | undefined) : undefined;
    process.stderr.write(`error: ${error instanceof Error ? error.message : String(error)}${cause?.message ? `\n  ${cause.message}` : ''}\n`);
    process.exit(1);
  },
);
