import type { Feature } from '../services.js';
import { OUTBOX_CHANNEL } from './outbox.js';
import { OutboxSender } from './sender.js';
import { emailSettings } from './settings.js';
import { createEmailTransport } from './transport.js';

/**
 * Wires e-mail: a background outbox sender on this node (SMTP via `SMTP_URL`, else the log),
 * woken by the NOTIFY that `enqueueEmail` sends at commit and by its poll timer, stopped on
 * shutdown before the database closes. Features enqueue with `enqueueEmail(tx, message)`.
 */
export const installEmail: Feature = async (services) => {
  const settings = emailSettings(services.config);
  const log = services.log.child({ component: 'email' });
  const transport = createEmailTransport(services.config.smtpUrl, log);
  const sender = new OutboxSender(services.db, transport, settings, log);
  try {
    await services.db.listen(OUTBOX_CHANNEL, () => sender.wake());
  } catch (err) {
    // Not fatal: the poll timer still delivers, only a little later.
    log.warn({ err }, 'e-mail outbox: LISTEN failed; relying on polling');
  }
  sender.start();
  services.onClose(() => sender.stop());
  log.info({ transport: transport.kind }, 'e-mail outbox sender started');
};
