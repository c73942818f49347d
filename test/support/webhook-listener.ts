import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One POST the listener received. */
export interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/**
 * A real HTTP endpoint on loopback for rest-hook Subscriptions: records what it is sent and
 * answers 200, or `failWith` for the next `failures` requests (an endpoint that is down).
 */
export class WebhookListener {
  readonly received: Received[] = [];
  /** Requests answered with an error so far. */
  refused = 0;
  private failures = 0;
  private failStatus = 503;
  private waiters: Array<{ count: number; resolve: () => void }> = [];
  private server: Server | undefined;
  url = '';

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (c: string) => (body += c));
      req.on('end', () => {
        if (this.failures > 0) {
          this.failures--;
          this.refused++;
          res.writeHead(this.failStatus).end('down');
          return;
        }
        this.received.push({ path: req.url ?? '/', headers: req.headers, body });
        res.writeHead(200).end();
        this.waiters = this.waiters.filter((w) => (this.received.length >= w.count ? (w.resolve(), false) : true));
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  /** The next `n` requests are answered `status`. */
  failNext(n: number, status = 503): void {
    this.failures = n;
    this.failStatus = status;
  }

  /** Resolves once `count` requests in all were accepted. */
  waitFor(count: number): Promise<void> {
    if (this.received.length >= count) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ count, resolve }));
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()));
  }
}
