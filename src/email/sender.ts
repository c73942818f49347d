import type { Logger } from 'pino';
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
export class OutboxSender {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private wakeAgain = false;
  private stopped = false;

  constructor(
    private readonly db: Queryable,
    private readonly transport: EmailTransport,
    private readonly settings: EmailSettings,
    private readonly log: Logger,
  ) {}

  /** Starts the loop (first run right away). */
  start(): void {
    this.schedule(0);
  }

  /** Runs a drain as soon as possible (coalesces wake-ups while one is running). */
  wake(): void {
    if (this.stopped) return;
    if (this.running) this.wakeAgain = true;
    else this.schedule(0);
  }

  /** Stops the loop, waits for an in-flight drain, closes the transport. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
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

  private schedule(ms: number): void {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.run(), ms);
    this.timer.unref();
  }

  private run(): void {
    if (this.running || this.stopped) return;
    this.wakeAgain = false;
    let next = this.settings.pollMs;
    this.running = this.drain()
      .then(async () => {
        // Wake for a retry that falls due before the next poll.
        const due = await nextDueInMs(this.db);
        if (due !== undefined) next = Math.min(next, Math.ceil(due) + 5);
      })
      .catch((err: unknown) => {
        if (!this.stopped) this.log.error({ err }, 'e-mail outbox drain failed');
      })
      .finally(() => {
        this.running = undefined;
        this.schedule(this.wakeAgain ? 0 : next);
      });
  }
}
