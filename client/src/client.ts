// The official client: openapi-fetch over the generated types, through the transport that retries,
// keys POSTs and caches ETags (transport.ts). GET and POST answer the 2xx body or throw ErroDaApi;
// `bruto` is the openapi-fetch client itself, for whoever wants { data, error, response }.
import createClient, { type Client, type MaybeOptionalInit } from 'openapi-fetch';
import { ErroDaApi } from './errors.ts';
import { EtagCache, type CacheDeEtag } from './etag-cache.ts';
import { createTransport, envioDe, esperarMs, type OpcoesDeTentativas } from './transport.ts';
import type { Caminhos, CaminhosCom, CaminhosDeLista, ItemDe, Problema, Resposta } from './types.ts';
import { VERSAO } from './versao.ts';

/** Como criar um cliente. */
export type OpcoesDoCliente = {
  /** O endereço base da API, terminado em `/v1` (por exemplo `https://api.exemplo.com.br/v1`). */
  urlBase: string;
  /** A chave de API (`chv_…`). */
  chave: string;
  /** As novas tentativas (padrão: até 3, a partir de 500 ms, esperando no máximo 30 s); `false` desliga. */
  tentativas?: OpcoesDeTentativas | false;
  /** `true`: guarda na memória (até 1000 respostas) os GETs com `ETag`, e os pede de novo com `If-None-Match`; ou um cache seu. */
  cacheDeEtag?: boolean | CacheDeEtag;
  /** O tempo limite de cada tentativa, em ms (padrão 30000). */
  tempoLimiteMs?: number;
  /** Cabeçalhos enviados em toda requisição. */
  cabecalhos?: Record<string, string>;
  /** O `fetch` a usar (padrão: o global). */
  fetch?: (requisicao: Request) => Promise<Response>;
};

type Metodo = 'get' | 'post';
type Op<P extends keyof Caminhos, M extends Metodo> = Caminhos[P] extends { [K in M]: infer O } ? O : never;
type Init<P extends keyof Caminhos, M extends Metodo> = M extends keyof Caminhos[P] ? MaybeOptionalInit<Caminhos[P], M> : never;
// The init argument of a call: optional when the operation needs nothing.
type Argumentos<P extends keyof Caminhos, M extends Metodo> = undefined extends Init<P, M> ? [init?: Init<P, M>] : [init: Init<P, M>];

const PADRAO: Required<OpcoesDeTentativas> = { maximo: 3, esperaInicialMs: 500, esperaMaximaMs: 30_000 };

/** O cliente oficial da API. */
export class Printfarm {
  /**
   * O cliente openapi-fetch por baixo, com as mesmas novas tentativas, `Idempotency-Key` e cache:
   * devolve `{ data, error, response }` sem lançar erros (para ler cabeçalhos, por exemplo).
   */
  readonly bruto: Client<Caminhos>;

  constructor(opcoes: OpcoesDoCliente) {
    const tentativas = opcoes.tentativas === false ? { ...PADRAO, maximo: 0 } : { ...PADRAO, ...opcoes.tentativas };
    const cache = opcoes.cacheDeEtag === true ? new EtagCache() : opcoes.cacheDeEtag || null;
    const transport = createTransport({
      tentativas, cache, tempoLimiteMs: opcoes.tempoLimiteMs ?? 30_000,
      fetch: opcoes.fetch ?? ((requisicao) => globalThis.fetch(requisicao)), esperar: esperarMs,
    });
    this.bruto = createClient<Caminhos>({
      baseUrl: opcoes.urlBase,
      fetch: transport,
      headers: { 'User-Agent': `printfarm-api-ts/${VERSAO}`, ...opcoes.cabecalhos, Authorization: `Bearer ${opcoes.chave}` },
    });
  }

  /** Um GET: devolve o corpo da resposta 200, ou lança `ErroDaApi`. */
  async GET<P extends CaminhosCom<'get'>>(caminho: P, ...init: Argumentos<P, 'get'>): Promise<Resposta<Op<P, 'get'>>> {
    // openapi-fetch's overloads do not follow a generic path through a spread: the types are the caller's.
    const { data, error, response } = await (this.bruto.GET as AnyCall)(caminho, ...init);
    if (!response.ok) throw erroDaApi(response, error);
    return data as Resposta<Op<P, 'get'>>;
  }

  /**
   * Um POST: devolve o corpo da resposta 2xx, ou lança `ErroDaApi`. Sem `Idempotency-Key` em
   * `params.header`, o cliente cria uma, a mesma em todas as novas tentativas.
   */
  async POST<P extends CaminhosCom<'post'>>(caminho: P, ...init: Argumentos<P, 'post'>): Promise<Resposta<Op<P, 'post'>>> {
    const { data, error, response } = await (this.bruto.POST as AnyCall)(caminho, ...init);
    if (!response.ok) throw erroDaApi(response, error);
    return data as Resposta<Op<P, 'post'>>;
  }

  /**
   * Todos os itens de uma lista, página a página (seguindo `proximo_cursor`), com os filtros de
   * `params.query`: `for await (const pedido of cliente.listar('/pedidos-producao')) …`.
   */
  async *listar<P extends CaminhosDeLista>(caminho: P, ...init: Argumentos<P, 'get'>): AsyncGenerator<ItemDe<P>, void, undefined> {
    const base = (init[0] ?? {}) as { params?: { query?: Record<string, unknown> } };
    let cursor: string | null = null;
    do {
      const params = { ...base.params, query: { ...base.params?.query, ...(cursor === null ? {} : { cursor }) } };
      const pagina = (await (this.GET as AnyCall)(caminho, { ...base, params })) as { dados: ItemDe<P>[]; proximo_cursor: string | null };
      yield* pagina.dados;
      cursor = pagina.proximo_cursor;
    } while (cursor !== null);
  }
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyCall = (caminho: string, ...init: any[]) => Promise<any>;

function erroDaApi(resposta: Response, error: unknown): ErroDaApi {
  const envio = envioDe(resposta);
  const problema = error && typeof error === 'object' && 'codigo' in error ? (error as Partial<Problema>) : null;
  return new ErroDaApi({
    status: resposta.status, problema, resposta,
    chaveDeIdempotencia: envio?.chaveDeIdempotencia ?? null, tentativas: envio?.tentativas ?? 1,
  });
}
