// The event envelope of contract §6.1, the body of every delivery. It is built from the outbox row
// alone, so every retry and replay of an event sends the same bytes under the same id.
import { urlDoEvento } from './eventos.ts';

export type Envelope = {
  id: string;
  tipo: string;
  versao: 'v1';
  criado_em: string;
  conta_id: string;
  dados: Record<string, unknown>;
  url: string | null;
};

export function montarEnvelope(
  baseUrl: string,
  evento: { id: string; tipo: string; criado_em: string; conta_id: string; dados: Record<string, unknown> },
): Envelope {
  return {
    id: evento.id,
    tipo: evento.tipo,
    versao: 'v1',
    criado_em: evento.criado_em,
    conta_id: evento.conta_id,
    dados: evento.dados,
    url: urlDoEvento(baseUrl, evento.tipo, evento.dados),
  };
}
