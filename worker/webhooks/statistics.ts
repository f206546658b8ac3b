// The webhook pipeline's working tables' statistics, gathered again when a backlog begins
// (gatherStatistics, shared/db/deliveries.ts). The worker's connections plan each statement once
// and again whenever the statistics of its tables change. Planned while a working table was empty
// (the archive moves ended work out, and autovacuum records the emptied table), a statement kept
// reading that table whole, or once per row through an index (PIPELINE_SESSION_SETTINGS), as it
// grew, until autovacuum came back (at most once a minute): a backlog's drain cost PostgreSQL
// several times as much per delivery (docs/decisions, "Webhooks that stay fast with a backlog").
import { gatherStatistics } from '#shared/db/deliveries.ts';
import type { LoopDeps } from '../jobs/types.ts';

/** At most this often per worker: autovacuum's own pace for a backlog that lasts. */
const EVERY_MS = 60_000;

export type Statistics = {
  /** A relay pass or a take found more than it could carry: the tables are growing. Whether it gathers them now. */
  backlog(): boolean;
};

export function startStatistics({ pool, log }: Pick<LoopDeps, 'pool' | 'log'>): Statistics {
  let last = -Infinity;
  let running = false;
  return {
    backlog() {
      if (running || performance.now() - last < EVERY_MS) return false;
      running = true;
      last = performance.now();
      // In the background: the pipeline goes on meanwhile, and plans again once it is done.
      const started = performance.now();
      gatherStatistics(pool)
        .then(() => log.info({ ms: Math.round(performance.now() - started) }, 'webhook tables\' statistics gathered: a backlog began'))
        .catch((error: unknown) => log.warn({ err: error }, 'gathering the webhook tables\' statistics failed'))
        .finally(() => {
          running = false;
        });
      return true;
    },
  };
}
