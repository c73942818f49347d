import type { SearchResult } from '../../core/repository.js';

/** NOTIFY channel of every change to a table a search reads (migration 600_search_changed.sql). */
export const SEARCH_CHANNEL = 'lattice_search';

/**
 * A search's answer as kept: the result without its resources, and the resources as the JSON
 * text of one array — the matches' rows as read, then the included resources. Text, not
 * objects: every request parses its own copy, so nothing a caller changes reaches the next
 * (core/reusable-answer.ts), and the garbage collector has no object graph to walk.
 */
export interface KeptAnswer extends Omit<SearchResult, 'resources' | 'modes'> {
  json: string;
  modes?: ReadonlyArray<'match' | 'include'>;
}

/** What a kept answer and its key are counted as, beyond their characters (the Map entry, the object). */
const ENTRY_OVERHEAD = 200;

/**
 * The search answer cache (docs/rest.md#search-answer-cache): answers of searches asked again
 * while nothing they could see has changed. Keyed by everything that decides the answer
 * (cached-search.ts); valid by one generation for the whole database.
 *
 * Every statement that changes `resource` or a `search_*` index table — whichever code, process
 * or node sends it — announces it on {@link SEARCH_CHANNEL} through a trigger, delivered at
 * commit; hearing it drops every kept answer and moves the generation. An answer is kept only
 * if nothing was heard while it was read (`set` with the generation taken before). Nothing is
 * kept until the subscription is established, nor while the listening connection is lost
 * (`listening(false)`), and everything is dropped when it is back (changes may have been missed).
 *
 * PGlite delivers a commit's notification to this thread before the commit's own answer, so
 * the writer's next request already finds the answers dropped. On PostgreSQL (`shared`) it
 * arrives asynchronously: a kept answer is used only after `Database.caughtUp()` (the read
 * cache's barrier, row-cache.ts), so a request never gets an answer older than a commit that
 * finished before it arrived.
 *
 * Bounded by entries and by characters (keys and JSON text); least recently used dropped first.
 * One answer larger than an eighth of the budget is not kept.
 */
export class SearchCache {
  private readonly answers = new Map<string, KeptAnswer>();
  private gen = 0;
  private enabled = false;
  private used = 0;

  constructor(
    /** Other processes write the same database (PostgreSQL): a kept answer waits for `caughtUp`. */
    readonly shared: boolean,
    /** Characters of keys and JSON text kept at most. */
    readonly maxChars: number,
    readonly maxEntries = 10_000,
  ) {}

  /** Changes are heard (true) or not (false, nothing is kept); either way everything is dropped. */
  listening(on: boolean): void {
    this.enabled = on;
    this.clear();
  }

  /** The generation to pass to `set` after reading. */
  generation(): number {
    return this.gen;
  }

  /** Kept answers and the characters they hold (tests, docs). */
  get size(): { entries: number; chars: number } {
    return { entries: this.answers.size, chars: this.used };
  }

  get(key: string): KeptAnswer | undefined {
    if (!this.enabled) return undefined;
    const answer = this.answers.get(key);
    if (answer !== undefined) {
      // Most recently used last (a Map keeps insertion order).
      this.answers.delete(key);
      this.answers.set(key, answer);
    }
    return answer;
  }

  /** Keeps an answer read from generation `readAt` on, unless a change was heard since. */
  set(key: string, answer: KeptAnswer, readAt: number): void {
    if (readAt !== this.gen || !this.enabled) return;
    const chars = charsOf(key, answer);
    if (chars > this.maxChars / 8) return;
    this.drop(key);
    while (this.answers.size > 0 && (this.answers.size >= this.maxEntries || this.used + chars > this.maxChars)) {
      this.drop(this.answers.keys().next().value as string);
    }
    this.answers.set(key, answer);
    this.used += chars;
  }

  /** A change was heard (or may have been missed): nothing kept is valid any more. */
  clear(): void {
    this.gen++;
    this.answers.clear();
    this.used = 0;
  }

  private drop(key: string): void {
    const answer = this.answers.get(key);
    if (answer === undefined) return;
    this.answers.delete(key);
    this.used -= charsOf(key, answer);
  }
}

function charsOf(key: string, answer: KeptAnswer): number {
  return key.length + answer.json.length + (answer.cursor?.length ?? 0) + ENTRY_OVERHEAD;
}
