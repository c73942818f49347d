import { withoutNul } from '../normalize.js';
import type { Scope } from '../../../core/scope.js';
import { resourceTable } from '../../scope.js';

/**
 * Collects bind values while a query is assembled and hands out `$n` placeholders and
 * unique table aliases, so nested EXISTS subqueries (chains) never collide.
 */
export class SqlParams {
  readonly values: unknown[] = [];
  private aliases = 0;

  constructor(private readonly scope: Scope) {}

  /** Adds a bind value (NUL characters dropped: PostgreSQL text refuses them); returns its placeholder. */
  add(value: unknown): string {
    this.values.push(Array.isArray(value) ? value.map(clean) : clean(value));
    return `$${this.values.length}`;
  }

  /** A fresh alias with the given prefix, e.g. `s3`. */
  alias(prefix: string): string {
    this.aliases += 1;
    return `${prefix}${this.aliases}`;
  }

  /** The caller's scope condition for the `resource` row under `alias` (storage/scope.ts). */
  visibility(alias: string): string {
    const vis = this.scope.predicate(resourceTable(alias), this.values.length + 1);
    this.values.push(...vis.params);
    return vis.sql;
  }
}

function clean(value: unknown): unknown {
  return typeof value === 'string' ? withoutNul(value) : value;
}
