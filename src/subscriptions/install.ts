import type { AuthInfo, Authenticator } from '../core/auth.js';
import type { Queryable } from '../core/database.js';
import type { FeatureEnv } from '../core/feature.js';
import type { OperationRegistry } from '../core/operation.js';
import type { ResourceRepository } from '../core/repository.js';
import type { SocketRoute } from '../core/socket-route.js';
import { subscribeChanges } from '../storage/change-feed.js';
import type { Authorize } from './delivery.js';
import { EVENTS_CHANNEL } from './hooks.js';
import { SUBSCRIPTIONS_CHANNEL, type SubscriptionRegistry } from './registry.js';
import { NotificationSender } from './sender.js';
import { subscriptionSettings } from './settings.js';
import { CHANNEL_TYPES } from './spec.js';
import { statusOperation } from './status-operation.js';
import { loadWatchEntries, OUTBOX_CHANNEL } from './store.js';
import { WEBSOCKET_PATH, WebSocketChannel } from './websocket.js';

export { subscriptionHooks } from './hooks.js';
export { SubscriptionRegistry } from './registry.js';

/** What the subscriptions feature needs beyond its environment. */
export interface SubscriptionDeps {
  /** The registry the write hooks (hooks.ts) were built with. */
  registry: SubscriptionRegistry;
  repository: (auth: AuthInfo) => ResourceRepository;
  authenticator: Authenticator;
  authorize: Authorize;
}

/** What the feature states in the CapabilityStatement and serves. */
export interface SubscriptionsFeature {
  channels: readonly string[];
  websocketPath: string;
  sockets: SocketRoute[];
}

/**
 * Wires Subscriptions (src/subscriptions/README.md): the registry of watched types, loaded now
 * and kept current from the change feed; this node's rest-hook sender; the websocket endpoint
 * and its events; `Subscription/<id>/$status`. The write hooks are part of the repository from
 * the start (app.ts).
 */
export async function installSubscriptions(env: FeatureEnv, operations: OperationRegistry, deps: SubscriptionDeps): Promise<SubscriptionsFeature> {
  const log = env.log.child({ component: 'subscriptions' });
  const settings = subscriptionSettings(env.config);
  const { registry } = deps;
  const db: Queryable = env.db;

  let reloading: Promise<void> = Promise.resolve();
  const reload = () => {
    reloading = reloading
      .then(async () => registry.load(await loadWatchEntries(db)))
      .catch((err: unknown) => log.error({ err }, 'subscriptions: reloading the registry failed; every write is checked meanwhile'));
  };
  env.onClose(
    await subscribeChanges(env.db, SUBSCRIPTIONS_CHANNEL, (payload) => {
      // Lost (`-`): answer yes for every type until back (`*`), then read everything again.
      if (payload === '-' || payload === '*') {
        registry.lost();
        if (payload === '*') reload();
      } else registry.hear(payload);
    }),
  );
  reload();
  await reloading;

  const sender = new NotificationSender({ db, system: env.system, repository: deps.repository, authorize: deps.authorize, settings, log, idle: () => registry.empty() });
  env.onClose(await subscribeChanges(env.db, OUTBOX_CHANNEL, () => sender.wake()));
  sender.start();
  env.onClose(() => sender.stop());

  const websocket = new WebSocketChannel({ db, authenticator: deps.authenticator, repository: deps.repository, authorize: deps.authorize, log });
  env.onClose(await subscribeChanges(env.db, EVENTS_CHANNEL, (payload) => websocket.hear(payload)));
  env.onClose(() => websocket.close());

  operations.register(statusOperation(db));
  return { channels: CHANNEL_TYPES, websocketPath: WEBSOCKET_PATH, sockets: [websocket.route()] };
}
