// Sends pending rows of outgoing_emails over SMTP_URL. Rows are claimed with a lease (FOR UPDATE
// SKIP LOCKED), so several workers never send one message twice unless one dies mid-send.
import nodemailer from 'nodemailer';
import { z } from 'zod';
import { sql } from '#shared/db/pool.ts';
import type { LoopDeps } from './jobs/types.ts';
import type { Notifier } from './notifier.ts';
import { startPoller, type Poller } from './poller.ts';

const BATCH = 20;
const MAX_ATTEMPTS = 6;
const Claimed = z.object({ id: z.string(), to_address: z.string(), subject: z.string(), body: z.string(), attempts: z.number() });

export function startMailer(deps: LoopDeps, notifier: Notifier): Poller {
  const { pool, config, log } = deps;
  const transport = config.SMTP_URL ? nodemailer.createTransport(config.SMTP_URL) : null;
  const poller = startPoller({
    name: 'mailer',
    intervalMs: 5_000,
    log,
    step: async () => {
      const claimed = await pool.any(sql.type(Claimed)`
        UPDATE outgoing_emails SET locked_until = now() + interval '2 minutes', attempts = attempts + 1
         WHERE id IN (SELECT id FROM outgoing_emails
                       WHERE status = 'pending' AND next_attempt_at <= now()
                         AND (locked_until IS NULL OR locked_until < now())
                       ORDER BY next_attempt_at LIMIT ${BATCH} FOR UPDATE SKIP LOCKED)
        RETURNING id, to_address, subject, body, attempts`);
      for (const email of claimed) {
        if (!transport) {
          await pool.query(sql.typeAlias('void')`
            UPDATE outgoing_emails SET status = 'skipped', last_error = 'SMTP_URL is not set', locked_until = NULL
             WHERE id = ${email.id}`);
          log.warn({ email: email.id, to: email.to_address, subject: email.subject }, 'e-mail not sent: SMTP_URL is not set');
          continue;
        }
        try {
          await transport.sendMail({ from: config.MAIL_FROM, to: email.to_address, subject: email.subject, text: email.body });
          await pool.query(sql.typeAlias('void')`
            UPDATE outgoing_emails SET status = 'sent', sent_at = now(), locked_until = NULL, last_error = NULL
             WHERE id = ${email.id}`);
        } catch (error) {
          const message = error instanceof Error ? error.message : String(error);
          const failed = email.attempts >= MAX_ATTEMPTS;
          await pool.query(sql.typeAlias('void')`
            UPDATE outgoing_emails
               SET status = ${failed ? 'failed' : 'pending'}, last_error = ${message.slice(0, 500)}, locked_until = NULL,
                   next_attempt_at = now() + make_interval(secs => ${30 * 2 ** email.attempts})
             WHERE id = ${email.id}`);
          log.warn({ email: email.id, err: message, attempts: email.attempts }, 'e-mail not sent');
        }
      }
      return claimed.length;
    },
  });
  notifier.on('outgoing_email', () => poller.wake());
  return {
    wake: poller.wake,
    async stop() {
      await poller.stop();
      transport?.close();
    },
  };
}
