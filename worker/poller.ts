// A loop that runs a batch step again at once while it finds work, otherwise waits for its
// interval or a notification, whichever comes first. Steps of one loop never overlap.
import type { Logger } from '../shared/log.ts';

export type Poller = { wake(): void; stop(): Promise<void> };

export function startPoller(options: {
  name: string;
  intervalMs: number;
  log: Logger;
  /** Processes one batch; returns how many items it handled (more than zero: run again at once). */
  step: () => Promise<number>;
}): Poller {
  let stopped = false;
  let wakeUp: (() => void) | null = null;
  let pendingWake = false;

  const sleep = () =>
    new Promise<void>((resolve) => {
      if (pendingWake) {
        pendingWake = false;
        return resolve();
      }
      const timer = setTimeout(done, options.intervalMs);
      function done() {
        clearTimeout(timer);
        wakeUp = null;
        resolve();
      }
      wakeUp = done;
    });

  const loop = (async () => {
    while (!stopped) {
      let handled = 0;
      try {
        handled = await options.step();
      } catch (error) {
        options.log.error({ err: error, loop: options.name }, 'worker loop step failed');
      }
      if (handled === 0 && !stopped) await sleep();
    }
  })();

  return {
    wake() {
      if (wakeUp) wakeUp();
      else pendingWake = true;
    },
    async stop() {
      stopped = true;
      wakeUp?.();
      await loop;
    },
  };
}
