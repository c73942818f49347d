import { writeSync } from 'node:fs';
import nodemailer from 'nodemailer';
import type { Logger } from 'pino';
import type { OutboxMessage } from './outbox.js';

/** Delivers one message; throws when it could not (the sender retries later). */
export interface EmailTransport {
  readonly kind: 'smtp' | 'log';
  send(message: OutboxMessage, from: string): Promise<void>;
  close(): void;
}

/**
 * SMTP through nodemailer when `smtpUrl` is set (`smtp://user:pass@host:port`, `smtps://…`),
 * else the log (development default, docs/invite.md#e-mail). Timeouts are bounded so a hung server
 * cannot hold a message longer than the sender's lease.
 */
export function createEmailTransport(smtpUrl: string | undefined, log: Logger): EmailTransport {
  if (!smtpUrl) return logTransport(log);
  const transporter = nodemailer.createTransport({
    url: smtpUrl,
    connectionTimeout: 10_000,
    greetingTimeout: 10_000,
    socketTimeout: 30_000,
  });
  return {
    kind: 'smtp',
    async send(message, from) {
      await transporter.sendMail({
        from,
        to: message.to,
        subject: message.subject,
        text: message.text,
        html: message.html,
        // Stable per outbox row: receivers can recognise a redelivery after a crash.
        messageId: `<${message.id}@lattice>`,
      });
    },
    close: () => transporter.close(),
  };
}

/**
 * Development only: "delivers" by writing the message to standard error, synchronously, before
 * the outbox marks it sent — so a crash right after cannot lose a message the outbox counts as
 * delivered. The text holds the set-password link: never use this transport in production.
 */
function logTransport(log: Logger): EmailTransport {
  log.info('SMTP_URL is not set: e-mails are written to standard error (development only)');
  return {
    kind: 'log',
    async send(message, from) {
      const line = { time: new Date().toISOString(), msg: 'e-mail (SMTP_URL not set)', email: { id: message.id, from, to: message.to, subject: message.subject, text: message.text } };
      writeSync(2, `${JSON.stringify(line)}\n`);
    },
    close() {},
  };
}
