import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { FhirError } from '../fhir/outcome.js';
import { notify } from './change-feed.js';
import { databaseUnavailable, ListenUnsupported, NotListening, WAITS } from './database-errors.js';
import { endOfTurn } from './turn.js';

/** The answer of `caughtUp` when nothing is to wait for: one settled promise, not one per request. */
const CAUGHT_UP: Promise<void> = Promise.resolve();

/** Channel of the start-up check that notifications reach this session (see `probe`). */
const PROBE_CHANNEL = 'lattice_listen_probe';

/** Waits when no limit is configured (the command line runs without request limits). */
const DEFAULT_WAIT_MS = 5000;

/**
 * The LISTEN connection of a PostgreSQL node (docs/deployment.md, docs/rest.md#read-cache).
 *
 * When it is lost (the server restarted, the backend was terminated, a barrier got no answer)
 * every handler hears `-` at once — before any caller learns of the loss — and nothing cached
 * may be used until it is back; it is re-established every second until it works, and every
 * handler then hears `*` (notifications may have been missed). Every wait on it is bounded by
 * `waitMs` (`LATTICE_DB_ACQUIRE_TIMEOUT`): opening it, `LISTEN`, the barrier of `caughtUp`
 * (docs/errors.md#database-limits). Each (re)connection checks that a notification it sends
 * itself arrives: behind a transaction-mode pooler it does not, and the start fails with
 * {@link ListenUnsupported} instead of serving stale caches for ever.
 */
export class Listener {
  private client: pg.Client | undefined;
  /** Channels LISTENed on the current client. */
  private channels = new Set<string>();
  private connecting: Promise<pg.Client> | undefined;
  private closed = false;
  private lostSinceConnected = false;
  private retry: NodeJS.Timeout | undefined;
  private inflight: Promise<void> | undefined;
  /** When the barrier in flight was sent (performance.now()); +∞ until it is (see `barrier`). */
  private inflightSentAt = -Infinity;
  private queued: Promise<void> | undefined;
  /** When the latest completed barrier on the current connection was sent (performance.now()). */
  private caughtUpTo = -Infinity;
  private readonly waitMs: number;
  /** The last statement sent on the listening connection (`send`). */
  private serial: { client: pg.Client; tail: Promise<unknown> } | undefined;

  constructor(
    private readonly connectionString: string,
    private readonly handlers: Map<string, Array<(payload: string) => void>>,
    /** Bound on every wait (ms); 0 = the default of 5 s. */
    waitMs: number,
  ) {
    this.waitMs = waitMs > 0 ? waitMs : DEFAULT_WAIT_MS;
  }

  async listen(channel: string, handler: (payload: string) => void): Promise<void> {
    const list = this.handlers.get(channel) ?? [];
    list.push(handler);
    this.handlers.set(channel, list);
    const client = this.client ?? (await this.connectOnce());
    if (this.channels.has(channel)) return;
    await this.bounded(this.send(client, `LISTEN ${quote(channel)}`), client);
    this.channels.add(channel);
  }

  /**
   * A barrier on the listening connection: an empty statement sent after the call. PostgreSQL sends a
   * listening session its pending notifications before it answers a statement, and the client
   * emits them before the statement's result, so when it resolves every change committed
   * before the call has reached the handlers. Concurrent callers share one barrier: those of one
   * turn of the event loop share the one sent at its end; a caller arriving while one is in
   * flight waits for the next (sent after it) — unless the one in flight was sent after `since`
   * (the caller's request arrived before it went): it covers every change committed before that
   * request, so the caller waits for it.
   *
   * Rejects with {@link NotListening} when there is no connection (the caller reads the
   * database instead), and with a 503 when the server does not answer within `waitMs` (the
   * connection is then dropped: a frozen server must not hold requests).
   */
  caughtUp(since?: number): Promise<void> {
    if (since !== undefined && this.client) {
      if (this.caughtUpTo >= since) return CAUGHT_UP;
      if (this.inflight && this.inflightSentAt >= since) return this.waitAtMost(this.inflight);
    }
    return this.waitAtMost(this.shared());
  }

