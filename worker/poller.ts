// A loop that runs a batch step again at once while it finds work, otherwise waits for its
// interval or a notification, whichever comes first. Steps of one loop never overlap, and may be
// spaced (spacingMs). A notification that arrives during a step is kept, so work committed
// meanwhile is never missed.
import type { Logger } from '#shared/log.ts';

export type Poller = { wake(): void; stop(): Promise<void> };

export type PollerOptions = {
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
};

export function startPoller(options: PollerOptions): Poller {
  return new PollingLoop(options);
}

class PollingLoop implements Poller {
  readonly #options: PollerOptions;
  #stopped = false;
  /** Ends the current wait, while the loop waits. */
  #wakeUp: (() => void) | null = null;
  /** A notification that came during a step: the next wait ends at once. */
  #pendingWake = false;
  #lastStart = -Infinity;
  readonly #loop: Promise<void>;

  constructor(options: PollerOptions) {
    this.#options = options;
    this.#loop = this.#run();
  }

  wake(): void {
    if (this.#wakeUp) this.#wakeUp();
    else this.#pendingWake = true;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#wakeUp?.();
    await this.#loop;
  }

  async #run(): Promise<void> {
    while (!this.#stopped) {
      await this.#keepSpacing();
      if (this.#stopped) break;
      const handled = await this.#step();
      const { batch } = this.#options;
      const drained = handled === 0 || (batch !== undefined && handled < batch);
      if (drained && !this.#stopped) await this.#sleep();
    }
  }

  /** One step; a failed one is logged and counts as having handled nothing. */
  async #step(): Promise<number> {
    this.#lastStart = performance.now();
    try {
      return await this.#options.step();
    } catch (error) {
      this.#options.log.error({ err: error, loop: this.#options.name }, 'worker loop step failed');
      return 0;
    }
  }

  /** Waits until spacingMs has passed since the last step started. */
  async #keepSpacing(): Promise<void> {
    const left = () => this.#lastStart + (this.#options.spacingMs ?? 0) - performance.now();
    // A timer may fire up to a millisecond early (it counts from the event loop's cached time).
    for (let early = left(); early > 0 && !this.#stopped; early = left()) {
      await new Promise((resolve) => setTimeout(resolve, Math.ceil(early)));
    }
  }

  /** Waits for the interval or a notification, whichever comes first. */
  #sleep(): Promise<void> {
    return new Promise<void>((resolve) => {
      if (this.#pendingWake) {
        this.#pendingWake = false;
        return resolve();
      }
      const done = () => {
        clearTimeout(timer);
        this.#wakeUp = null;
        resolve();
      };
      const timer = setTimeout(done, this.#options.intervalMs);
      this.#wakeUp = done;
    });
  }
}
