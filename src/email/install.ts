import type { FeatureEnv } from '../core/feature.js';
import { subscribeChanges } from '../storage/change-feed.js';
import { OUTBOX_CHANNEL } from './outbox.js';
import { OutboxSender } from './sender.js';
import { emailSettings } from './settings.js';
import { createEmailTransport } from './transport.js';

/**
 * Wires e-mail: a background outbox sender on this node (SMTP via `SMTP_URL`, else the log),
 * woken by the announcement `enqueueEmail` makes at commit (storage/change-feed.ts) and by its
 * poll timer, stopped on shutdown before the database closes. Features enqueue with `enqueueEmail(tx, message)`.
 */
export async function installEmail(env: FeatureEnv): Promise<void> {
  const settings = emailSettings(env.config);
  const log = env.log.child({ component: 'email' });
  const transport = createEmailTransport(env.config.smtpUrl, log);
  const sender = new OutboxSender(env.db, transport, settings, log);
  try {
    env.onClose(await subscribeChanges(env.db, OUTBOX_CHANNEL, () => sender.wake()));
  } catch (err) {
    // Not fatal: the poll timer still delivers, only a little later.
    log.warn({ err }, 'e-mail outbox: LISTEN failed; relying on polling');
  }
  // Delivery begins once the server listens: until then the database serves the start.
  env.onListening(() => sender.start());
  env.onClose(() => sender.stop());
  log.info({ transport: transport.kind }, 'e-mail outbox sender started');
}
