// Webhook deliveries as Standard Webhooks sign them: `webhook-signature` carries one `v1,<base64
// HMAC-SHA256>` per secret of the endpoint (two during a rotation), of `<webhook-id>.<webhook-
// timestamp>.<body>` keyed with the secret's bytes (whsec_ + base64). A delivery is authentic when
// any of its signatures matches any secret the receiver holds, and recent: its timestamp within the
// tolerance of the receiver's clock, so a captured delivery cannot be replayed later.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Evento } from './types.ts';

const PREFIXO = 'whsec_';

/** Por que uma entrega foi recusada. */
export type MotivoDaRecusa = 'cabecalho_ausente' | 'fora_do_prazo' | 'assinatura_invalida' | 'corpo_invalido';

/** Uma entrega que não passou na verificação: não a processe (responda 400 ou 401). */
export class ErroDeAssinatura extends Error {
  override name = 'ErroDeAssinatura';
  readonly motivo: MotivoDaRecusa;

  constructor(motivo: MotivoDaRecusa, mensagem: string) {
    super(mensagem);
    this.motivo = motivo;
  }
}

/** O que chegou numa entrega. */
export type Entrega = {
  /** O corpo exatamente como chegou (texto ou bytes), antes de qualquer `JSON.parse`. */
  corpo: string | Uint8Array;
  /** Os cabeçalhos da requisição: um `Headers`, ou o objeto `req.headers` do `node:http` (nomes em minúsculas). */
  cabecalhos: Headers | Record<string, string | string[] | undefined>;
};

/** Como verificar. */
export type OpcoesDeVerificacao = {
  /** O segredo `whsec_…` do endpoint; durante uma troca de segredo do seu lado, os dois. */
  segredo: string | readonly string[];
  /** Quantos segundos de diferença entre `webhook-timestamp` e o seu relógio são aceitos (padrão 300). */
  toleranciaSegundos?: number;
  /** O instante de agora (padrão: o relógio do sistema). */
  agora?: Date;
};

/**
 * Verifica a assinatura de uma entrega e devolve o evento, com `dados` tipado por `tipo`; lança
 * `ErroDeAssinatura` se ela não é autêntica ou é antiga demais. Aceita a entrega quando qualquer
 * das assinaturas (duas, durante uma troca de segredo no serviço) confere com qualquer dos segredos.
 */
export function verificarWebhook(entrega: Entrega, opcoes: OpcoesDeVerificacao): Evento {
  const id = cabecalho(entrega.cabecalhos, 'webhook-id');
  const timestamp = cabecalho(entrega.cabecalhos, 'webhook-timestamp');
  const assinaturas = cabecalho(entrega.cabecalhos, 'webhook-signature');
  if (!id || !timestamp || !assinaturas) {
    throw new ErroDeAssinatura('cabecalho_ausente', 'Faltam os cabeçalhos webhook-id, webhook-timestamp ou webhook-signature.');
  }
  const segundos = Number(timestamp);
  const agora = Math.floor((opcoes.agora ?? new Date()).getTime() / 1000);
  if (!/^\d+$/.test(timestamp) || Math.abs(agora - segundos) > (opcoes.toleranciaSegundos ?? 300)) {
    throw new ErroDeAssinatura('fora_do_prazo', 'O webhook-timestamp está fora da tolerância: a entrega é antiga demais ou o relógio está errado.');
  }
  const corpo = typeof entrega.corpo === 'string' ? Buffer.from(entrega.corpo, 'utf8') : Buffer.from(entrega.corpo);
  const segredos = typeof opcoes.segredo === 'string' ? [opcoes.segredo] : opcoes.segredo;
  const esperadas = segredos.map((s) => Buffer.from(hmac(s, id, segundos, corpo), 'base64'));
  const recebidas = assinaturas.split(' ').flatMap((a) => (a.startsWith('v1,') ? [Buffer.from(a.slice(3), 'base64')] : []));
  if (!recebidas.some((r) => esperadas.some((e) => e.length === r.length && timingSafeEqual(e, r)))) {
    throw new ErroDeAssinatura('assinatura_invalida', 'Nenhuma assinatura confere com o segredo.');
  }
  try {
    return JSON.parse(corpo.toString('utf8')) as Evento;
  } catch {
    throw new ErroDeAssinatura('corpo_invalido', 'O corpo assinado não é JSON.');
  }
}

/** O valor de `webhook-signature` de um corpo: uma assinatura `v1,` por segredo, separadas por espaço. */
export function assinarWebhook(segredos: string | readonly string[], id: string, timestamp: Date, corpo: string): string {
  const segundos = Math.floor(timestamp.getTime() / 1000);
  const lista = typeof segredos === 'string' ? [segredos] : segredos;
  return lista.map((s) => `v1,${hmac(s, id, segundos, Buffer.from(corpo, 'utf8'))}`).join(' ');
}

/** Um segredo novo, no formato do serviço: `whsec_` e 32 bytes aleatórios em base64. */
export function gerarSegredo(): string {
  return `${PREFIXO}${randomBytes(32).toString('base64')}`;
}

function hmac(segredo: string, id: string, segundos: number, corpo: Buffer): string {
  const chave = Buffer.from(segredo.startsWith(PREFIXO) ? segredo.slice(PREFIXO.length) : segredo, 'base64');
  return createHmac('sha256', chave).update(`${id}.${segundos}.`).update(corpo).digest('base64');
}

function cabecalho(cabecalhos: Entrega['cabecalhos'], nome: string): string | null {
  if (cabecalhos instanceof Headers) return cabecalhos.get(nome);
  const valor = cabecalhos[nome] ?? cabecalhos[nome.toLowerCase()];
  return Array.isArray(valor) ? (valor[0] ?? null) : (valor ?? null);
}
