// pg-boss, with its schema in the service's database. The worker runs it fully; the web process
// only sends jobs; the release installs its schema.
import { PgBoss } from 'pg-boss';

export const BOSS_SCHEMA = 'pgboss';
/**
 * How often the worker's pg-boss looks for jobs whose expiry ran out, and deletes old completed
 * jobs. Its jobs are routines (cron, lifting suspensions), none of which waits on a dead worker
 * for long; webhook deliveries are not pg-boss jobs (worker/webhooks/lease.ts).
 */
export const BOSS_MONITOR_SECONDS = 30;
export const BOSS_MAINTENANCE_SECONDS = 60;

export function createBoss(
  databaseUrl: string,
  options: { max?: number; supervise?: boolean; schedule?: boolean; applicationName?: string; pooled?: boolean } = {},
): PgBoss {
  return new PgBoss({
    connectionString: databaseUrl,
    // A direct session runs without the timeouts the role's defaults give the web's pooled sessions
    // (pg-boss's maintenance may take longer); a pooler takes no settings in the startup packet.
    ...(options.pooled ? {} : { options: '-c statement_timeout=0 -c idle_in_transaction_session_timeout=0' }),
    schema: BOSS_SCHEMA,
    application_name: options.applicationName ?? 'worker',
    max: options.max ?? 10,
    supervise: options.supervise ?? true,
    superviseIntervalSeconds: BOSS_MONITOR_SECONDS,
    monitorIntervalSeconds: BOSS_MONITOR_SECONDS,
    maintenanceIntervalSeconds: BOSS_MAINTENANCE_SECONDS,
    schedule: options.schedule ?? true,
  });
}

/** Creates or upgrades pg-boss's own schema (pg-boss migrates it under its own lock). */
export async function installBossSchema(databaseUrl: string): Promise<void> {
  const boss = createBoss(databaseUrl, { max: 2, supervise: false, schedule: false, applicationName: 'release' });
  boss.on('error', () => undefined);
  await boss.start();
  await boss.stop({ graceful: false });
}
