import type { Subscription } from '@medplum/fhirtypes';
import type { Logger } from 'pino';
import type { AuthInfo, Authenticator } from '../core/auth.js';
import type { Queryable } from '../core/database.js';
import type { ResourceRepository } from '../core/repository.js';
import type { SocketConnection, SocketRoute } from '../core/socket-route.js';
import { claimsAuth } from './author.js';
import { readForAuthor, type Authorize } from './delivery.js';
import type { WriteInteraction } from './spec.js';
import { subscriptionAuthor } from './store.js';

/** Path of the R4 websocket endpoint (named in the CapabilityStatement). */
export const WEBSOCKET_PATH = '/ws/subscriptions-r4';

/** Subscriptions one connection may bind. */
export const MAX_BINDS = 50;

export interface WebSocketDeps {
  db: Queryable;
  authenticator: Authenticator;
  repository(auth: AuthInfo): ResourceRepository;
  authorize: Authorize;
  log: Logger;
}

/**
 * The R4 `websocket` channel (docs/rest.md#subscriptions), `bind-with-id`: a client opens
 * `WEBSOCKET_PATH` with its access token (`access_token` query parameter — browsers cannot set
 * headers on a WebSocket — or an `Authorization: Bearer` header), sends `bind <id>` for a
 * websocket Subscription it may read and is answered `bound <id>`; every matching write then
 * sends it `ping <id>` (the client reads what changed through the REST API). Events come from
 * the change feed, so a connection to any node hears writes made through every node.
 */
export class WebSocketChannel {
  private readonly bound = new Map<string, Set<SocketConnection>>();
  private events: Promise<void> = Promise.resolve();

  constructor(private readonly deps: WebSocketDeps) {}

  route(): SocketRoute {
    return { url: WEBSOCKET_PATH, open: (connection, request) => this.open(connection, request) };
  }

  /** A heard event (hooks.ts EVENTS_CHANNEL); pings in the order heard. */
  hear(payload: string): void {
    const [id, ref, interaction] = payload.split(' ');
    if (!this.bound.get(id)?.size) return;
    this.events = this.events.then(() => this.ping(id, ref, interaction as WriteInteraction)).catch((err: unknown) => this.deps.log.error({ err }, 'websocket notification failed'));
  }

  /** Closes every connection (shutdown). */
  close(): void {
    for (const connections of this.bound.values()) for (const c of connections) c.close(1001, 'Server shutting down');
    this.bound.clear();
  }

  private open(connection: SocketConnection, request: { query: Record<string, string>; headers: Record<string, string | undefined> }): void {
    const token = request.query.access_token;
    const authorization = request.headers.authorization ?? (token ? `Bearer ${token}` : undefined);
    const auth = this.deps.authenticator.authenticate({ authorization }).catch(() => undefined);
    const mine = new Set<string>();
    let queue: Promise<void> = Promise.resolve();
    connection.onMessage((text) => {
      queue = queue.then(() => this.message(connection, text, auth, mine)).catch((err: unknown) => {
        this.deps.log.error({ err }, 'websocket bind failed');
        connection.send('error: internal error');
      });
    });
    connection.onClose(() => {
      for (const id of mine) this.bound.get(id)?.delete(connection);
    });
  }

  private async message(connection: SocketConnection, text: string, authorized: Promise<AuthInfo | undefined>, mine: Set<string>): Promise<void> {
    const m = /^bind\s+([A-Za-z0-9\-.]{1,64})$/.exec(text.trim());
    if (!m) return connection.send("error: expected 'bind <subscription id>'");
    const id = m[1];
    const auth = await authorized;
    if (!auth) {
      connection.send(`error ${id}: a valid access token is required (access_token query parameter or Authorization: Bearer header)`);
      return connection.close(1008, 'Unauthorized');
    }
    const subscription = await this.deps.repository(auth).tryRead<Subscription>('Subscription', id).catch(() => undefined);
    if (!subscription) return connection.send(`error ${id}: Subscription not found`);
    if (subscription.channel?.type !== 'websocket') return connection.send(`error ${id}: Subscription channel type is not websocket`);
    if (subscription.status !== 'active') return connection.send(`error ${id}: Subscription is not active (status ${subscription.status})`);
    if (!mine.has(id) && mine.size >= MAX_BINDS) return connection.send(`error ${id}: at most ${MAX_BINDS} subscriptions per connection`);
    mine.add(id);
    let connections = this.bound.get(id);
    if (!connections) this.bound.set(id, (connections = new Set()));
    connections.add(connection);
    connection.send(`bound ${id}`);
  }

  /** `ping <id>` to the connections bound to it, when its author may read the written version. */
  private async ping(id: string, ref: string, interaction: WriteInteraction): Promise<void> {
    const [resourceType, resourceId, version] = ref.split('/');
    const claims = claimsAuth((await subscriptionAuthor(this.deps.db, id)) ?? null);
    const author = claims && (await this.deps.authorize(claims));
    if (!author) return;
    const readable = await readForAuthor(this.deps.repository(author), { resourceType, resourceId, versionId: Number(version), interaction });
    if (!readable) return;
    for (const connection of this.bound.get(id) ?? []) connection.send(`ping ${id}`);
  }
}
