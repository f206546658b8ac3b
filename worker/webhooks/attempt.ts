// One delivery attempt: the contract's §6.1 envelope, signed per Standard Webhooks with the endpoint's secret
// (and its previous secret during a rotation), POSTed, and the outcome decided by the retry rules.
import { clock } from '#shared/clock.ts';
import type { TakenDelivery } from '#shared/db/deliveries.ts';
import type { DeliveryResult } from '#shared/db/outcomes.ts';
import { montarEnvelope } from '#shared/domain/envelope.ts';
import { assinar, decide } from '#shared/domain/webhooks.ts';
import type { WebhookHttp } from './http.ts';
import { finishAttempt, startAttemptSpan, traceHeaders } from './telemetry.ts';

/** The attempt this delivery was taken for, already recorded as started (shared/db/deliveries.ts). */
export async function attemptDelivery(row: TakenDelivery, http: WebhookHttp, baseUrl: string): Promise<DeliveryResult> {
  const body = JSON.stringify(montarEnvelope(baseUrl, {
    id: row.event_id,
    tipo: row.tipo,
    criado_em: row.criado_em,
    conta_id: row.conta_id,
    dados: row.dados,
  }));
  const timestamp = clock.now();
  const secrets = row.segredo_anterior ? [row.segredo, row.segredo_anterior] : [row.segredo];
  const span = startAttemptSpan(row);
  const outcome = await http.post(row.url, body, {
    // The event id: receivers deduplicate by it, so every retry and replay keeps it.
    'webhook-id': row.event_id,
    'webhook-timestamp': String(Math.floor(timestamp.getTime() / 1000)),
    'webhook-signature': assinar(secrets, row.event_id, timestamp, body),
    ...traceHeaders(span),
  });
  const decision = decide(outcome, row.run_attempts, clock.now());
  finishAttempt(span, row, outcome, decision.status);
  return {
    contaId: row.conta_id,
    deliveryId: row.id,
    leaseId: row.lease_id,
    endpointId: row.endpoint_id,
    status: decision.status,
    nextAttemptAt: decision.status === 'pending' ? decision.nextAttemptAt : null,
    disable: decision.status === 'failed' ? decision.disable : null,
    attempt: {
      number: row.attempt,
      startedAt: outcome.startedAt,
      durationMs: outcome.durationMs,
      succeeded: decision.status === 'succeeded',
      responseStatus: outcome.status,
      responseBody: outcome.body,
      error: outcome.error,
    },
  };
}
