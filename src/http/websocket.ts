import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { WebSocketServer, type WebSocket } from 'ws';
import type { SocketConnection, SocketRoute } from '../core/socket-route.js';

/** Largest message a client may send (a `bind <id>` is a few dozen bytes). */
const MAX_MESSAGE = 16 * 1024;

/**
 * Serves the features' WebSocket routes (core/socket-route.ts) on the HTTP server's port with
 * `ws`: an upgrade to a declared path is accepted, any other is answered 404 and closed. Open
 * connections are closed when the server closes.
 */
export function attachSocketRoutes(app: FastifyInstance, routes: readonly SocketRoute[]): void {
  if (routes.length === 0) return;
  const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_MESSAGE });
  const byPath = new Map(routes.map((r) => [r.url, r]));
  app.server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const route = byPath.get(url.pathname);
    if (!route) {
      socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      route.open(connectionOf(ws), { query: Object.fromEntries(url.searchParams), headers: req.headers as Record<string, string | undefined> });
    });
  });
  app.addHook('onClose', async () => {
    for (const client of wss.clients) client.terminate();
    await new Promise<void>((resolve) => wss.close(() => resolve()));
  });
}

function connectionOf(ws: WebSocket): SocketConnection {
  return {
    send: (text) => {
      if (ws.readyState === ws.OPEN) ws.send(text);
    },
    close: (code, reason) => ws.close(code, reason),
    onMessage: (handler) => ws.on('message', (data, isBinary) => handler(isBinary ? '' : (Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer)).toString('utf8'))),
    onClose: (handler) => ws.on('close', handler),
  };
}