  /**
   * The barrier a caller waits for: the one in flight when none is queued behind it yet, else the
   * queued one. A queued barrier whose predecessor got no answer (a 503: the server is frozen)
   * is not sent: its callers get that 503 — they have waited for this server once already, and
   * must not wait again on the next connection or on a pooled one (issue 32: two waits).
   */
  private shared(): Promise<void> {
    if (this.queued) return this.queued;
    if (!this.inflight) return this.barrier();
    // Not sent yet: it goes after this call.
    if (this.inflightSentAt === Number.POSITIVE_INFINITY) return this.inflight;
    const queued = this.inflight
      .then(
        () => undefined,
        (err: unknown) => (err instanceof FhirError ? err : undefined),
      )
      .then((unanswered) => {
        this.queued = undefined;
        if (unanswered) throw unanswered;
        return this.barrier();
      });
    this.queued = queued;
    return queued;
  }

  /**
   * One wait per caller: however the shared barriers go, a caller is answered — resolved, or a
   * 503 naming this wait — within `waitMs` of its call (docs/errors.md#bounds-and-timeouts).
   */
  private waitAtMost(barrier: Promise<void>): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(databaseUnavailable(WAITS.listening(this.waitMs))), this.waitMs);
    });
    return Promise.race([barrier, timeout]).finally(() => clearTimeout(timer));
  }

  /**
   * A new barrier, sent at the end of this turn of the event loop: every caller of the turn (the
   * requests read from the sockets in one poll) shares it. Sent at once, it would be sent before
   * the turn's later requests arrived, and each of them would wait for one more — under load
   * that was one barrier per ~4 requests, each waking PostgreSQL's backend (docs/benchmarks.md).
   * Until it is sent it covers every caller (`inflightSentAt` is +∞); its reply is read in a
   * later poll either way.
   */
  private barrier(): Promise<void> {
    const client = this.client;
    if (!client) return Promise.reject(new NotListening());
    let sentAt = Number.POSITIVE_INFINITY;
    const p: Promise<void> = endOfTurn()
      .then(() => {
        if (this.client !== client) throw new NotListening();
        sentAt = performance.now();
        if (this.inflight === p) this.inflightSentAt = sentAt;
        // An empty statement: PostgreSQL sends a listening session its pending notifications
        // before it reads the next message and again before each ReadyForQuery, whatever the
        // statement was; `SELECT 1` made it parse, plan and run one (its CPU per barrier ~½).
        return this.bounded(this.send(client, ''), client);
      })
      .then(() => {
        if (this.client === client) this.caughtUpTo = Math.max(this.caughtUpTo, sentAt);
      });
    this.inflight = p;
    this.inflightSentAt = Number.POSITIVE_INFINITY;
    const done = () => {
      if (this.inflight === p) this.inflight = undefined;
    };
    p.then(done, done);
    return p;
  }

  /**
   * Sends `sql` on the listening connection after the statements sent before it have answered:
   * a pg client must not be given a query while one runs (the subscribers of a start LISTEN
   * while a barrier may be in flight). A new connection starts a new queue, so a statement lost
   * with a dropped connection never holds the next one.
   */
  private send(client: pg.Client, sql: string): Promise<unknown> {
    const tail = this.serial?.client === client ? this.serial.tail : Promise.resolve();
    const run = tail.then(() => client.query(sql));
    this.serial = { client, tail: run.catch(() => undefined) };
    return run;
  }

  /**
   * `work` on `client`, or a rejection after `waitMs`: a 503 when the server did not answer,
   * {@link NotListening} when the connection failed. Either way the connection is dropped
   * (handlers hear `-` before the caller sees the rejection).
   */
  private bounded<T>(work: Promise<T>, client: pg.Client): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(databaseUnavailable(WAITS.listening(this.waitMs))), this.waitMs);
    });
    return Promise.race([work, timeout]).then(
      (value) => {
        clearTimeout(timer);
        return value;
      },
      (err: unknown) => {
        clearTimeout(timer);
        this.lost(client);
        throw err instanceof FhirError ? err : new NotListening(err);
      },
    );
  }

  /** One connection attempt shared by concurrent callers. */
  private connectOnce(): Promise<pg.Client> {
    this.connecting ??= this.connect().finally(() => (this.connecting = undefined));
    return this.connecting;
  }

  private async connect(): Promise<pg.Client> {
    const client = new pg.Client({ connectionString: this.connectionString, connectionTimeoutMillis: this.waitMs, application_name: `lattice-listen:${process.pid}` });
    client.on('notification', (msg) => {
      if (this.client !== client) return;
      for (const h of this.handlers.get(msg.channel) ?? []) h(msg.payload ?? '');
    });
    client.on('error', () => this.lost(client));
    client.on('end', () => this.lost(client));
    try {
      await client.connect();
      const channels = [...this.handlers.keys()];
      for (const channel of channels) await withTimeout(client.query(`LISTEN ${quote(channel)}`), this.waitMs);
      await this.probe(client);
      this.client = client;
      this.channels = new Set(channels);
    } catch (err) {
      destroy(client);
      throw err instanceof ListenUnsupported || err instanceof FhirError ? err : new NotListening(err);
    }
    if (this.lostSinceConnected) {
      this.lostSinceConnected = false;
      for (const list of this.handlers.values()) for (const h of list) h('*');
    }
    return client;
  }

  /**
   * Sends this session a notification and waits for it. A session-mode connection (PostgreSQL
   * itself, or a pooler in session mode) delivers it before the NOTIFY's own answer; behind a
   * transaction-mode pooler the LISTEN belongs to whichever server connection ran it, and the
   * notification never arrives (docs/deployment.md#poolers).
   */
  private async probe(client: pg.Client): Promise<void> {
    const token = randomBytes(8).toString('hex');
    let heard!: () => void;
    const arrived = new Promise<void>((resolve) => (heard = resolve));
    const onNotification = (msg: pg.Notification) => {
      if (msg.channel === PROBE_CHANNEL && msg.payload === token) heard();
    };
    client.on('notification', onNotification);
    try {
      await withTimeout(client.query(`LISTEN ${PROBE_CHANNEL}`), this.waitMs);
      await withTimeout(notify(client, PROBE_CHANNEL, token), this.waitMs);
      const ok = await withTimeout(arrived.then(() => true), this.waitMs).catch(() => false);
      if (!ok) throw new ListenUnsupported(this.waitMs);
      await withTimeout(client.query(`UNLISTEN ${PROBE_CHANNEL}`), this.waitMs);
    } finally {
      client.removeListener('notification', onNotification);
    }
  }

  private lost(client: pg.Client): void {
    if (this.client !== client) return;
    this.client = undefined;
    this.channels = new Set();
    this.caughtUpTo = -Infinity;
    this.lostSinceConnected = true;
    destroy(client);
    // Nothing is heard until the connection is back: caches must not be trusted meanwhile.
    for (const list of this.handlers.values()) for (const h of list) h('-');
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    if (this.closed || this.retry) return;
    this.retry = setTimeout(() => {
      this.retry = undefined;
      if (this.closed || this.client) return;
      this.connectOnce().catch(() => this.scheduleReconnect());
    }, 1000);
    this.retry.unref();
  }

  close(): void {
    this.closed = true;
    if (this.retry) clearTimeout(this.retry);
    const client = this.client;
    this.client = undefined;
    if (client) destroy(client);
  }
}

/** Ends a client without waiting for the server (a frozen one never answers). */
function destroy(client: pg.Client): void {
  (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
  void client.end().catch(() => undefined);
}

function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(databaseUnavailable(WAITS.listening(ms))), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

function quote(channel: string): string {
  return `"${channel.replace(/"/g, '')}"`;
}
