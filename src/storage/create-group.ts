import type { Database, Queryable } from '../core/database.js';

/**
 * Group commit of plain creates (docs/rest.md#cost-of-a-request): while one statement of
 * creates is on its way, the creates of other requests that arrive wait, and go together in
 * the next one — one statement (and one commit) for all of them instead of one each. Nothing
 * waits when nothing is in flight: a create alone is written at once.
 *
 * Each request stays on its own: it has done its checks (access, validation, references) and
 * built its index rows before it joins, it is answered only once the statement that wrote it
 * has committed, and when a group's statement fails, each of its creates is written again on
 * its own — the one at fault fails alone and the others are stored. A failure that is the
 * database's state (a 503: busy, unavailable, past the time limit) fails the group as it would
 * have failed each of them.
 */
export class CreateGroup<T> {
  private readonly waiting: Array<Waiting<T>> = [];
  private inFlight = 0;

  /**
   * `write` stores items in ONE statement on the database given (no transaction: the statement
   * commits itself); `limit` is how many statements may be in flight at once (1 on PGlite, whose
   * statements take turns anyway; several on PostgreSQL's pool).
   */
  constructor(
    private readonly db: Queryable,
    private readonly write: (db: Queryable, items: T[]) => Promise<void>,
    private readonly limit: number,
    private readonly maxItems = MAX_GROUP,
  ) {}

  /** Resolves once `item` is committed; rejects with what refused it. */
  add(item: T): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.waiting.push({ item, resolve, reject });
      this.next();
    });
  }

  /** Creates waiting for a statement in flight (tests). */
  get queued(): number {
    return this.waiting.length;
  }

  private next(): void {
    while (this.inFlight < this.limit && this.waiting.length > 0) {
      const group = this.waiting.splice(0, this.maxItems);
      this.inFlight++;
      void this.commit(group).finally(() => {
        this.inFlight--;
        this.next();
      });
    }
  }

  private async commit(group: Array<Waiting<T>>): Promise<void> {
    try {
      await this.write(this.db, group.map((w) => w.item));
      for (const w of group) w.resolve();
      return;
    } catch (err) {
      if (group.length === 1 || status(err) === 503) {
        for (const w of group) w.reject(err);
        return;
      }
    }
    // One of them may be at fault: each alone, so only that one fails.
    for (const w of group) {
      try {
        await this.write(this.db, [w.item]);
        w.resolve();
      } catch (err) {
        w.reject(err);
      }
    }
  }
}

interface Waiting<T> {
  item: T;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/** Creates per group statement at most (its parameters grow with it). */
export const MAX_GROUP = 200;

function status(err: unknown): number | undefined {
  return typeof err === 'object' && err !== null && 'status' in err ? (err as { status?: number }).status : undefined;
}

/** Statements in flight at once per driver: PGlite's take turns; PostgreSQL's pool serves several. */
export function groupLimit(db: Database): number {
  return db.driver === 'pglite' ? 1 : 4;
}
