// The release phase (Procfile: release): migrations, then pg-boss's own schema, before any new
// web or worker process starts.
import { loadConfigOrExit } from '../shared/config.ts';
import { migrate } from '../shared/db/migrate.ts';
import { requireDatabaseUrl } from '../shared/lifecycle.ts';
import { createBoss } from '../worker/boss.ts';

const config = loadConfigOrExit();
const databaseUrl = requireDatabaseUrl(config.DATABASE_URL, 'release');
const { applied } = await migrate(databaseUrl);
const boss = createBoss(databaseUrl, { max: 2, supervise: false });
boss.on('error', (error: unknown) => process.stderr.write(`pg-boss: ${String(error)}\n`));
await boss.start();
await boss.stop({ graceful: false });
process.stdout.write(`migrations applied: ${applied.length ? applied.join(', ') : 'none pending'}\n`);
