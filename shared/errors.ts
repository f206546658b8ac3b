// Typed errors of the API (contract §7; docs/decisions/0001-problem-details-for-every-error.md) and
// the one mapping from PostgreSQL errors to them. Everything that is not an ApiError becomes a bare
// 500 with nothing internal in it.
import {
  CheckIntegrityConstraintViolationError,
  ConnectionError,
  ForeignKeyIntegrityConstraintViolationError,
  IntegrityConstraintViolationError,
  InvalidInputError,
} from 'slonik';

export type Codigo =
  | 'dados_invalidos'
  | 'nao_autenticado'
  | 'escopo_insuficiente'
  | 'nao_encontrado'
  | 'metodo_nao_permitido'
  | 'tempo_esgotado'
  | 'idempotencia_em_andamento'
  | 'corpo_grande_demais'
  | 'tipo_nao_suportado'
  | 'saldo_insuficiente'
  | 'idempotencia_conflito'
  | 'limite_excedido'
  | 'erro_interno'
  | 'indisponivel';

/** Why a business rule refused (422): motivo, beside the codigo the contract gives. */
export const MOTIVOS = [
  'saldo_insuficiente',
  'referencia_invalida',
  'fora_do_multiplo',
  'abaixo_do_minimo',
  'transicao_invalida',
  'preco_indisponivel',
  'cotacao_nao_aprovada',
  'valor_acima_do_maximo',
  'valor_nao_aceito',
  'sem_destino',
  'sku_ambiguo',
  'lote_recusado',
] as const;
export type Motivo = (typeof MOTIVOS)[number];

export type CampoInvalido = { campo: string; mensagem: string };

/** An item a batch refused (422 with motivo lote_recusado): its index in the request, why, and the text. */
export type ItemRecusado = { indice: number; motivo: Motivo; mensagem: string };

export const TITULOS: Record<Codigo, string> = {
  dados_invalidos: 'Dados inválidos',
  nao_autenticado: 'Não autenticado',
  escopo_insuficiente: 'Escopo insuficiente',
  nao_encontrado: 'Não encontrado',
  metodo_nao_permitido: 'Método não permitido',
  tempo_esgotado: 'Tempo esgotado',
  idempotencia_em_andamento: 'Requisição idempotente em andamento',
  corpo_grande_demais: 'Corpo grande demais',
  tipo_nao_suportado: 'Tipo de conteúdo não suportado',
  saldo_insuficiente: 'Regra de negócio recusou a operação',
  idempotencia_conflito: 'Conflito de idempotência',
  limite_excedido: 'Limite excedido',
  erro_interno: 'Erro interno',
  indisponivel: 'Serviço indisponível',
};

export class ApiError extends Error {
  readonly status: number;
  readonly codigo: Codigo;
  readonly erros?: CampoInvalido[];
  readonly motivo?: Motivo;
  /** Every refused item of a batch (422 lote_recusado). */
  readonly recusas?: ItemRecusado[];
  /** Seconds, for 429 and 503. */
  readonly retryAfter?: number;
  readonly headers: Record<string, string>;

  constructor(
    status: number,
    codigo: Codigo,
    detail: string,
    extra: { erros?: CampoInvalido[]; motivo?: Motivo; recusas?: ItemRecusado[]; retryAfter?: number; headers?: Record<string, string> } = {},
  ) {
    super(detail);
    this.name = 'ApiError';
    this.status = status;
    this.codigo = codigo;
    this.erros = extra.erros;
    this.motivo = extra.motivo;
    this.recusas = extra.recusas;
    this.retryAfter = extra.retryAfter;
    this.headers = extra.headers ?? {};
  }
}

export const dadosInvalidos = (detail: string, erros: CampoInvalido[] = []) =>
  new ApiError(400, 'dados_invalidos', detail, { erros });
// One text for every 401 (contract §5.2): nothing tells a revoked key from an unknown one.
export const naoAutenticado = () =>
  new ApiError(401, 'nao_autenticado', 'Envie uma chave de API válida no cabeçalho Authorization: Bearer <chave>.', {
    headers: { 'WWW-Authenticate': 'Bearer realm="api"' },
  });
export const escopoInsuficiente = (detail: string) => new ApiError(403, 'escopo_insuficiente', detail);
export const naoEncontrado = (detail = 'O registro não existe nesta conta.') =>
  new ApiError(404, 'nao_encontrado', detail);
export const metodoNaoPermitido = (allowed: string[]) =>
  new ApiError(405, 'metodo_nao_permitido', `Este caminho aceita: ${allowed.join(', ')}.`, {
    headers: { Allow: allowed.join(', ') },
  });
