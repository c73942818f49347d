import { BindValues } from '../../bind-values.js';
import type { Scope } from '../../../core/scope.js';
import { resourceTable } from '../../scope.js';

/**
 * The bind values (storage/bind-values.ts) of a search query, plus unique table aliases, so
 * nested EXISTS subqueries (chains) never collide.
 */
export class SqlParams extends BindValues {
  private aliases = 0;

  constructor(private readonly scope: Scope) {
    super();
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
