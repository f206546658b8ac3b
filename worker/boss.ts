// pg-boss, with its schema in the service's database. The worker runs it fully; the web process
// and the release phase only send jobs or install the schema.
import { PgBoss } from 'pg-boss';

export const BOSS_SCHEMA = 'pgboss';

export function createBoss(
  databaseUrl: string,
  options: { max?: number; supervise?: boolean; schedule?: boolean; applicationName?: string } = {},
): PgBoss {
  return new PgBoss({
    connectionString: databaseUrl,
    schema: BOSS_SCHEMA,
    application_name: options.applicationName ?? 'worker',
    max: options.max ?? 10,
    supervise: options.supervise ?? true,
    schedule: options.schedule ?? true,
  });
}