export const regraRecusou = (motivo: Motivo, detail: string) =>
  new ApiError(422, 'saldo_insuficiente', detail, { motivo });
export const indisponivel = (detail: string, retryAfter: number) =>
  new ApiError(503, 'indisponivel', detail, { retryAfter });

/** The SQLSTATE of a database error, wherever in the chain of causes the driver put it. */
export function sqlstateOf(error: unknown): string | null {
  for (let e: unknown = error; e instanceof Error; e = e.cause) {
    // slonik turns 22P02 into InvalidInputError and keeps only the message.
    if (e instanceof InvalidInputError) return '22P02';
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return code;
  }
  return null;
}

/**
 * Maps what PostgreSQL refused to the API's typed errors; returns null for anything else. Known
 * constraints get their own refusal; any other data exception (class 22) is a 400 and any other
 * integrity violation (class 23) a 422: data a request brought is never answered with a 500, even
 * when validation let it through.
 */
export function fromDatabaseError(error: unknown): ApiError | null {
  if (error instanceof ApiError) return error;
  if (error instanceof ConnectionError) return indisponivel('O banco de dados está inacessível.', 5);
  if (error instanceof IntegrityConstraintViolationError) {
    const constraint = error.constraint ?? '';
    if (error instanceof CheckIntegrityConstraintViolationError) {
      if (constraint === 'transicao_invalida') return regraRecusou('transicao_invalida', transitionText(error));
      if (/saldo_check$/.test(constraint)) return regraRecusou('saldo_insuficiente', 'O saldo não pode ficar negativo.');
      if (/valor_total_centavos_check$/.test(constraint)) return totalAcimaDoMaximo();
    }
    if (error instanceof ForeignKeyIntegrityConstraintViolationError) {
      return regraRecusou('referencia_invalida', 'Um registro referenciado não existe nesta conta.');
    }
  }
  const sqlstate = sqlstateOf(error);
  if (sqlstate?.startsWith('22')) {
    return dadosInvalidos('Um valor da requisição está fora do que o serviço aceita.');
  }
  if (sqlstate?.startsWith('23')) return regraRecusou('valor_nao_aceito', 'Os dados não atendem a uma regra dos registros desta conta.');
  return null;
}

export const VALOR_MAXIMO_CENTAVOS = 100_000_000_000;
export const totalAcimaDoMaximo = () =>
  regraRecusou('valor_acima_do_maximo', `O valor total passa do máximo de ${VALOR_MAXIMO_CENTAVOS} centavos.`);

function transitionText(error: IntegrityConstraintViolationError): string {
  const cause = error.cause as { message?: string } | undefined;
  const match = /cannot go from (\w+) to (\w+)/.exec(cause?.message ?? error.message);
  return match ? `A transição de ${match[1]} para ${match[2]} não é permitida.` : 'Transição não permitida.';
}

/**
 * What the log keeps of an unexpected error (its detail is in the log under the requisicao_id,
 * never in the answer): its class, SQLSTATE, constraint, table, column and the database functions it
 * went through, and the stack. Never a statement, its parameter values or a request body: a
 * database message has every quoted value blanked, and the driver's own fields are not copied.
 */
export function describeError(error: unknown): Record<string, unknown> {
  const sqlstate = sqlstateOf(error);
  const chain: Error[] = [];
  for (let e: unknown = error; e instanceof Error && chain.length < 5; e = e.cause) chain.push(e);
  const field = (name: string) => chain.map((e) => (e as unknown as Record<string, unknown>)[name]).find((v) => typeof v === 'string') as string | undefined;
  const where = field('where') ?? '';
  const functions = [...new Set([...where.matchAll(/PL\/pgSQL function ([\w.]+)\(/g)].map((m) => m[1]))];
  const message = error instanceof Error ? error.message : String(error);
  return {
    type: error instanceof Error ? error.constructor.name : typeof error,
    message: (sqlstate ? message.replace(/"[^"]*"/g, '"…"') : message).slice(0, 300),
    ...(sqlstate ? { sqlstate } : {}),
    ...(sqlstate ? { cause: chain.map((e) => e.message.replace(/"[^"]*"/g, '"…"').slice(0, 200)).slice(1) } : {}),
    ...Object.fromEntries(['constraint', 'table', 'column', 'routine'].flatMap((k) => (field(k) ? [[k, field(k)]] : []))),
    ...(functions.length ? { functions } : {}),
    stack: error instanceof Error ? (error.stack ?? '').split('\n').slice(1, 8).map((l) => l.trim()) : [],
  };
}
