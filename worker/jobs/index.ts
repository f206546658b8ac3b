// Every job the worker runs.
import { cotacoesExpiracao } from './cotacoes.ts';
import { idempotencyPurge } from './idempotency.ts';
import { partitionsAhead } from './partitions.ts';
import { requestLogRetention } from './retention.ts';
import { liftSuspension } from './suspension.ts';
import type { AnyJob } from './types.ts';
import { webhookMaintenance } from './webhook-maintenance.ts';

export const jobs: readonly AnyJob[] = [requestLogRetention, partitionsAhead, liftSuspension, idempotencyPurge, webhookMaintenance, cotacoesExpiracao];
