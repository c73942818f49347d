/**
 * The rows one resource contributes to the `search_*` tables, grouped by table.
 * Column names follow the tables (see migrations 001 and 002).
 */
export interface IndexRows {
  string: Array<{ param: string; value: string; raw: string; sort_key: boolean }>;
  token: Array<{ param: string; system: string | null; code: string | null; code_lower: string | null; text_value: string | null }>;
  reference: Array<{ param: string; target_type: string | null; target_id: string | null; reference: string }>;
  date: Array<{ param: string; low: string | null; high: string | null }>;
  number: Array<{ param: string; value: string }>;
  quantity: Array<{ param: string; value: string; system: string | null; code: string | null; unit: string | null; canonical: boolean }>;
  uri: Array<{ param: string; value: string }>;
  /** `_text`/`_content` (docs/rest.md#text-search): the text, turned into a tsvector when written. */
  text: Array<{ param: string; body: string }>;
}

/** Column lists and PostgreSQL array types used to insert each table with one `unnest`. */
export const TABLE_COLUMNS: { [K in keyof IndexRows]: Array<[column: keyof IndexRows[K][number], type: string]> } = {
  string: [['param', 'text'], ['value', 'text'], ['raw', 'text'], ['sort_key', 'boolean']],
  token: [['param', 'text'], ['system', 'text'], ['code', 'text'], ['code_lower', 'text'], ['text_value', 'text']],
  reference: [['param', 'text'], ['target_type', 'text'], ['target_id', 'text'], ['reference', 'text']],
  date: [['param', 'text'], ['low', 'timestamptz'], ['high', 'timestamptz']],
  number: [['param', 'text'], ['value', 'numeric']],
  quantity: [['param', 'text'], ['value', 'numeric'], ['system', 'text'], ['code', 'text'], ['unit', 'text'], ['canonical', 'boolean']],
  uri: [['param', 'text'], ['value', 'text']],
  text: [['param', 'text'], ['body', 'text']],
};

/**
 * Tables whose rows also carry their resource's `last_updated` (migration 625), in their lookup
 * index after the value: a search driven by one token or reference value reads its page in the
 * default order straight from that index, stopping when the page is full
 * (docs/rest.md#query-plans). Every version rewrites its rows, so the copy never goes stale.
 */
export const STAMPED_TABLES: ReadonlySet<keyof IndexRows> = new Set(['token', 'reference']);

/** Every index table, in the order rows are written and removed. */
export const INDEX_TABLES = Object.keys(TABLE_COLUMNS) as Array<keyof IndexRows>;

/** An empty set of rows. */
export function emptyRows(): IndexRows {
  return { string: [], token: [], reference: [], date: [], number: [], quantity: [], uri: [], text: [] };
}
