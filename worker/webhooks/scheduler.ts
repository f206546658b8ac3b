// Gives jobs to deliveries that are due and have none: retries whose time has come, deliveries the
// hourly cap held until the next hour, and replays. The schedule lives in deliveries, so moving a
// delivery's next_attempt_at (an operator, a test) is all it takes to move its attempt.
import { claimDueDeliveries } from '../../shared/db/deliveries.ts';
import type { WorkerDeps } from '../jobs/types.ts';
import type { Notifier } from '../notifier.ts';
import { startPoller, type Poller } from '../poller.ts';
import { CHANNEL_DUE, enqueueJobs, ensureDeliveryQueue } from './queue.ts';

const BATCH = 500;

export function startScheduler(deps: WorkerDeps, notifier: Notifier): Poller {
  const { pool, boss, config, log } = deps;
  const poller = startPoller({
    name: 'webhook-scheduler',
    intervalMs: 1_000,
    log,
    batch: BATCH,
    step: async () => {
      await ensureDeliveryQueue(boss, config);
      return pool.transaction(async (tx) => {
        const due = await claimDueDeliveries(tx, BATCH);
        await enqueueJobs(tx, boss, due);
        return due.length;
      });
    },
  });
  notifier.on(CHANNEL_DUE, () => poller.wake());
  return poller;
}
