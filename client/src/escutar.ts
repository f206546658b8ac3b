// `printfarm escutar`: follows the account's event log (GET /eventos) and forwards each new event to
// a local URL as a webhook delivery would be sent (the same body, Standard Webhooks headers, signed
// with a local secret), so a receiver can be developed without a public address.
//
// Following a log listed newest first: the query is fixed (criado_desde = the window's start,
// limite 25) and every page of its last read is asked again with If-None-Match; while nothing
// changed each poll is a 304, which costs 1 in the burst and nothing in the month. When a page
// changed, the rest is read again and the events not yet forwarded go out oldest first. An event
// enters the log when it is relayed, up to a few minutes after its criado_em (a grouping window, a
// long transaction): so the window's start only moves forward to OVERLAP before the moment of a
// complete read (by the server's clock), and the ids forwarded since are kept to skip them.
import { assinarWebhook } from './webhooks.ts';
import type { Printfarm } from './client.ts';
import { ErroDaApi } from './errors.ts';
import { gravarEstado, type Estado, type Pagina } from './escutar-estado.ts';
import { esperarMs } from './transport.ts';
import type { ItemDe } from './types.ts';

// How far before a complete read the window may start: longer than any event takes to enter the log.
export const OVERLAP_MS = 5 * 60_000;
const LIMITE = 25;
// As long as a delivery's receiver gets from the service.
const TEMPO_DO_RECEPTOR_MS = 10_000;

type EventoDoRegistro = ItemDe<'/eventos'>;

export type OpcoesDoEscutar = {
  cliente: Printfarm;
  encaminhar: string;
  arquivo: string;
  estado: Estado;
  intervaloMs: number;
  // Where each line goes (stdout).
  escrever: (linha: string) => void;
  signal: AbortSignal;
};

// Polls until the signal aborts; the state is saved after every event and every read.
export async function escutar(opcoes: OpcoesDoEscutar): Promise<void> {
  const { estado } = opcoes;
  while (!opcoes.signal.aborted) {
    let espera = opcoes.intervaloMs;
    try {
      const leitura = await lerNovos(opcoes.cliente, estado);
      for (const evento of leitura.novos) {
        opcoes.escrever(await encaminhar(evento, opcoes.encaminhar, estado.segredo));
        estado.vistos[evento.id] = evento.criado_em;
        await gravarEstado(opcoes.arquivo, estado);
      }
      // A window of several pages costs a request per page at every poll: after forwarding, it
      // starts again OVERLAP before this read, which dropped what is older than that.
      if (leitura.novos.length > 0 && estado.paginas.length > 1) recomecarJanela(estado, leitura.instante);
      await gravarEstado(opcoes.arquivo, estado);
    } catch (error) {
      if (error instanceof ErroDaApi && (error.status === 401 || error.status === 403)) throw error;
      const retryAfter = error instanceof ErroDaApi && error.retryAfter !== undefined ? error.retryAfter * 1000 : 0;
      espera = Math.max(espera, retryAfter);
      opcoes.escrever(`${hora()}  a leitura do registro de eventos falhou (${error instanceof Error ? error.message : String(error)}); nova leitura em ${Math.round(espera / 1000)} s`);
    }
    await esperarMs(espera, opcoes.signal);
  }
}

type Leitura = { novos: EventoDoRegistro[]; instante: Date };

// Reads the window's pages, each with the ETag it had: the first that changed and every page after
// it are read whole. Answers the events not yet forwarded, oldest first, and when the read began.
async function lerNovos(cliente: Printfarm, estado: Estado): Promise<Leitura> {
  const lidos: EventoDoRegistro[] = [];
  const paginas: Pagina[] = [];
  let instante: Date | null = null;
  let cursor: string | null = null;
  let mudou = false;
  do {
    const guardada: Pagina | undefined = mudou ? undefined : estado.paginas[paginas.length];
    const query: { criado_desde: string; limite: number; cursor?: string } = { criado_desde: estado.janela, limite: LIMITE, ...(cursor === null ? {} : { cursor }) };
    const { data, error, response } = await cliente.bruto.GET('/eventos', {
      params: { query, ...(guardada ? { header: { 'If-None-Match': guardada.etag } } : {}) },
    });
    instante ??= new Date(response.headers.get('date') ?? Date.now());
    if (response.status === 304 && guardada) {
      paginas.push(guardada);
      cursor = guardada.proximo;
      continue;
    }
    if (!data) throw new ErroDaApi({ status: response.status, problema: error && typeof error === 'object' ? error : null, resposta: response, chaveDeIdempotencia: null, tentativas: 1 });
    mudou = true;
    lidos.push(...data.dados);
    paginas.push({ cursor, etag: response.headers.get('etag') ?? '', proximo: data.proximo_cursor });
    cursor = data.proximo_cursor;
  } while (cursor !== null);
  estado.paginas = paginas;
  const piso = Date.parse(estado.piso);
  const novos = lidos.filter((e) => !(e.id in estado.vistos) && Date.parse(e.criado_em) >= piso);
  // The log lists newest first; a receiver gets them in the order they happened.
  novos.sort((a, b) => Date.parse(a.criado_em) - Date.parse(b.criado_em) || (a.id < b.id ? -1 : 1));
  return { novos, instante: instante ?? new Date() };
}

// Starts the window OVERLAP before a complete read, and forgets the ids older than it.
function recomecarJanela(estado: Estado, instante: Date): void {
  const inicio = new Date(Math.max(Date.parse(estado.piso), instante.getTime() - OVERLAP_MS));
  if (inicio.getTime() <= Date.parse(estado.janela)) return;
  estado.janela = inicio.toISOString();
  estado.vistos = Object.fromEntries(Object.entries(estado.vistos).filter(([, criado]) => Date.parse(criado) >= inicio.getTime()));
  estado.paginas = [];
}

// POSTs the event as a delivery does (the same bytes, signed now), and describes the outcome in one line.
async function encaminhar(evento: EventoDoRegistro, url: string, segredo: string): Promise<string> {
  const corpo = JSON.stringify(evento);
  const agora = new Date();
  const inicio = performance.now();
  const linha = (resultado: string) => `${hora(agora)}  ${evento.tipo}  ${evento.id}  → ${resultado} em ${Math.round(performance.now() - inicio)} ms`;
  try {
    const resposta = await fetch(url, {
      method: 'POST',
      redirect: 'manual',
      signal: AbortSignal.timeout(TEMPO_DO_RECEPTOR_MS),
      headers: {
        'content-type': 'application/json',
        'user-agent': 'printfarm-webhooks/1',
        'webhook-id': evento.id,
        'webhook-timestamp': String(Math.floor(agora.getTime() / 1000)),
        'webhook-signature': assinarWebhook(segredo, evento.id, agora, corpo),
      },
      body: corpo,
    });
    await resposta.body?.cancel();
    return linha(String(resposta.status));
  } catch (error) {
    const causa = error instanceof Error && error.cause instanceof Error ? error.cause.message : error instanceof Error ? error.message : String(error);
    return linha(`sem resposta (${causa})`);
  }
}

const hora = (instante = new Date()) => instante.toTimeString().slice(0, 8);
