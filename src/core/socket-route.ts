/**
 * A WebSocket endpoint declared by a feature as data (the Subscription `websocket` channel);
 * `src/http/` accepts the upgrade and hands the feature a plain connection, so features never
 * see the WebSocket library or HTTP objects.
 */
export interface SocketRoute {
  /** Path, e.g. `/ws/subscriptions-r4`. */
  url: string;
  /** A connection was opened on `url`: `query` and lower-case `headers` are the upgrade request's. */
  open(connection: SocketConnection, request: { query: Record<string, string>; headers: Record<string, string | undefined> }): void;
}

/** One open WebSocket connection (text messages only). */
export interface SocketConnection {
  send(text: string): void;
  close(code?: number, reason?: string): void;
  onMessage(handler: (text: string) => void): void;
  onClose(handler: () => void): void;
}
