// The outbox relay: events whose time has come (grouped ones at the end of their window) become
// deliveries and their pg-boss jobs in one transaction, so each event is relayed exactly once
// however many workers run. Woken by NOTIFY at commit; polls as a fallback and for grouping windows.
import { relayOutbox } from '../../shared/db/outbox.ts';
import type { WorkerDeps } from '../jobs/types.ts';
import type { Notifier } from '../notifier.ts';
import { startPoller, type Poller } from '../poller.ts';
import { CHANNEL_OUTBOX, enqueueJobs, ensureDeliveryQueue } from './queue.ts';

const BATCH = 500;

export function startRelay(deps: WorkerDeps, notifier: Notifier): Poller {
  const { pool, boss, config, log } = deps;
  const poller = startPoller({
    name: 'webhook-relay',
    intervalMs: 1_000,
    log,
    batch: BATCH,
    step: async () => {
      await ensureDeliveryQueue(boss, config);
      return pool.transaction(async (tx) => {
        // When another worker holds the relay lock nothing is claimed; it keeps going while it finds events.
        const { relayed, deliveries } = await relayOutbox(tx, BATCH);
        await enqueueJobs(tx, boss, deliveries);
        return relayed;
      });
    },
  });
  notifier.on(CHANNEL_OUTBOX, () => poller.wake());
  return poller;
}
