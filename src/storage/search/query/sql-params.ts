import { BindValues } from '../../bind-values.js';
import type { Interaction, Scope } from '../../../core/scope.js';
import { resourceTable } from '../../scope.js';

/**
 * The stored codings each terminology criterion matches, keyed by `termKey` (terminology.ts):
 * filled before the SQL is built (the engine is asynchronous, the builder is not), read by
 * conditions.ts.
 */
export type TermMatches = Map<string, Array<[system: string, code: string]>>;

/**
 * A criterion that is one EXISTS over one index table (conditions.ts `criterionSql`): its table,
 * the alias of the index row, and the row's conditions besides the owner's id — what a bounded
 * COUNT needs to read the matches from the table's index (bounded-count.ts).
 */
export interface IndexedCriterion {
  table: string;
  alias: string;
  /** `<alias>.resource_type = $a AND <alias>.param = $b[ AND (<match>)]`. */
  rows: string;
  /**
   * The matching rows are one key of the table's lookup index (a token's code, a reference's
   * target id), which orders them by `last_updated, id` (migration 625): a page in the default
   * order can be read from them in order (run-search.ts).
   */
  ordered?: boolean;
}

/** Builds the SQL of the caller's access rights for a row (access.ts), given to SqlParams by its creator. */
export type AccessSqlBuilder = (p: SqlParams, scope: Scope, alias: string, interaction: Interaction, type?: string) => string | undefined;

/**
 * The bind values (storage/bind-values.ts) of a search query, plus unique table aliases, so
 * nested EXISTS subqueries (chains) never collide.
 */
export class SqlParams extends BindValues {
  private aliases = 0;
  private accessOff = 0;
  /** The stored codings of the search's terminology criteria (terminology.ts), when it has any. */
  terms?: TermMatches;
  /** The criteria built as one EXISTS over an index table, by the SQL of that EXISTS. */
  readonly indexed = new Map<string, IndexedCriterion>();

  constructor(
    private readonly scope: Scope,
    /** The access rights' SQL (access.ts); without it, tenancy only. */
    private readonly access?: AccessSqlBuilder,
  ) {
    super();
  }

  /** A fresh alias with the given prefix, e.g. `s3`. */
  alias(prefix: string): string {
    this.aliases += 1;
    return `${prefix}${this.aliases}`;
  }

  /**
   * The caller's scope condition for the `resource` row under `alias` (storage/scope.ts), with
   * its access rights for `interaction` (docs/auth.md#scopes) — read unless said otherwise; `type`
   * when the row's type is known.
   */
  visibility(alias: string, interaction: Interaction = 'r', type?: string): string {
    const vis = this.scope.predicate(resourceTable(alias), this.values.length + 1);
    this.values.push(...vis.params);
    const access = this.accessOff === 0 ? this.access?.(this, this.scope, alias, interaction, type) : undefined;
    return access === undefined ? vis.sql : `${vis.sql} AND ${access}`;
  }

  /**
   * Runs `build` with access rights off: an access criterion's own chains see rows by tenancy
   * only, so a policy's criteria never recurse into themselves.
   */
  withoutAccess<T>(build: () => T): T {
    this.accessOff++;
    try {
      return build();
    } finally {
      this.accessOff--;
    }
  }
}
