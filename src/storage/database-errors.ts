import { FhirError, issue } from '../fhir/outcome.js';

/**
 * The answers for a database that cannot serve a request (docs/errors.md#database-limits):
 * always 503 with an OperationOutcome and `Retry-After`, never a 500 and never a hang.
 */
const RETRY = { 'Retry-After': '1' };

/** No connection (PostgreSQL pool) or turn (PGlite) became free in time. */
export const databaseBusy = (): FhirError => new FhirError(503, [issue('transient', 'The database is busy; try again later')], RETRY);

/** The database server does not answer (stopped, frozen, unreachable). */
export const databaseUnavailable = (): FhirError =>
  new FhirError(503, [issue('transient', 'The database is unavailable; try again later')], RETRY);

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
export function pgFailure(err: unknown, statementTimeoutMs: number): FhirError | undefined {
  if (err instanceof FhirError) return err;
  const e = err as { code?: unknown; message?: unknown };
  const code = typeof e?.code === 'string' ? e.code : '';
  const message = typeof e?.message === 'string' ? e.message : '';
  if (code === '57014') return databaseTimeout(statementTimeoutMs); // statement_timeout
  if (code === '25P03') return databaseTimeout(statementTimeoutMs); // idle_in_transaction_session_timeout
  if (/^timeout exceeded when trying to connect/.test(message)) return databaseBusy();
  if (UNAVAILABLE_STATES.test(code) || ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENOTFOUND'].includes(code)) {
    return databaseUnavailable();
  }
  if (/Query read timeout|Connection terminated|connection timeout|Client has encountered a connection error|not queryable/i.test(message)) {
    return databaseUnavailable();
  }
  return undefined;
}
