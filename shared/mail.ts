// Outgoing e-mail: every message is a row of outgoing_emails, written in the transaction of the
// event that causes it; the worker's mailer sends it over SMTP_URL.
import { sql, type Db } from './db/pool.ts';

export type Email = { contaId: string | null; kind: string; to: string; subject: string; body: string };

export async function enqueueEmail(db: Db, email: Email): Promise<void> {
  await db.query(sql.typeAlias('void')`
    INSERT INTO outgoing_emails (conta_id, kind, to_address, subject, body)
    VALUES (${email.contaId}, ${email.kind}, ${email.to}, ${email.subject}, ${email.body})`);
}
