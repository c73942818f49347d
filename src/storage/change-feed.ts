import { EventEmitter } from 'node:events';
import type { Database, Queryable } from '../core/database.js';
import { FhirError } from '../fhir/outcome.js';

/**
 * Cache invalidation across API nodes (docs/terminology.md#in-memory-index, docs/auth.md#revocation):
 * a write announces what it changed inside its transaction; PostgreSQL delivers the NOTIFY to
 * every listening node at commit (a rolled-back write announces nothing), and this process
 * hears it at once through a local emitter as well — the NOTIFY reaches the writing node too,
 * but asynchronously, and the writer's next request must already see its change.
 *
 * A cache built on this drops entries when it hears a change, and does not keep what it read
 * while a change was announced (a generation check), so a stale answer never sticks.
 */
const local = new EventEmitter().setMaxListeners(0);

/**
 * The one statement that notifies: `payload` on `channel`, through `q` (inside a transaction:
 * delivered at commit). Also the listening connection's start-up probe (storage/pg-listener.ts).
 */
export async function notify(q: Pick<Queryable, 'query'>, channel: string, payload: string): Promise<void> {
  await q.query('SELECT pg_notify($1, $2)', [channel, payload]);
}

/** Inside a write transaction: every node hears `payload` on `channel` at commit, this process at once. */
export async function announceChange(tx: Queryable, channel: string, payload: string): Promise<void> {
  await notify(tx, channel, payload);
  local.emit(channel, payload);
}

/**
 * `announceChange` folded into a larger write statement (one round trip per write,
 * docs/rest.md#cost-of-a-request): `sql` is the expression that notifies (its values are
 * appended to `params`), to be selected by the statement; call `emit` once it has run (this
 * process hears the change at once, as with `announceChange`).
 */
export function changeAnnouncement(params: unknown[], channel: string, payload: string): { sql: string; emit(): void } {
  params.push(channel, payload);
  return { sql: `pg_notify($${params.length - 1}, $${params.length})`, emit: () => local.emit(channel, payload) };
}

/** `changeAnnouncement` of several payloads in one expression (a statement that writes many rows). */
export function changeAnnouncements(params: unknown[], channel: string, payloads: string[]): { sql: string; emit(): void } {
  params.push(channel, payloads);
  return {
    sql: `(SELECT count(pg_notify($${params.length - 1}, p)) FROM unnest($${params.length}::text[]) AS p)`,
    emit: () => payloads.forEach((payload) => local.emit(channel, payload)),
  };
}

/**
 * Inside a write transaction: every node, this one included, hears `payload` on `channel` at
 * commit, and only then — for wake-ups that must find the committed rows (the e-mail outbox),
 * where hearing it before the commit would be work for nothing.
 */
export async function announceCommit(tx: Queryable, channel: string, payload: string): Promise<void> {
  await notify(tx, channel, payload);
}

/**
 * Calls `handler` for every change announced on `channel` (this process's at once, other
 * nodes' at their commit). Resolves when the database listens; returns the unsubscribe.
 */
export async function subscribeChanges(db: Database, channel: string, handler: (payload: string) => void): Promise<() => void> {
  local.on(channel, handler);
  try {
    await db.listen(channel, handler);
  } catch (err) {
    local.off(channel, handler);
    throw err;
  }
  return () => local.off(channel, handler);
}

/**
 * Whether `barrier` (a `Database.caughtUp`) found every change committed before the request
 * heard: true when it did; false when changes are not heard at all (no listening connection —
 * nothing kept may be used, the caller reads the database); a 503 (the server did not answer
 * within the waiting limit) is thrown for the caller to answer.
 */
export async function heard(barrier: Promise<void>): Promise<boolean> {
  try {
    await barrier;
    return true;
  } catch (err) {
    if (err instanceof FhirError) throw err;
    return false;
  }
}
