// The official client (client/) as the suites use it: every answer it receives checked against the
// OpenAPI document (conformance.ts), as every suite's answers are.
import { Printfarm, type OpcoesDoCliente } from '../../client/src/index.ts';
import { checkConformance } from './conformance.ts';

/** A fetch that checks each answer before the client reads it. */
export async function conformantFetch(request: Request): Promise<Response> {
  const response = await fetch(request);
  checkConformance(request.method, request.url, response.status, response.headers, await response.clone().text());
  return response;
}

export function clienteDeTeste(urlBase: string, chave: string, opcoes: Partial<OpcoesDoCliente> = {}): Printfarm {
  return new Printfarm({ urlBase, chave, fetch: conformantFetch, ...opcoes });
}
