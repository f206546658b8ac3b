// All configuration comes from the environment, parsed once at start by this one schema.
// A bad value stops the process with a message naming the variable (see ConfigError).
import path from 'node:path';
import { z } from 'zod';

const boolean = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((v) => v === 'true' || v === '1' || v === 'yes');

const int = (min: number, max: number) => z.coerce.number().int().min(min).max(max);

const postgresUrl = z
  .string()
  .refine((v) => /^postgres(ql)?:\/\//.test(v), 'must be a postgres:// or postgresql:// URL')
  .refine((v) => URL.canParse(v), 'must be a valid URL');

export const projectRoot = path.resolve(import.meta.dirname, '..');

/** The web's statement timeout unless DB_STATEMENT_TIMEOUT_MS says otherwise. */
export const DEFAULT_STATEMENT_TIMEOUT_MS = 15_000;

const schema = z.object({
  DATABASE_URL: postgresUrl.optional(),
  // The web's database through a pooler in transaction mode (PgBouncer), by the name Heroku gives
  // the pooled URL of a database; DATABASE_URL stays the direct one, for the worker, the release and
  // the web's sessions that need one (docs/scaling.md; README, "Behind PgBouncer").
  DATABASE_CONNECTION_POOL_URL: postgresUrl.optional(),
  EMBEDDED_PG_DIR: z.string().min(1).default(path.join(projectRoot, '.data', 'postgres')),
  PORT: int(0, 65535).default(3000),
  HOST: z.string().min(1).default('0.0.0.0'),
  PUBLIC_BASE_URL: z
    .url()
    .refine((v) => /\/v1$/.test(v), 'must end in /v1')
    .optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  DB_POOL_SIZE: int(1, 200).default(10),
  DB_POOL_WAIT_MS: int(10, 60_000).default(2_000),
  // How long the circuit breaker stays open (503 at once) before one request probes the database.
  DB_BREAKER_OPEN_MS: int(10, 600_000).default(2_000),
  DB_STATEMENT_TIMEOUT_MS: int(100, 600_000).default(DEFAULT_STATEMENT_TIMEOUT_MS),
  MAX_IN_FLIGHT: int(1, 100_000).default(1_000),
  // How long a refusal answered from memory (a bad or suspended key, api/admission/refusal-cache.ts) is held
  // before it is sent: a client that ignores Retry-After and asks again at once slows to this pace.
  REFUSAL_DELAY_MS: int(0, 10_000).default(1_000),
  SHUTDOWN_GRACE_MS: int(0, 120_000).default(25_000),
  REQUEST_LOG_FLUSH_MS: int(10, 60_000).default(1_000),
  // The catalog documents a web process holds to answer GET /produtos (api/routes/document-cache.ts); 0: none.
  CATALOGO_CACHE_MB: int(0, 4096).default(32),
  // Check every response body against its route's schema (tests turn it on; a mismatch is a 500).
  VALIDATE_RESPONSES: boolean.default(false),
  SMTP_URL: z
    .string()
    .refine((v) => /^smtps?:\/\//.test(v) && URL.canParse(v), 'must be an smtp:// or smtps:// URL')
    .optional(),
  MAIL_FROM: z.string().min(3).default('API Printfarm <nao-responda@printfarm.invalid>'),
  WEBHOOK_ALLOW_PRIVATE_NETWORKS: boolean.default(false),
  WEBHOOK_TIMEOUT_MS: int(100, 60_000).default(10_000),
  WEBHOOK_CONCURRENCY: int(1, 1_000).default(100),
  WEBHOOK_CONCURRENCY_PER_ENDPOINT: int(1, 100).default(10),
});

type Env = z.output<typeof schema>;

export type Config = Env & {
  /** The public address of the API, ending in /v1: the {base_url} of the contract. */
  baseUrl: string;
};

/** The processes of the Procfile that serve the public address (event urls, problem types). */
export type Role = 'web' | 'worker';

type Issue = { path: PropertyKey[]; message: string };

export class ConfigError extends Error {
  readonly variables: string[];
  constructor(issues: readonly Issue[]) {
    const lines = issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    super(`invalid configuration:\n${lines.join('\n')}`);
    this.name = 'ConfigError';
    this.variables = issues.map((i) => i.path.join('.'));
  }
}

/**
 * Parses the environment; empty strings count as unset. Throws ConfigError naming each bad variable.
 * A role (web, worker) must be told its public address: without PUBLIC_BASE_URL the event urls and
 * problem types it builds would point at localhost. Everything else (npm start, which runs both
 * roles on this machine, the CLI, the tests) defaults to http://localhost:$PORT/v1.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, options: { role?: Role } = {}): Config {
  const present = Object.fromEntries(
    Object.entries(env).filter(([key, value]) => key in schema.shape && value !== ''),
  );
  const parsed = schema.safeParse(present);
  const issues: Issue[] = parsed.success ? [] : [...parsed.error.issues];
  if (options.role && present.PUBLIC_BASE_URL === undefined) issues.push(baseUrlMissing(options.role));
  if (!parsed.success || issues.length > 0) throw new ConfigError(issues);
  const config = parsed.data;
  const baseUrl = config.PUBLIC_BASE_URL ?? `http://localhost:${config.PORT}/v1`;
  return { ...config, baseUrl };
}

const baseUrlMissing = (role: Role): Issue => ({
  path: ['PUBLIC_BASE_URL'],
  message: `not set: the ${role} role needs the public address of the API, ending in /v1, to build event urls ` +
    'and problem types (e.g. PUBLIC_BASE_URL=https://api.example.com/v1). npm start sets a local one itself.',
});

/** For entry points: load the configuration or print why not and exit with status 78 (EX_CONFIG). */
export function loadConfigOrExit(env: NodeJS.ProcessEnv = process.env, options: { role?: Role } = {}): Config {
  try {
    return loadConfig(env, options);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(78);
    }
    throw error;
  }
}
