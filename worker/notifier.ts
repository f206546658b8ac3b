// One dedicated connection LISTENing for the channels the worker's loops wake on. A lost
// connection is re-established; the loops keep polling meanwhile, so nothing waits on it.
import pg from 'pg';
import type { Logger } from '#shared/log.ts';

export class Notifier {
  #client: pg.Client | null = null;
  #handlers = new Map<string, Set<(payload: string) => void>>();
  #stopped = false;
  #retry: NodeJS.Timeout | null = null;
  readonly #url: string;
  readonly #log: Logger;

  constructor(url: string, log: Logger) {
    this.#url = url;
    this.#log = log;
  }

  on(channel: string, handler: (payload: string) => void): void {
    const set = this.#handlers.get(channel) ?? new Set();
    set.add(handler);
    this.#handlers.set(channel, set);
    if (set.size === 1) void this.#client?.query(`LISTEN ${pg.escapeIdentifier(channel)}`).catch(() => undefined);
  }

  async start(): Promise<void> {
    if (this.#stopped) return;
    const client = new pg.Client({ connectionString: this.#url, application_name: 'worker-listen' });
    client.on('notification', (message) => {
      for (const handler of this.#handlers.get(message.channel) ?? []) handler(message.payload ?? '');
    });
    client.on('error', (error) => {
      this.#log.warn({ err: error }, 'LISTEN connection lost; reconnecting');
      this.#reconnect();
    });
    try {
      await client.connect();
      for (const channel of this.#handlers.keys()) await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
      this.#client = client;
    } catch (error) {
      this.#log.warn({ err: error }, 'LISTEN connection failed; polling only until it comes back');
      await client.end().catch(() => undefined);
      this.#reconnect();
    }
  }

  #reconnect(): void {
    const old = this.#client;
    this.#client = null;
    void old?.end().catch(() => undefined);
    if (this.#stopped || this.#retry) return;
    this.#retry = setTimeout(() => {
      this.#retry = null;
      void this.start();
    }, 1_000);
    this.#retry.unref();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#retry) clearTimeout(this.#retry);
    await this.#client?.end().catch(() => undefined);
    this.#client = null;
  }
}
