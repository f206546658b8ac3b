// Deliveries whose pg-boss job was lost: the schedule lives in deliveries, so a delivery that still
// names a job that can no longer run would wait forever. (The retention of events, deliveries and
// attempts is shared/db/retention.ts.)
import { BOSS_SCHEMA } from '../boss.ts';
import { sql, type Db } from './pool.ts';

/**
 * Takes the job off at most `limit` pending deliveries enqueued over an hour ago whose job is gone
 * or finished (failed past its retries, cancelled, deleted), so the scheduler gives them a new
 * one; the deliveries released. A job still queued, retrying or running is left to run, however
 * large the backlog ahead of it. Reads pg-boss's job table directly (as the queue_depth view
 * does): one statement checks a whole batch, where pg-boss's API looks jobs up one at a time.
 */
export async function forgetLostJobs(db: Db, queue: string, limit: number): Promise<number> {
  const jobs = sql.identifier([BOSS_SCHEMA, 'job']);
  const result = await db.query(sql.typeAlias('void')`
    UPDATE deliveries SET job_id = NULL
     WHERE (conta_id, id) IN (
       SELECT d.conta_id, d.id FROM deliveries d
        WHERE d.status = 'pending' AND d.job_id IS NOT NULL AND d.run_attempts >= 0 -- matches deliveries_enqueued
          AND d.next_attempt_at < now() - interval '1 hour'
          AND NOT EXISTS (SELECT 1 FROM ${jobs} j WHERE j.name = ${queue} AND j.id = d.job_id AND j.state < 'completed')
        ORDER BY d.next_attempt_at LIMIT ${limit} FOR UPDATE OF d SKIP LOCKED)`);
  return result.rowCount;
}
