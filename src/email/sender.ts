import type { Logger } from 'pino';
import { BackgroundLoop } from '../core/background-loop.js';
import type { Queryable } from '../core/database.js';
import { claimDue, markFailed, markSent, nextDueInMs, type OutboxMessage } from './outbox.js';
import { retryDelay, type EmailSettings } from './settings.js';
import type { EmailTransport } from './transport.js';

/**
 * The background sender of one API node: drains due outbox messages through the transport,
 * retrying failures with exponential backoff. Runs when woken (announced at an enqueuing
 * commit) and every `pollMs` (retries, and messages enqueued by nodes that could not notify).
 * Any number of nodes may run one: claims never overlap (see `claimDue`).
 */
export class OutboxSender extends BackgroundLoop {
  constructor(
    private readonly db: Queryable,
    private readonly transport: EmailTransport,
    private readonly settings: EmailSettings,
    private readonly log: Logger,
  ) {
    super(settings.pollMs);
  }

  protected async pass(): Promise<number | undefined> {
    await this.drain();
    // Wake for a retry that falls due before the next poll.
    const due = await nextDueInMs(this.db);
    return due === undefined ? undefined : Math.min(this.settings.pollMs, Math.ceil(due) + 5);
  }

  protected onError(err: unknown): void {
    this.log.error({ err }, 'e-mail outbox drain failed');
  }

  /** Stops the loop, waits for an in-flight drain, closes the transport. */
  override async stop(): Promise<void> {
    await super.stop();
    this.transport.close();
  }

  /** Delivers every due message; returns how many were attempted. Exposed for tests. */
  async drain(): Promise<number> {
    let attempted = 0;
    while (!this.stopped) {
      const batch = await claimDue(this.db, this.settings.batchSize, this.settings.leaseMs);
      if (batch.length === 0) break;
      // One at a time: ordering is kept per node and a broken server fails fast once per batch.
      for (const message of batch) await this.deliver(message);
      attempted += batch.length;
    }
    return attempted;
  }

  private async deliver(message: OutboxMessage): Promise<void> {
    try {
      await this.transport.send(message, this.settings.from);
    } catch (err) {
      const giveUp = message.attempts >= this.settings.maxAttempts;
      const delay = retryDelay(this.settings, message.attempts);
      const error = err instanceof Error ? err.message : String(err);
      this.log.warn({ emailId: message.id, attempts: message.attempts, giveUp, error }, 'e-mail delivery failed');
      await markFailed(this.db, message.id, error, delay, giveUp);
      return;
    }
    await markSent(this.db, message.id);
  }
}
