import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { sql } from '#shared/db/pool.ts';
import { enqueueEmail } from '#shared/mail.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { startSmtpReceiver, type SmtpReceiver } from './helpers/smtp.ts';

const test = suite('outgoing e-mail');
let smtp: SmtpReceiver;
let app: TestApp;

test.before(async () => {
  smtp = await startSmtpReceiver();
  app = await startTestApp({ worker: true, env: { SMTP_URL: smtp.url, MAIL_FROM: 'API <api@printfarm.invalid>' } });
});
test.after(async () => {
  await app.stop();
  await smtp.close();
});

const Status = z.object({ status: z.string(), attempts: z.number(), last_error: z.string().nullable() });
const statusOf = (kind: string) => app.db.pool.one(sql.type(Status)`SELECT status, attempts, last_error FROM outgoing_emails WHERE kind = ${kind}`);

async function until<T>(read: () => Promise<T>, done: (v: T) => boolean, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((r) => setTimeout(r, 50));
  }
}

test('a recorded e-mail is delivered over SMTP and marked sent', async () => {
  await enqueueEmail(app.db.pool, { contaId: null, kind: 'teste', to: 'dona@example.com', subject: 'Chave suspensa', body: 'Olá' });
  const mail = await smtp.waitFor((m) => m.to.includes('dona@example.com'));
  assert.is(mail.from, 'api@printfarm.invalid');
  assert.match(mail.raw, 'Subject: Chave suspensa');
  const row = await until(() => statusOf('teste'), (r) => r.status === 'sent');
  assert.is(row.status, 'sent');
  assert.is(row.attempts, 1);
});

test('an unreachable SMTP server leaves the e-mail pending with the error, for a later attempt', async () => {
  await smtp.close();
  await enqueueEmail(app.db.pool, { contaId: null, kind: 'sem-smtp', to: 'x@example.com', subject: 'Oi', body: 'Oi' });
  const row = await until(() => statusOf('sem-smtp'), (r) => r.attempts > 0 && r.last_error !== null);
  assert.is(row.status, 'pending');
  assert.ok(row.last_error);
  smtp = await startSmtpReceiver();
});

test.run();
