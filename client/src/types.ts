// The types the client is used through, derived from the generated ones (openapi.ts): the paths
// with the Idempotency-Key of every POST made optional (the client sends one when it is not
// given), the event payloads per tipo from the OpenAPI webhooks section, and the problem body.
import type { components, paths, webhooks } from './openapi.ts';

/** A POST's header parameters with the Idempotency-Key optional: the client makes one up. */
type ChaveOpcional<Op> = Op extends { parameters: { header: infer H } }
  ? Omit<Op, 'parameters'> & {
    parameters: Omit<Op['parameters'], 'header'> & {
      header?: Omit<H, 'Idempotency-Key'> & { 'Idempotency-Key'?: string };
    };
  }
  : Op;

/** Every path of the API, as the client takes them. */
export type Caminhos = {
  [P in keyof paths]: { [M in keyof paths[P]]: M extends 'post' ? ChaveOpcional<paths[P][M]> : paths[P][M] };
};

/** The paths that answer a method. */
export type CaminhosCom<M extends 'get' | 'post'> = {
  [P in keyof Caminhos]: Caminhos[P] extends { [K in M]: unknown } ? P : never;
}[keyof Caminhos];

/** The body of a 2xx answer of an operation (the first 2xx it declares). */
export type Resposta<Op> = Op extends { responses: infer R }
  ? R extends { 200: { content: { 'application/json': infer B } } } ? B
    : R extends { 201: { content: { 'application/json': infer B } } } ? B
      : R extends { 202: { content: { 'application/json': infer B } } } ? B
        : never
  : never;

/** The GET paths whose answer is a page: { dados: [...], proximo_cursor }. */
export type CaminhosDeLista = {
  [P in CaminhosCom<'get'>]: Resposta<Caminhos[P]['get']> extends { dados: unknown[]; proximo_cursor: string | null } ? P : never;
}[CaminhosCom<'get'>];

/** One item of the list of a path. */
export type ItemDe<P extends CaminhosDeLista> = Resposta<Caminhos[P]['get']> extends { dados: (infer I)[] } ? I : never;

/** The problem body of every error (application/problem+json). */
export type Problema = components['schemas']['Problema'];

/** The codigo of an error of the API. */
export type CodigoDeErro = Problema['codigo'];

/** Every event type. */
export type TipoDeEvento = keyof webhooks;

/** The envelope of an event of one type, with its dados, as a delivery carries it. */
export type EventoDoTipo<T extends TipoDeEvento> = webhooks[T]['post'] extends {
  requestBody: { content: { 'application/json': infer E } };
} ? E : never;

/** Any event, told apart by `tipo`: `if (evento.tipo === 'cotacao.aprovada') evento.dados.codigo`. */
export type Evento = { [T in TipoDeEvento]: EventoDoTipo<T> }[TipoDeEvento];
