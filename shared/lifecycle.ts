// Process lifecycle for the Procfile roles: SIGTERM or SIGINT starts one graceful stop, which
// must finish within the grace period (Heroku-style platforms kill at 30 s).
import type { Logger } from './log.ts';

export function stopOnSignals(
  log: Logger,
  graceMs: number,
  stop: () => Promise<void>,
  options: { whenOrphaned?: boolean } = {},
): void {
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals | 'orphaned') => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'stopping');
    const deadline = setTimeout(() => {
      log.error({ graceMs }, 'graceful stop took too long; exiting');
      process.exit(1);
    }, graceMs + 2_000);
    deadline.unref();
    stop().then(
      () => {
        log.info('stopped');
        process.exit(0);
      },
      (error: unknown) => {
        log.error({ err: error }, 'error while stopping');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  // npm forwards no signal when it is itself killed: a service started through it would live on
  // as an orphan (holding its port and the embedded database), so it stops when its parent goes.
  if (options.whenOrphaned) {
    const parent = process.ppid;
    setInterval(() => process.ppid !== parent && onSignal('orphaned'), 1_000).unref();
  }
}

/** For entry points: a database URL is required outside npm start. */
export function requireDatabaseUrl(url: string | undefined, role: string): string {
  if (url) return url;
  process.stderr.write(
    `DATABASE_URL is not set: the ${role} process needs it. For a local run on the embedded database, use npm start.\n`,
  );
  process.exit(78);
}
