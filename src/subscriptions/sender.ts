import { randomUUID } from 'node:crypto';
import type { Subscription } from '@medplum/fhirtypes';
import type { Logger } from 'pino';
import type { AuthInfo } from '../core/auth.js';
import { BackgroundLoop } from '../core/background-loop.js';
import type { Queryable } from '../core/database.js';
import type { ResourceRepository, SystemRepository } from '../core/repository.js';
import { claimsAuth } from './author.js';
import { inError, readForAuthor, restHookRequest, type Authorize } from './delivery.js';
import { postNotification } from './rest-hook.js';
import { backoff, type SubscriptionSettings } from './settings.js';
import { readSpec } from './spec.js';
import {
  claimSubscriptions,
  nextDueInMs,
  pendingNotifications,
  pruneNotifications,
  recordAttempt,
  releaseSubscription,
  type Claimed,
} from './store.js';

export interface SenderDeps {
  db: Queryable;
  system: SystemRepository;
  repository(auth: AuthInfo): ResourceRepository;
  authorize: Authorize;
  settings: SubscriptionSettings;
  log: Logger;
  /** True when no active Subscription exists: the poll then asks the database nothing. */
  idle: () => boolean;
}

/**
 * The rest-hook sender of one API node (docs/rest.md#subscriptions): claims subscriptions with
 * pending notifications (store.ts `claimSubscriptions`: one node per subscription at a time),
 * delivers each one's notifications in order, and on a failure leaves the rest waiting behind
 * it, retried with exponential backoff; past the attempts the Subscription goes to `error`.
 * Woken at the commit of a write that recorded notifications, and every `pollMs`. Runs off the
 * request path: a slow or dead endpoint delays only its own subscription's notifications.
 */
export class NotificationSender extends BackgroundLoop {
  private lastPrune = 0;
  private readonly lease = randomUUID();

  constructor(private readonly deps: SenderDeps) {
    super(deps.settings.pollMs);
  }

  protected async pass(woken: boolean): Promise<number | undefined> {
    // No active Subscription: the poll asks the database nothing (a wake-up still looks).
    if (!woken && this.deps.idle()) return undefined;
    await this.drain();
    const due = await nextDueInMs(this.deps.db);
    return due === undefined ? undefined : Math.min(this.deps.settings.pollMs, Math.ceil(due) + 5);
  }

  protected onError(err: unknown): void {
    this.deps.log.error({ err }, 'subscription outbox drain failed');
  }

  /** Delivers what is due now; returns the number of subscriptions served. */
  async drain(): Promise<number> {
    const { db, settings } = this.deps;
    let served = 0;
    while (!this.stopped) {
      const claimed = await claimSubscriptions(db, settings.claimSize, settings.leaseMs, this.lease);
      if (claimed.length === 0) break;
      // Subscriptions in parallel (one slow endpoint does not hold the others), each one in order.
      await Promise.all(claimed.map((c) => this.serve(c)));
      served += claimed.length;
    }
    if (Date.now() - this.lastPrune > 3600_000) {
      this.lastPrune = Date.now();
      await pruneNotifications(db, settings.keepMs);
    }
    return served;
  }

  private async serve(claim: Claimed): Promise<void> {
    const { db, log } = this.deps;
    let delay = 0;
    try {
      delay = await this.deliver(claim);
    } catch (err) {
      log.error({ err, subscription: claim.id }, 'subscription delivery failed');
      delay = this.deps.settings.retryBaseMs;
    } finally {
      await releaseSubscription(db, claim.id, this.lease, delay).catch((err: unknown) => log.error({ err }, 'subscription release failed'));
    }
  }

  /** Delivers a claimed subscription's due notifications; returns when it is due again (ms). */
  private async deliver(claim: Claimed): Promise<number> {
    const { db, system, settings, log } = this.deps;
    const subscription = await system.tryRead<Subscription>('Subscription', claim.id);
    if (!subscription || subscription.status !== 'active') return 0;
    const spec = readSpec(subscription);
    const claims = claimsAuth(claim.author);
    const author = claims && (await this.deps.authorize(claims));
    if (!author) {
      await this.giveUp(subscription, 'The author of this Subscription no longer has access to its project');
      return 0;
    }
    const repo = this.deps.repository(author);
    const maxAttempts = Math.min(settings.maxAttempts, spec.maxAttempts ?? Infinity);
    for (const n of await pendingNotifications(db, claim.id, settings.batchSize)) {
      const resource = await readForAuthor(repo, n);
      if (!resource) {
        await recordAttempt(db, n.seq, 'skipped', "The Subscription's author may not read this resource");
        continue;
      }
      try {
        await postNotification(restHookRequest(spec, resource, n.interaction), settings);
      } catch (err) {
        const error = err instanceof Error ? err.message : String(err);
        const attempts = n.attempts + 1;
        log.warn({ subscription: claim.id, seq: n.seq, attempts, error }, 'subscription notification not delivered');
        if (attempts >= maxAttempts) {
          await recordAttempt(db, n.seq, 'failed', error);
          await this.giveUp(subscription, `Delivery failed after ${attempts} attempts: ${error}`);
          return 0;
        }
        await recordAttempt(db, n.seq, 'pending', error);
        return backoff(settings, attempts);
      }
      await recordAttempt(db, n.seq, 'sent');
    }
    return 0;
  }

  /** The Subscription goes to `error` (its pending notifications are dropped with it, store.ts). */
  private async giveUp(subscription: Subscription, error: string): Promise<void> {
    this.deps.log.warn({ subscription: subscription.id, error }, 'subscription set to error');
    await this.deps.system.update(inError(subscription, error));
  }
}
