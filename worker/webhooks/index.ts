// Webhooks in the worker: the outbox relay and the dispatcher of due deliveries, sharing one HTTP
// client and one outcome recorder. Stops in that order, so the last outcomes are recorded before
// the HTTP agents close.
import type { LoopDeps } from '../jobs/types.ts';
import type { Notifier } from '../notifier.ts';
import type { Poller } from '../poller.ts';
import { startDispatcher } from './dispatcher.ts';
import { createWebhookHttp } from './http.ts';
import { startRecorder } from './recorder.ts';
import { startRelay } from './relay.ts';
import { startStatistics } from './statistics.ts';

export function startWebhooks(deps: LoopDeps, notifier: Notifier): Poller {
  const http = createWebhookHttp({
    timeoutMs: deps.config.WEBHOOK_TIMEOUT_MS,
    allowPrivateNetworks: deps.config.WEBHOOK_ALLOW_PRIVATE_NETWORKS,
    maxSocketsPerHost: deps.config.WEBHOOK_CONCURRENCY,
  });
  const recorder = startRecorder(deps);
  const statistics = startStatistics(deps);
  const dispatcher = startDispatcher(deps, notifier, http, recorder, statistics);
  const relay = startRelay(deps, notifier, dispatcher, statistics);
  return {
    wake() {
      relay.wake();
      dispatcher.wake();
    },
    async stop() {
      await relay.stop();
      await dispatcher.stop();
      http.close();
    },
  };
}
