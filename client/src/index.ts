// The package's entry point: the client, its errors, webhook verification and the API's types.
export { Printfarm, type OpcoesDoCliente } from './client.ts';
export { ErroDaApi, ErroDeConexao } from './errors.ts';
export { EtagCache, type CacheDeEtag, type RespostaGuardada } from './etag-cache.ts';
export type { OpcoesDeTentativas } from './transport.ts';
export { assinarWebhook, ErroDeAssinatura, gerarSegredo, verificarWebhook, type Entrega, type MotivoDaRecusa, type OpcoesDeVerificacao } from './webhooks.ts';
export type { Caminhos, CaminhosDeLista, CodigoDeErro, Evento, EventoDoTipo, ItemDe, Problema, Resposta, TipoDeEvento } from './types.ts';
export type { components, operations, paths, webhooks } from './openapi.ts';
export { VERSAO } from './versao.ts';
