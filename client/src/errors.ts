// The errors the client throws: an answer of the API that is not a success (ErroDaApi, with the
// fields of its problem body), or no answer at all after every attempt (ErroDeConexao). Their
// documentation comments are read by integrators in their editors: Portuguese, like the API's.
import type { CodigoDeErro, Problema } from './types.ts';

type Detalhes = {
  status: number;
  problema: Partial<Problema> | null;
  resposta: Response;
  chaveDeIdempotencia: string | null;
  tentativas: number;
};

/** Uma resposta da API que não é 2xx, depois das novas tentativas que o cliente faz. */
export class ErroDaApi extends Error {
  override name = 'ErroDaApi';
  /** O status HTTP. */
  readonly status: number;
  /** O `codigo` do erro; `resposta_inesperada` quando o corpo não era um erro da API (a página de um proxy, por exemplo). */
  readonly codigo: CodigoDeErro | 'resposta_inesperada';
  /** Num 422: qual regra de negócio recusou (`saldo_insuficiente`, `referencia_invalida`, `lote_recusado`…). */
  readonly motivo: string | undefined;
  /** O id da requisição no log do serviço (também no cabeçalho `X-Request-Id`): informe-o ao suporte. */
  readonly requisicao_id: string | undefined;
  /** Num 400: cada campo inválido. */
  readonly erros: NonNullable<Problema['erros']>;
  /** Num 422 `lote_recusado`: cada item recusado do lote. */
  readonly recusas: NonNullable<Problema['recusas']>;
  /** Os segundos que o `Retry-After` pediu (429, 503), quando o cliente não esperou tudo isso. */
  readonly retryAfter: number | undefined;
  /** A `Idempotency-Key` com que o POST foi enviado: reenvie com ela para repetir a operação com segurança. */
  readonly chaveDeIdempotencia: string | null;
  /** Quantas vezes a requisição foi enviada. */
  readonly tentativas: number;
  /** O corpo de erro inteiro, como veio. */
  readonly problema: Partial<Problema> | null;
  readonly resposta: Response;

  constructor(detalhes: Detalhes) {
    const { problema, status } = detalhes;
    super(problema?.detail ?? `A API respondeu ${status} sem um corpo de erro.`);
    this.status = status;
    this.codigo = problema?.codigo ?? 'resposta_inesperada';
    this.motivo = problema?.motivo;
    this.requisicao_id = problema?.requisicao_id ?? detalhes.resposta.headers.get('x-request-id') ?? undefined;
    this.erros = problema?.erros ?? [];
    this.recusas = problema?.recusas ?? [];
    const retryAfter = Number(detalhes.resposta.headers.get('retry-after') ?? Number.NaN);
    this.retryAfter = Number.isFinite(retryAfter) ? retryAfter : undefined;
    this.chaveDeIdempotencia = detalhes.chaveDeIdempotencia;
    this.tentativas = detalhes.tentativas;
    this.problema = problema;
    this.resposta = detalhes.resposta;
  }
}

/** Nenhuma resposta da API (conexão recusada ou cortada, tempo esgotado) depois de todas as tentativas. */
export class ErroDeConexao extends Error {
  override name = 'ErroDeConexao';
  /** A `Idempotency-Key` com que o POST foi enviado: a operação pode ter sido feita; repita-a com esta chave. */
  readonly chaveDeIdempotencia: string | null;
  /** Quantas vezes a requisição foi enviada. */
  readonly tentativas: number;

  constructor(causa: unknown, chaveDeIdempotencia: string | null, tentativas: number) {
    super(`Sem resposta da API depois de ${tentativas} tentativa(s): ${causa instanceof Error ? causa.message : String(causa)}`, { cause: causa });
    this.chaveDeIdempotencia = chaveDeIdempotencia;
    this.tentativas = tentativas;
  }
}

// The problem body of an answer, or null when it is not one (the body is consumed either way).
export async function problemaDe(resposta: Response): Promise<Partial<Problema> | null> {
  if (!/json/.test(resposta.headers.get('content-type') ?? '')) {
    await resposta.body?.cancel();
    return null;
  }
  try {
    const corpo = (await resposta.json()) as unknown;
    return corpo && typeof corpo === 'object' && 'codigo' in corpo ? (corpo as Partial<Problema>) : null;
  } catch {
    return null;
  }
}
