import type { MailMessage, Mailer } from '../../shared/mail';

/** Captures outgoing mail so a test can read the reset link. */
export class Mailbox implements Mailer {
  readonly sent: MailMessage[] = [];

  async send(message: MailMessage): Promise<void> {
    this.sent.push(message);
  }

  close(): void {}

  last(to?: string): MailMessage | undefined {
    return [...this.sent].reverse().find((m) => to === undefined || m.to === to);
  }
}
