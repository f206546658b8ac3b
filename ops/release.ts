// The release phase (Procfile: release): the schema's migrations and the database's code in one
// transaction (shared/db/release.ts), then pg-boss's own schema, before any new web or worker
// process starts.
import { installBossSchema } from '#shared/boss.ts';
import { loadConfigOrExit } from '#shared/config.ts';
import { release } from '#shared/db/release.ts';
import { requireDatabaseUrl } from '#shared/lifecycle.ts';

const config = loadConfigOrExit();
const databaseUrl = requireDatabaseUrl(config.DATABASE_URL, 'release');
const { applied, code } = await release(databaseUrl, { rebuild: process.argv.includes('--rebuild'), statementTimeoutMs: config.DB_STATEMENT_TIMEOUT_MS });
await installBossSchema(databaseUrl);
process.stdout.write(`migrations applied: ${applied.length ? applied.join(', ') : 'none pending'}; code ${code}\n`);
