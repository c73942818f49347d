import { withoutNul } from './search/normalize.js';

/**
 * Collects bind values while a statement is assembled and hands out their `$n` placeholders:
 * the one way SQL with a variable number of parameters is built (the search query builder and
 * the terminology SQL twin extend or use it). NUL characters are dropped from text values:
 * PostgreSQL text refuses them.
 */
export class BindValues {
  readonly values: unknown[] = [];

  /** Adds a bind value; returns its placeholder. */
  add(value: unknown): string {
    this.values.push(Array.isArray(value) ? value.map(clean) : clean(value));
    return `$${this.values.length}`;
  }
}

function clean(value: unknown): unknown {
  return typeof value === 'string' ? withoutNul(value) : value;
}
