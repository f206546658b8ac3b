// The outbox relay: events whose time has come (grouped ones at the end of their window) become
// deliveries, in one statement, so each event is relayed exactly once however many workers run; the
// statement takes for this worker's dispatcher what it has room for, and leaves the rest due for any
// worker. Woken by NOTIFY at commit; polls as a fallback and for grouping windows.
import { relayOutbox, type TracedEvent } from '#shared/db/outbox.ts';
import type { LoopDeps } from '../jobs/types.ts';
import type { Notifier } from '../notifier.ts';
import { startPoller, type Poller } from '../poller.ts';
import type { Dispatcher } from './dispatcher.ts';
import type { Statistics } from './statistics.ts';
import { traceRelayPass } from './telemetry.ts';

const BATCH = 500;
/**
 * Relay passes start at least this far apart. Each pass is one statement and one durable commit,
 * whatever it carries: at a steady rate a pass per event made that fixed cost most of PostgreSQL's
 * work per event, while a few milliseconds more from commit to receipt go unnoticed (BENCHMARKS.md,
 * "Webhooks"; docs/decisions/0032-events-by-trigger-relayed-once.md). An event after a quiet moment
 * goes at once; a backlog's full passes take longer than this anyway.
 */
export const RELAY_SPACING_MS = 10;
/** The channel emit_event notifies at commit (sql/code/eventos.sql). */
export const CHANNEL_OUTBOX = 'outbox';

export function startRelay(deps: LoopDeps, notifier: Notifier, dispatcher: Dispatcher, statistics: Statistics): Poller {
  const { pool, log } = deps;
  const poller = startPoller({
    name: 'webhook-relay',
    intervalMs: 1_000,
    log,
    batch: BATCH,
    spacingMs: RELAY_SPACING_MS,
    // When another worker holds the relay lock nothing is claimed; it keeps going while it finds events.
    step: async () => {
      const startedAt = Date.now();
      let traced: readonly TracedEvent[] = [];
      const relayed = await dispatcher.relay(async (take, outcomes) => {
        const pass = await relayOutbox(pool, BATCH, take, outcomes);
        traced = pass.traced;
        return pass;
      });
      traceRelayPass(traced, startedAt);
      if (relayed >= BATCH) statistics.backlog();
      return relayed;
    },
  });
  notifier.on(CHANNEL_OUTBOX, () => poller.wake());
  return poller;
}
