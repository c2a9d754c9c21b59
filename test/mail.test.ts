/**
 * Password-reset mail: through SMTP when SMTP_URL is set (a loopback SMTP server receives it),
 * otherwise written to the log with the link.
 */
import { Writable } from 'node:stream';
import { loadConfig } from '../shared/config';
import { createLogger } from '../shared/log';
import { LogMailer, SmtpMailer } from '../shared/mail';
import { startFakeSmtp } from './helpers/fake-smtp';

it('sends through SMTP when SMTP_URL is set', async () => {
  const smtp = await startFakeSmtp();
  try {
    const config = loadConfig({ SMTP_URL: `smtp://127.0.0.1:${smtp.port}`, MAIL_FROM: 'gensvc <noreply@example.test>' });
    const mailer = new SmtpMailer(config.smtpUrl ?? '', config.mailFrom);
    await mailer.send({ to: 'ann@example.test', subject: 'Reset your gensvc password', text: 'Open https://x/reset-password?token=abc' });
    mailer.close();
    expect(smtp.messages).toHaveLength(1);
    expect(smtp.messages[0]).toMatchObject({ from: 'noreply@example.test', to: ['ann@example.test'] });
    expect(smtp.messages[0]?.data).toMatch(/Subject: Reset your gensvc password/);
    expect(smtp.messages[0]?.data).toMatch(/reset-password\?token=abc/);
  } finally {
    await smtp.close();
  }
});

it('writes the message to the log when SMTP is not configured', async () => {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  const mailer = new LogMailer(createLogger('info', sink));
  await mailer.send({ to: 'ann@example.test', subject: 'Reset', text: 'https://x/reset-password?token=abc' });
  await new Promise((r) => setImmediate(r));
  const entry = JSON.parse(lines.join('')) as { mail: { to: string; body: string } };
  expect(entry.mail).toMatchObject({ to: 'ann@example.test', body: expect.stringContaining('reset-password?token=abc') });
});
