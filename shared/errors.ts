// Typed errors of the API (contract §7, DESIGN §12) and the one mapping from PostgreSQL errors to
// them. Everything that is not an ApiError becomes a bare 500 with nothing internal in it.
import {
  CheckIntegrityConstraintViolationError,
  ConnectionError,
  ForeignKeyIntegrityConstraintViolationError,
  IntegrityConstraintViolationError,
  UniqueIntegrityConstraintViolationError,
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

/** Why a business rule refused (422): DESIGN §12 keeps codigo as the contract says and adds motivo. */
export type Motivo =
  | 'saldo_insuficiente'
  | 'referencia_invalida'
  | 'fora_do_multiplo'
  | 'abaixo_do_minimo'
  | 'transicao_invalida'
  | 'preco_indisponivel'
  | 'cotacao_nao_aprovada';

export type CampoInvalido = { campo: string; mensagem: string };

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
  /** Seconds, for 429 and 503. */
  readonly retryAfter?: number;
  readonly headers: Record<string, string>;

  constructor(
    status: number,
    codigo: Codigo,
    detail: string,
    extra: { erros?: CampoInvalido[]; motivo?: Motivo; retryAfter?: number; headers?: Record<string, string> } = {},
  ) {
    super(detail);
    this.name = 'ApiError';
    this.status = status;
    this.codigo = codigo;
    this.erros = extra.erros;
    this.motivo = extra.motivo;
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

/** Maps what PostgreSQL refused to the API's typed errors; returns null for anything else. */
export function fromDatabaseError(error: unknown): ApiError | null {
  if (error instanceof ApiError) return error;
  if (error instanceof ConnectionError) return indisponivel('O banco de dados está inacessível.', 5);
  if (!(error instanceof IntegrityConstraintViolationError)) return null;
  const constraint = error.constraint ?? '';
  if (error instanceof CheckIntegrityConstraintViolationError) {
    if (constraint === 'transicao_invalida') return regraRecusou('transicao_invalida', transitionText(error));
    if (/saldo_check$/.test(constraint)) return regraRecusou('saldo_insuficiente', 'O saldo não pode ficar negativo.');
    return null;
  }
  if (error instanceof ForeignKeyIntegrityConstraintViolationError) {
    return regraRecusou('referencia_invalida', 'Um registro referenciado não existe nesta conta.');
  }
  if (error instanceof UniqueIntegrityConstraintViolationError) return null;
  return null;
}

function transitionText(error: IntegrityConstraintViolationError): string {
  const cause = error.cause as { message?: string } | undefined;
  const match = /cannot go from (\w+) to (\w+)/.exec(cause?.message ?? error.message);
  return match ? `A transição de ${match[1]} para ${match[2]} não é permitida.` : 'Transição não permitida.';
}
