// A wake-up a loop can wait on with a timeout. A notification that arrives while nobody waits is
// kept for the next wait, so none is lost between a check and the wait that follows it.
export class Signal {
  #pending = false;
  #wake: (() => void) | null = null;

  notify(): void {
    if (this.#wake) this.#wake();
    else this.#pending = true;
  }

  /** Forgets a kept notification (the caller is about to look for work anyway). */
  reset(): void {
    this.#pending = false;
  }

  wait(ms: number): Promise<void> {
    if (this.#pending) {
      this.#pending = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#wake = null;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.#wake = done;
    });
  }
}
