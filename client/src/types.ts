// The types the client is used through, derived from the generated ones (openapi.ts): the paths
// with the Idempotency-Key of every POST made optional (the client sends one when it is not
// given), the event payloads per tipo from the OpenAPI webhooks section, and the problem body.
import type { components, paths, webhooks } from './openapi.ts';

/** Os cabeçalhos de um POST com a `Idempotency-Key` opcional: sem ela, o cliente cria uma. */
type ChaveOpcional<Op> = Op extends { parameters: { header: infer H } }
  ? Omit<Op, 'parameters'> & {
    parameters: Omit<Op['parameters'], 'header'> & {
      header?: Omit<H, 'Idempotency-Key'> & { 'Idempotency-Key'?: string };
    };
  }
  : Op;

/** Todos os caminhos da API, como o cliente os recebe. */
export type Caminhos = {
  [P in keyof paths]: { [M in keyof paths[P]]: M extends 'post' ? ChaveOpcional<paths[P][M]> : paths[P][M] };
};

/** Os caminhos que atendem um método. */
export type CaminhosCom<M extends 'get' | 'post'> = {
  [P in keyof Caminhos]: Caminhos[P] extends { [K in M]: unknown } ? P : never;
}[keyof Caminhos];

/** O corpo da resposta de sucesso (2xx) de uma operação. */
export type Resposta<Op> = Op extends { responses: infer R }
  ? R extends { 200: { content: { 'application/json': infer B } } } ? B
    : R extends { 201: { content: { 'application/json': infer B } } } ? B
      : R extends { 202: { content: { 'application/json': infer B } } } ? B
        : never
  : never;

/** Os caminhos de GET que respondem uma página: `{ dados, proximo_cursor }`. */
export type CaminhosDeLista = {
  [P in CaminhosCom<'get'>]: Resposta<Caminhos[P]['get']> extends { dados: unknown[]; proximo_cursor: string | null } ? P : never;
}[CaminhosCom<'get'>];

/** Um item da lista de um caminho. */
export type ItemDe<P extends CaminhosDeLista> = Resposta<Caminhos[P]['get']> extends { dados: (infer I)[] } ? I : never;

/** O corpo de todo erro da API (`application/problem+json`). */
export type Problema = components['schemas']['Problema'];

/** O `codigo` de um erro da API. */
export type CodigoDeErro = Problema['codigo'];

/** Os tipos de evento. */
export type TipoDeEvento = keyof webhooks;

/** O envelope de um evento de um tipo, com o `dados` dele, como a entrega o leva. */
export type EventoDoTipo<T extends TipoDeEvento> = webhooks[T]['post'] extends {
  requestBody: { content: { 'application/json': infer E } };
} ? E : never;

/** Qualquer evento, distinguido por `tipo`: `if (evento.tipo === 'cotacao.aprovada') evento.dados.codigo`. */
export type Evento = { [T in TipoDeEvento]: EventoDoTipo<T> }[TipoDeEvento];
