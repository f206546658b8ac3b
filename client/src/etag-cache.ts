// The client's cache of GET answers by URL, for If-None-Match: the bodies with their ETag, the
// least recently used dropped first beyond a number of entries.

/** Uma resposta guardada: o corpo, o `ETag` e o `Content-Type` com que veio. */
export type RespostaGuardada = { etag: string; body: string; contentType: string };

/** Onde o cliente guarda as respostas com `ETag`; a padrão fica na memória do processo. */
export interface CacheDeEtag {
  get(url: string): RespostaGuardada | undefined;
  set(url: string, resposta: RespostaGuardada): void;
}

/** O cache na memória: passando de `maxEntradas`, sai a resposta usada há mais tempo. */
export class EtagCache implements CacheDeEtag {
  readonly #entries = new Map<string, RespostaGuardada>();
  readonly #max: number;

  constructor(maxEntradas = 1000) {
    this.#max = maxEntradas;
  }

  get(url: string): RespostaGuardada | undefined {
    const entry = this.#entries.get(url);
    if (entry) {
      // Map keeps insertion order: reinserting makes it the most recently used.
      this.#entries.delete(url);
      this.#entries.set(url, entry);
    }
    return entry;
  }

  set(url: string, resposta: RespostaGuardada): void {
    this.#entries.delete(url);
    this.#entries.set(url, resposta);
    while (this.#entries.size > this.#max) {
      const oldest = this.#entries.keys().next().value;
      if (oldest === undefined) break;
      this.#entries.delete(oldest);
    }
  }
}
