// Rows planted straight into the tables, with timestamps moved into the past, for the suites that
// check what operators and purges see (retention, operator views) without waiting for the worker.
// Ages are PostgreSQL intervals ('31 days', '90 minutes'), counted back from the database's now().
import { z } from 'zod';
import { sql, type Db } from '#shared/db/pool.ts';
import { criarEndpoint } from '#shared/db/webhooks.ts';
import type { TestAccount } from './fixtures.ts';

const Id = z.object({ id: z.string() });

export async function plantEndpoint(db: Db, account: TestAccount, url = 'https://erp.example.com/hooks'): Promise<string> {
  const endpoint = await criarEndpoint(db, { contaId: account.contaId, usuarioId: account.usuarioId, url, tipos: [], descricao: null });
  return endpoint.id;
}

/** `count` cotacao.criada events of the account, created `criadoAgo` ago and relayed `relayedAgo` ago (null: never). */
export async function plantEvents(
  db: Db,
  contaId: string,
  options: { count?: number; criadoAgo?: string; relayedAgo?: string | null } = {},
): Promise<string[]> {
  const relayed = options.relayedAgo === undefined ? '1 minute' : options.relayedAgo;
  const criado = options.criadoAgo ?? relayed ?? '1 minute';
  const rows = await db.any(sql.type(Id)`
    INSERT INTO outbox (conta_id, tipo, dados, criado_em, available_at, relayed_at)
    SELECT ${contaId}, 'cotacao.criada', jsonb_build_object('objeto', 'cotacao', 'id', gen_random_uuid(), 'codigo', 'COT-' || g),
           now() - ${criado}::interval, now() - ${criado}::interval,
           now() - ${relayed}::interval
      FROM generate_series(1, ${options.count ?? 1}) g
    RETURNING id`);
  return rows.map((r) => r.id);
}

export type PlantedAttempt = { ago: string; status?: number | null; error?: string | null; durationMs?: number };

/**
 * A delivery of each event to the endpoint, with its attempts (numbered from 1). A finished
 * delivery (succeeded or failed) completed `completedAgo` ago; a pending one is next due at
 * `nextAttemptAt` (an interval from now, negative for the past) and names `jobId` when enqueued.
 */
export async function plantDeliveries(
  db: Db,
  input: {
    contaId: string;
    endpointId: string;
    eventIds: readonly string[];
    status: 'pending' | 'succeeded' | 'failed';
    createdAgo?: string;
    completedAgo?: string;
    nextAttemptAt?: string;
    leaseIds?: readonly (string | null)[];
    attempts?: readonly PlantedAttempt[];
  },
): Promise<string[]> {
  const pending = input.status === 'pending';
  const attempts = input.attempts ?? [];
  const rows = await db.any(sql.type(Id)`
    INSERT INTO deliveries (conta_id, event_id, endpoint_id, status, attempts, run_attempts, next_attempt_at, lease_id,
                            last_attempt_at, created_at, completed_at)
    SELECT ${input.contaId}, e.event_id, ${input.endpointId}, ${input.status}, ${attempts.length}, ${attempts.length},
           now() + ${input.nextAttemptAt ?? '0 seconds'}::interval, e.lease_id,
           ${attempts.length ? sql.fragment`now() - ${attempts[attempts.length - 1]?.ago ?? '0 seconds'}::interval` : null},
           now() - ${input.createdAgo ?? '1 hour'}::interval,
           CASE WHEN ${pending} THEN NULL ELSE now() - ${input.completedAgo ?? '1 minute'}::interval END
      FROM unnest(${sql.array(input.eventIds, 'uuid')}::uuid[], ${sql.array(input.leaseIds ?? input.eventIds.map(() => null), 'uuid')}::uuid[])
           AS e (event_id, lease_id)
    RETURNING id`);
  const ids = rows.map((r) => r.id);
  for (const [i, a] of attempts.entries()) {
    await db.query(sql.typeAlias('void')`
      INSERT INTO delivery_attempts (conta_id, delivery_id, attempt, started_at, duration_ms, succeeded, response_status, error)
      SELECT ${input.contaId}, d, ${i + 1}, now() - ${a.ago}::interval, ${a.durationMs ?? 120},
             ${a.status !== undefined && a.status !== null && a.status >= 200 && a.status < 300}, ${a.status ?? null}, ${a.error ?? null}
        FROM unnest(${sql.array(ids, 'uuid')}::uuid[]) AS d`);
  }
  return ids;
}

/** `count` request log rows of the account (null: a request refused before one was known), `ago` ago. */
export async function plantRequests(
  db: Db,
  input: {
    contaId: string | null; chaveId?: string | null; count?: number; ago: string; status?: number; codigo?: string | null; cost?: number; route?: string;
    refusedBy?: string;
  },
): Promise<void> {
  await db.query(sql.typeAlias('void')`
    INSERT INTO request_log (requisicao_id, conta_id, chave_id, method, route, path, status, codigo, cost, duration_ms, ip, created_at, refused_by)
    SELECT gen_random_uuid(), ${input.contaId}, ${input.chaveId ?? null}, 'GET', ${input.route ?? '/cotacoes'}, '/v1/cotacoes',
           ${input.status ?? 200}, ${input.codigo ?? null}, ${input.cost ?? 1}, 12.5, '127.0.0.1', now() - ${input.ago}::interval,
           ${input.refusedBy ?? null}
      FROM generate_series(1, ${input.count ?? 1})`);
}
