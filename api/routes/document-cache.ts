// The catalog documents this web process has sent, as bytes, by product and version
// (docs/decisions/0028-catalog-documents.md). A document changes only with its product's version (the
// catalog's trigger moves both), so a document held at the version a page names is the one the
// database holds: a page reads its products' versions, and only the documents not held at those
// versions travel from PostgreSQL. Least recently used first out, within CATALOGO_CACHE_MB.
import { documentosDosProdutos, paginaDeProdutos, type FiltrosProdutos, type PaginaDeProdutos, type ProdutoNaPagina } from '#shared/db/produtos.ts';
import type { Db } from '#shared/db/pool.ts';

type Entry = { version: number; bytes: Buffer; used: boolean };

export class DocumentCache {
  // Least recently used out first, by second chance (CLOCK): a hit only marks its entry, which costs a
  // page a hundred flags, where moving each entry to the end of the Map showed in the web process's
  // profile. When room is needed, a marked entry at the front is unmarked and moved to the end, and an
  // unmarked one goes.
  readonly #entries = new Map<string, Entry>();
  #bytes = 0;

  readonly maxBytes: number;

  constructor(maxBytes: number) {
    this.maxBytes = maxBytes;
  }

  /** The document of product `id` of account `contaId` at `version`, when held. */
  get(contaId: string, id: string, version: number): Buffer | undefined {
    const key = `${contaId}/${id}`;
    const entry = this.#entries.get(key);
    if (!entry || entry.version !== version) return undefined;
    entry.used = true;
    return entry.bytes;
  }

  /**
   * Holds a document at its version, in place of an older version of the product (a page that read
   * an older one after another page held a newer one sends it, and leaves the newer one held).
   */
  set(contaId: string, id: string, version: number, documento: string): Buffer {
    const key = `${contaId}/${id}`;
    const length = Buffer.byteLength(documento);
    // Sent once and dropped: from Node's shared pool, as any small Buffer.
    if (length > this.maxBytes || (this.#entries.get(key)?.version ?? -1) > version) return Buffer.from(documento);
    // Held: an allocation of its own, as a pooled one would keep its whole 8 KB slab alive.
    const bytes = Buffer.allocUnsafeSlow(length);
    bytes.write(documento);
    this.#drop(key);
    this.#entries.set(key, { version, bytes, used: false });
    this.#bytes += bytes.length;
    // An entry moved to the end is met again by this loop, unmarked; the one just held stays.
    for (const [oldest, entry] of this.#entries) {
      if (this.#bytes <= this.maxBytes) break;
      if (oldest === key) continue;
      if (entry.used) {
        entry.used = false;
        this.#entries.delete(oldest);
        this.#entries.set(oldest, entry);
      } else {
        this.#drop(oldest);
      }
    }
    return bytes;
  }

  /** Bytes held, and how many documents. */
  get usage(): { bytes: number; documents: number } {
    return { bytes: this.#bytes, documents: this.#entries.size };
  }

  #drop(key: string): void {
    const entry = this.#entries.get(key);
    if (!entry) return;
    this.#bytes -= entry.bytes.length;
    this.#entries.delete(key);
  }
}

/** A page as the response sends it: each product's document in order, and the versions they are at. */
export type PaginaDeDocumentos = PaginaDeProdutos & { documentos: Buffer[] };

/**
 * A page of the account's products with their documents: the held ones, and the others read in one
 * more statement (and held). A product changed between the two statements shows at its new version,
 * which the page's ETag then names; one deleted meanwhile is left out.
 */
export async function paginaDeDocumentos(db: Db, cache: DocumentCache, contaId: string, filtros: FiltrosProdutos): Promise<PaginaDeDocumentos> {
  const pagina = await paginaDeProdutos(db, contaId, filtros);
  const held = pagina.produtos.map((p) => cache.get(contaId, p.id, p.row_version));
  const missing = pagina.produtos.filter((_, i) => held[i] === undefined).map((p) => p.id);
  const read = new Map((await documentosDosProdutos(db, contaId, missing)).map((d) => [d.id, d]));
  const documentos: Buffer[] = [];
  const produtos: ProdutoNaPagina[] = [];
  for (const [i, p] of pagina.produtos.entries()) {
    const fresh = held[i] ? undefined : read.get(p.id);
    const bytes = held[i] ?? (fresh && cache.set(contaId, fresh.id, fresh.row_version, fresh.documento));
    if (!bytes) continue;
    documentos.push(bytes);
    produtos.push(fresh ? { id: fresh.id, row_version: fresh.row_version } : p);
  }
  return { documentos, produtos, proxima: pagina.proxima };
}
