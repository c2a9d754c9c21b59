/** Outgoing mail: SMTP when SMTP_URL is set; otherwise messages are written to the log. */
import nodemailer, { Transporter } from 'nodemailer';
import type { Logger } from '../log';

export interface MailMessage {
  to: string;
  subject: string;
  text: string;
}

export interface Mailer {
  send(message: MailMessage): Promise<void>;
  close(): void;
}

export class SmtpMailer implements Mailer {
  private readonly transport: Transporter;

  constructor(
    url: string,
    private readonly from: string,
  ) {
    this.transport = nodemailer.createTransport(url);
  }

  async send(message: MailMessage): Promise<void> {
    await this.transport.sendMail({ from: this.from, ...message });
  }

  close(): void {
    this.transport.close();
  }
}

/** No SMTP configured: the operator reads the message (e.g. a reset link) in the log. */
export class LogMailer implements Mailer {
  constructor(private readonly log: Logger) {}

  async send(message: MailMessage): Promise<void> {
    this.log.info({ mail: { to: message.to, subject: message.subject, body: message.text } }, 'mail (SMTP_URL not set)');
  }

  close(): void {}
}
