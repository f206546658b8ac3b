// The shape of one entry of the route table. Each entry is the single source of truth for its
// endpoint: restify registration, validation, authorization, cost and the OpenAPI document all
// read it.
import type { z } from 'zod';
import type { Escopo, Permissao } from '#shared/domain/acesso.ts';
import type { Config } from '#shared/config.ts';
import type { Db, Pool } from '#shared/db/pool.ts';
import type { Logger } from '#shared/log.ts';
import type { CircuitBreaker } from '../admission/breaker.ts';
import type { AdmissionQueue } from '../admission/admission-queue.ts';
import type { Registro } from '../admission/admission-row.ts';
import type { DocumentCache } from './document-cache.ts';
import type { BatchedWrite, WriteQueue } from '../writes/write-queue.ts';
import type { Claim, KeyedRequest } from '../writes/idempotency.ts';
import type { Billing } from '../admission/limits.ts';
import type { LimitsBookkeeper } from '../admission/limits-bookkeeper.ts';
import type { Caller } from '../admission/caller.ts';
import type { Cost } from '../admission/cost.ts';

/** Background work the web process asks of the worker (through pg-boss). */
export type JobScheduler = { liftSuspension(contaId: string, chaveId: string, at: Date): Promise<void> };

export type Deps = {
  pool: Pool;
  config: Config;
  log: Logger;
  breaker: CircuitBreaker;
  limits: LimitsBookkeeper;
  admissions: AdmissionQueue;
  writes: WriteQueue;
  jobs: JobScheduler;
  /** The catalog documents this process has sent, by product and version. */
  documentos: DocumentCache;
};

/** A serialized body: one piece, or pieces written in order (api/http/respond.ts). */
export type JsonBody = string | Buffer | readonly (string | Buffer)[];

export type Reply = {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
  /** When the request costs less than admission charged (a 304, a repetition, a short page). */
  billing?: Billing;
  /** The id of what a POST created, kept with its Idempotency-Key for repetitions. */
  resourceId?: string;
  /**
   * The body already serialized: text, its UTF-8 bytes, or pieces of it sent one after another (a
   * catalog page: its products' documents as PostgreSQL kept them, never joined into one value).
   */
  json?: JsonBody;
  /**
   * A page's ETag when the route knows its content by its rows' versions (etagForVersions), so the
   * page's bytes need not be hashed; otherwise the tag is the bytes' (etagForPage).
   */
  etag?: string;
};

export type RouteContext<P, Q, H, B> = {
  requestId: string;
  params: P;
  query: Q;
  headers: H;
  body: B;
  caller: Caller;
  deps: Deps;
  /**
   * Admission found the request a repetition (repetition.ts): for a GET of one record, the record
   * exists in the caller's account at a version its If-None-Match names.
   */
  repeticao: boolean;
  /**
   * For a GET of a record whose representation PostgreSQL builds: the record, read by admission with
   * the request (null: the caller's account has none). Undefined when admission did not read it.
   */
  registro?: Registro;
  /**
   * Where the handler's queries go: for a POST, the transaction the pipeline opened (the change,
   * its events and its idempotency record commit together, with app.via = 'api' and app.chave_id
   * set for the triggers); for a GET, the pool.
   */
  db: Db;
};

export type ResponseSpec = {
  description: string;
  schema?: z.ZodType;
  /** OpenAPI header objects of this response beyond the common ones. */
  headers?: Record<string, unknown>;
  /** A realistic body for the reference page (a test checks it against the schema). */
  example?: unknown;
};

type Schema = z.ZodType;
type Out<S> = S extends z.ZodType ? z.output<S> : undefined;

export type RouteDef<P extends Schema | undefined, Q extends Schema | undefined, H extends Schema | undefined, B extends Schema | undefined> = {
  operationId: string;
  method: 'GET' | 'POST';
  /** Relative to {base_url}, OpenAPI style: /pedidos-producao/{id}. */
  path: string;
  tag: string;
  summary: string;
  description?: string;
  scope: Escopo | null;
  permission: Permissao | null;
  /**
   * Cost of contract §8.2, decided before validation (a refused request is charged too) from the raw
   * query string.
   */
  cost: (rawQuery: URLSearchParams) => Cost;
  /**
   * For a POST priced by what its body carries (POST /estoque/movimentos/lote: 2 units a movement):
   * its price from the body as it arrived, before validation. Such a body is read before admission;
   * what went wrong reading it (408, 413, 415, malformed JSON) is still answered after admission,
   * and such a request is priced by `cost`.
   */
  costOfBody?: (body: unknown) => Cost;
  params?: P;
  query?: Q;
  headers?: H;
  body?: B;
  /** A realistic request body for the reference page (a test checks it against the schema). */
  bodyExample?: unknown;
  idempotency?: 'required' | 'optional';
  /**
   * A GET answered with an ETag, and a 304 to an If-None-Match that names it. Of one record: its
   * ETag comes from its row_version, in the table named, so admission can tell a 304 before it
   * charges (sql/code/admission_rules.sql, versao_do_recurso). Of a list (lists.ts,
   * conditionalList): its ETag is its page's, known once the page is read, so the request is charged
   * as a repetition and topped up when the page changed (conditional-list.ts).
   */
  conditional?:
    | {
      tabela: 'produtos' | 'cotacoes' | 'pedidos_producao' | 'outbox' | 'estoque_movimentos';
      /** The variants its ETags are made with (etagFor's third argument): [''] when there is one representation. */
      variantes?: readonly string[];
      /**
       * PostgreSQL builds the record's representation (sql/code/representacoes.sql): admission reads
       * it with the request, which then needs no round trip of its own (RouteContext.registro).
       */
      representado?: true;
    }
    | { lista: true };
  /** For idempotent routes: the body of a repetition, the created resource read again by its id. */
  replay?: (ctx: RouteContext<Out<P>, Out<Q>, Out<H>, Out<B>>, resourceId: string) => Promise<unknown>;
  /** Refusals beyond those derived from the declaration (e.g. 422 for a business rule, 304). */
  refusals?: number[];
  /** Successful responses; error responses are derived from what the route can refuse. */
  responses: Record<number, ResponseSpec>;
  handler?: (ctx: RouteContext<Out<P>, Out<Q>, Out<H>, Out<B>>) => Promise<Reply>;
  /**
   * Instead of handler, for a POST whose whole change is one SQL function that also claims and
   * records the Idempotency-Key (api_write_claim … api_idempotency_record in the same statement):
   * no transaction is opened around it, and the requests waiting for it go in one round trip
   * (api/writes/write-queue.ts).
   */
  once?: {
    write: BatchedWrite;
    /** This request's arguments for it. */
    args: (ctx: RouteContext<Out<P>, Out<Q>, Out<H>, Out<B>>, keyed: KeyedRequest | null) => unknown;
    /** The key's claim and the reply (or the business refusal), from what the write answered. */
    result: (written: unknown) => OnceResult;
  };
};

/** A one-statement write: the key's claim, and the reply (or the business refusal) of the change. */
export type OnceResult = { claim: Claim & { resource_id?: string | null }; reply: () => Reply };

// The table holds routes of different schema types; the pipeline treats them uniformly.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyRoute = RouteDef<any, any, any, any>;

export function defineRoute<
  P extends Schema | undefined = undefined,
  Q extends Schema | undefined = undefined,
  H extends Schema | undefined = undefined,
  B extends Schema | undefined = undefined,
>(route: RouteDef<P, Q, H, B>): AnyRoute {
  return route as AnyRoute;
}
