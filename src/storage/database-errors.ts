import { FhirError, issue } from '../fhir/outcome.js';

/**
 * The answers for a database that cannot serve a request (docs/errors.md#database-limits):
 * always 503 with an OperationOutcome and `Retry-After`, never a 500 and never a hang.
 */
const RETRY = { 'Retry-After': '1' };

/**
 * `wait`, when known, names the one wait that ran out and its bound (the issue's `diagnostics`),
 * e.g. `no pooled connection within 10000 ms (LATTICE_DB_ACQUIRE_TIMEOUT)`: a request waits once
 * (docs/errors.md#bounds-and-timeouts), and its answer says for what.
 */
const transient = (text: string, wait: string | undefined): FhirError =>
  new FhirError(503, [{ ...issue('transient', text), ...(wait !== undefined ? { diagnostics: wait } : {}) }], RETRY);

/** No connection (PostgreSQL pool) or turn (PGlite) became free in time. */
export const databaseBusy = (wait?: string): FhirError => transient('The database is busy; try again later', wait);

/** The database server does not answer (stopped, frozen, unreachable). */
export const databaseUnavailable = (wait?: string): FhirError => transient('The database is unavailable; try again later', wait);

/** The waits of docs/errors.md#bounds-and-timeouts, as `diagnostics` of a 503 name them. */
export const WAITS = {
  listening: (ms: number) => `no answer on the listening connection within ${ms} ms (LATTICE_DB_ACQUIRE_TIMEOUT)`,
  pool: (ms: number) => `no pooled connection within ${ms} ms (LATTICE_DB_ACQUIRE_TIMEOUT)`,
  statement: (ms: number) => `no answer to a statement within ${ms} ms (LATTICE_DB_STATEMENT_TIMEOUT + 2 s)`,
};

/** The request held the database longer than `LATTICE_DB_STATEMENT_TIMEOUT` allows; its work was rolled back. */
export const databaseTimeout = (ms: number): FhirError =>
  new FhirError(503, [issue('timeout', `The request exceeded the database time limit (${ms} ms) and was cancelled`)], RETRY);

/**
 * PostgreSQL: the node has no listening connection now (lost, reconnecting), so a cached entry
 * cannot be trusted: the caller reads the database instead (docs/rest.md#read-cache).
 */
export class NotListening extends Error {
  constructor(cause?: unknown) {
    super('not listening for changes', cause === undefined ? undefined : { cause });
  }
}

/**
 * The connection does not deliver this session's own notifications: a transaction-mode pooler
 * (docs/deployment.md#poolers). The server refuses to start, with this message.
 */
export class ListenUnsupported extends Error {
  constructor(waitMs: number) {
    super(
      `LISTEN/NOTIFY does not work through DATABASE_URL: a notification this connection sent to itself did not arrive within ${waitMs} ms. ` +
        'Lattice keeps its caches current on every node with LISTEN, which needs a session-mode connection: a transaction-mode pooler ' +
        '(e.g. PgBouncer with pool_mode=transaction) breaks it. Point DATABASE_URL at PostgreSQL itself or at a session-mode pool (see docs/deployment.md#poolers).',
    );
  }
}

/** SQLSTATE classes/codes meaning "the server cannot serve this now", not "the query is wrong". */
const UNAVAILABLE_STATES = /^(08|57P0[1-4]|53300)/;

/**
 * The FhirError for a `pg` failure that is the database's state rather than the query's
 * fault, or undefined (then the original error stands: a constraint violation, a bug).
 */
export function pgFailure(err: unknown, statementTimeoutMs: number, acquireTimeoutMs?: number): FhirError | undefined {
  if (err instanceof FhirError) return err;
  const e = err as { code?: unknown; message?: unknown };
  const code = typeof e?.code === 'string' ? e.code : '';
  const message = typeof e?.message === 'string' ? e.message : '';
  if (code === '57014') return databaseTimeout(statementTimeoutMs); // statement_timeout
  if (code === '25P03') return databaseTimeout(statementTimeoutMs); // idle_in_transaction_session_timeout
  if (/^timeout exceeded when trying to connect/.test(message)) return databaseBusy(acquireTimeoutMs ? WAITS.pool(acquireTimeoutMs) : undefined);
  if (/Query read timeout/i.test(message) && statementTimeoutMs > 0) return databaseUnavailable(WAITS.statement(statementTimeoutMs + 2000));
  if (UNAVAILABLE_STATES.test(code) || ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENOTFOUND'].includes(code)) {
    return databaseUnavailable();
  }
  if (/Query read timeout|Connection terminated|connection timeout|Client has encountered a connection error|not queryable/i.test(message)) {
    return databaseUnavailable();
  }
  return undefined;
}
