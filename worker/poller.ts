// A loop that runs a batch step again at once while it finds work, otherwise waits for its
// interval or a notification, whichever comes first. Steps of one loop never overlap, and may be
// spaced (spacingMs). A notification that arrives during a step is kept, so work committed
// meanwhile is never missed.
import type { Logger } from '../shared/log.ts';

export type Poller = { wake(): void; stop(): Promise<void> };

export function startPoller(options: {
  name: string;
  intervalMs: number;
  log: Logger;
  /** Processes one batch; returns how many items it handled. */
  step: () => Promise<number>;
  /**
   * The step's batch size: a step that handled fewer drained what there was, and the loop waits
   * (at a steady rate a relay that went again at once made an empty pass after every event).
   * Without it, any item handled runs the step again at once.
   */
  batch?: number;
  /**
   * Steps start at least this far apart: a notification that comes sooner after the last step's
   * start waits for the rest, and its step takes whatever else came meanwhile.
   */
  spacingMs?: number;
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

  let lastStart = -Infinity;
  const spacingLeft = () => lastStart + (options.spacingMs ?? 0) - performance.now();
  const loop = (async () => {
    while (!stopped) {
      let handled = 0;
      // A timer may fire up to a millisecond early (it counts from the event loop's cached time).
      for (let early = spacingLeft(); early > 0 && !stopped; early = spacingLeft()) {
        await new Promise((resolve) => setTimeout(resolve, Math.ceil(early)));
      }
      if (stopped) break;
      lastStart = performance.now();
      try {
        handled = await options.step();
      } catch (error) {
        options.log.error({ err: error, loop: options.name }, 'worker loop step failed');
      }
      const drained = handled === 0 || (options.batch !== undefined && handled < options.batch);
      if (drained && !stopped) await sleep();
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
