import type { Config } from '../config.js';

/** Tuning of notification delivery: the configured (`LATTICE_SUBSCRIPTION_*`, config.ts) and the fixed; tests shorten the intervals. */
export type SubscriptionSettings = Config['subscriptions'] & {
  /** How long a claimed subscription is reserved for one node: longer than a batch of deliveries. */
  leaseMs: number;
  /** Notifications of one subscription delivered per claim. */
  batchSize: number;
  /** Subscriptions claimed per round trip. */
  claimSize: number;
  /** Finished notifications (sent, skipped, failed) are kept this long for `$status`. */
  keepMs: number;
};

export function subscriptionSettings(config: Config): SubscriptionSettings {
  const batchSize = 20;
  return {
    ...config.subscriptions,
    batchSize,
    claimSize: 10,
    leaseMs: config.subscriptions.timeoutMs * batchSize + 30_000,
    keepMs: 7 * 24 * 3600_000,
  };
}

/** Delay before attempt `attempts + 1`: exponential, capped. */
export function backoff(settings: SubscriptionSettings, attempts: number): number {
  return Math.min(settings.retryMaxMs, settings.retryBaseMs * 2 ** Math.max(0, attempts - 1));
}
