import type { CodeSystemInfo, Concept, Designation, StoredProperty, TermContext } from '../../types.js';
import { regexError, textFilterMatcher } from '../filters.js';
import { supplementCanonical, supplementsOf, type CodeSystemProvider, type ConceptSelection } from '../provider.js';
import { BindValues } from '../../../storage/bind-values.js';
import { includeConditions, textCondition } from './sql-filters.js';
import { designationOf } from './code-system-index.js';
import type { Queryable } from '../../../core/database.js';

/**
 * The code systems stored as FHIR resources, answered straight from the database index
 * (docs/terminology.md#code-system-providers): the SQL twin of index-provider.ts, with the same
 * ids and the same answers. It answers the point reads of a stored system whose in-memory index
 * is still loading, and the equivalence test compares the two. Every query is an index probe on
 * `cs_key`.
 */

interface ConceptRow {
  id: number;
  code: string;
  display: string | null;
  definition: string | null;
  inactive: boolean;
  abstract: boolean;
  status: string | null;
}

const CONCEPT_COLUMNS = 'c.id, c.code, c.display, c.definition, c.inactive, c.abstract, c.status';

/** Maps a `tx_concept` row (selected with CONCEPT_COLUMNS). */
function toConcept(r: ConceptRow): Concept {
  return {
    id: r.id,
    code: r.code,
    display: r.display ?? undefined,
    definition: r.definition ?? undefined,
    inactive: r.inactive,
    abstract: r.abstract,
    status: r.status ?? undefined,
  };
}

export class SqlProvider implements CodeSystemProvider {
  constructor(
    protected readonly tc: TermContext,
    readonly cs: CodeSystemInfo,
  ) {}

  /** One query for any number of codes, a second for the case-insensitive misses. */
  async findConcepts(codes: string[]): Promise<Map<string, Concept>> {
    const { tc, cs } = this;
    const found = new Map<string, Concept>();
    const unique = [...new Set(codes)];
    if (unique.length === 0) return found;
    const exact = await tc.db.query<ConceptRow>(`SELECT ${CONCEPT_COLUMNS} FROM tx_concept c WHERE c.cs_key = $1 AND c.code = ANY($2::text[])`, [
      cs.key,
      unique,
    ]);
    for (const r of exact.rows) found.set(r.code, toConcept(r));
    if (!cs.caseSensitive) {
      const missing = unique.filter((c) => !found.has(c));
      if (missing.length > 0) {
        // A code in lower case already is its own case fold (found through tx_concept_code); only
        // the others are in the (partial) code_lower index (migration 400).
        const lower = await tc.db.query<ConceptRow & { code_lower: string }>(
          `SELECT ${CONCEPT_COLUMNS}, c.code_lower FROM tx_concept c
           WHERE c.cs_key = $1 AND (c.code = ANY($2::text[]) OR (c.code_lower = ANY($2::text[]) AND c.code_lower <> c.code)) ORDER BY c.id`,
          [cs.key, missing.map((c) => c.toLowerCase())],
        );
        const byLower = new Map<string, Concept>();
        for (const r of lower.rows) if (!byLower.has(r.code_lower)) byLower.set(r.code_lower, toConcept(r));
        for (const code of missing) {
          const c = byLower.get(code.toLowerCase());
          if (c) found.set(code, c);
        }
      }
    }
    return found;
  }

  async conceptsByIds(ids: number[]): Promise<Concept[]> {
    const { tc, cs } = this;
    if (ids.length === 0) return [];
    const res = await tc.db.query<ConceptRow>(
      `SELECT ${CONCEPT_COLUMNS} FROM tx_concept c WHERE c.cs_key = $1 AND c.id = ANY($2::int[]) ORDER BY c.id`,
      [cs.key, ids],
    );
    return res.rows.map(toConcept);
  }

  /** Designations of the concepts and of their namesakes in the requested supplements, in one query. */
  async designations(ids: number[]): Promise<Map<number, Designation[]>> {
    const { tc, cs } = this;
    const out = new Map<number, Designation[]>();
    if (ids.length === 0) return out;
    const sups = supplementsOf(tc, cs).map((x) => x.key);
    const res = await tc.db.query<{
      concept: number;
      language: string | null;
      use_system: string | null;
      use_code: string | null;
      use_display: string | null;
      value: string;
      extension: string | null;
      source: number | null;
    }>(
      `SELECT d.concept, d.language, d.use_system, d.use_code, d.use_display, d.value, d.extension, NULL::int AS source FROM tx_designation d WHERE d.cs_key = $1 AND d.concept = ANY($2::int[])
       UNION ALL
       SELECT c.id, d.language, d.use_system, d.use_code, d.use_display, d.value, d.extension, d.cs_key
       FROM tx_concept c JOIN tx_concept s ON s.cs_key = ANY($3::int[]) AND s.code = c.code
       JOIN tx_designation d ON d.cs_key = s.cs_key AND d.concept = s.id
       WHERE c.cs_key = $1 AND c.id = ANY($2::int[])`,
      [cs.key, ids, sups],
    );
    for (const r of res.rows) {
      const use =
        r.use_system || r.use_code
          ? { ...(r.use_system ? { system: r.use_system } : {}), ...(r.use_code ? { code: r.use_code } : {}), ...(r.use_display ? { display: r.use_display } : {}) }
          : undefined;
      const list = out.get(r.concept) ?? [];
      const supplement = r.source === null ? undefined : tc.supplements.find((x) => x.key === r.source);
      list.push({ language: r.language ?? undefined, use, value: r.value, ...(r.extension ? { extension: JSON.parse(r.extension) as Designation['extension'] } : {}), ...(supplement ? { source: supplementCanonical(supplement) } : {}) });
      out.set(r.concept, list);
    }
    return out;
  }

  async properties(id: number): Promise<StoredProperty[]> {
    const { tc, cs } = this;
    const res = await tc.db.query<{ code: string; type: string; value: string; system: string | null; display: string | null }>(
      `SELECT p.code, p.type, p.value, p.system, p.display FROM tx_concept_property p WHERE p.cs_key = $1 AND p.concept = $2
       UNION ALL
       SELECT p.code, p.type, p.value, p.system, p.display
       FROM tx_concept c JOIN tx_concept s ON s.cs_key = ANY($3::int[]) AND s.code = c.code
       JOIN tx_concept_property p ON p.cs_key = s.cs_key AND p.concept = s.id
       WHERE c.cs_key = $1 AND c.id = $2`,
      [cs.key, id, supplementsOf(tc, cs).map((x) => x.key)],
    );
    return res.rows.map((r) => ({ code: r.code, type: r.type, value: r.value, system: r.system ?? undefined, display: r.display ?? undefined }));
  }

  async neighbours(id: number, up: boolean): Promise<Concept[]> {
    const { tc, cs } = this;
    const [self, other] = up ? ['descendant', 'ancestor'] : ['ancestor', 'descendant'];
    const res = await tc.db.query<ConceptRow>(
      `SELECT ${CONCEPT_COLUMNS} FROM tx_closure h JOIN tx_concept c ON c.cs_key = h.cs_key AND c.id = h.${other}
       WHERE h.cs_key = $1 AND h.${self} = $2 AND h.depth = 1 ORDER BY c.id`,
      [cs.key, id],
    );
    return res.rows.map(toConcept);
  }

  /**
   * A walk up the direct edges from `descendant` (docs/terminology.md#hierarchy-storage), which
   * stops where it finds `ancestor`, so it visits the descendant's ancestors at most (tens), not
   * the ancestor's descendants.
   */
  async isAncestor(ancestor: number, descendant: number): Promise<boolean> {
    const { tc, cs } = this;
    if (ancestor === descendant) return false; // not even in a cycle
    const res = await tc.db.query(
      `WITH RECURSIVE up(id) AS (SELECT ancestor FROM tx_closure WHERE cs_key = $1 AND descendant = $2
         UNION SELECT h.ancestor FROM tx_closure h JOIN up ON h.cs_key = $1 AND h.descendant = up.id)
       SELECT 1 FROM up WHERE id = $3 LIMIT 1`,
      [cs.key, descendant, ancestor],
    );
    return res.rows.length > 0;
  }

  /** One query: the include's conditions over the given ids. */
  async selected(selection: ConceptSelection, ids: number[]): Promise<Set<number>> {
    const p = new BindValues();
    const conditions = [`c.cs_key = ${p.add(this.cs.key)}`, `c.id = ANY(${p.add([...new Set(ids)])}::int[])`];
    conditions.push(...(await this.conditions(selection, p)));
    const rows = await this.run(`SELECT c.id FROM tx_concept c WHERE ${conditions.join(' AND ')}`, p.values);
    return new Set(rows.map((r) => r.id));
  }

  /** One query: the include's conditions, the text filter, and `within`, in id order. */
  async enumerate(selection: ConceptSelection, within?: number[]): Promise<number[]> {
    const p = new BindValues();
    const conditions = [`c.cs_key = ${p.add(this.cs.key)}`, ...(await this.conditions(selection, p))];
    if (selection.text) conditions.push(textCondition(selection.text, p));
    if (within) conditions.push(`c.id = ANY(${p.add(within)}::int[])`);
    const rows = await this.run(`SELECT c.id FROM tx_concept c WHERE ${conditions.join(' AND ')} ORDER BY c.id`, p.values);
    return selection.text ? this.textMatched(selection.text, rows.map((r) => r.id)) : rows.map((r) => r.id);
  }

  /** The candidates the SQL text condition selected that the text filter matches (filters.ts#textFilterMatcher). */
  private async textMatched(text: string, ids: number[]): Promise<number[]> {
    if (ids.length === 0) return ids;
    const res = await this.tc.db.query<{ id: number; code: string; texts: string[] }>(
      `SELECT c.id, c.code, ARRAY(SELECT d.value FROM tx_designation d WHERE d.cs_key = c.cs_key AND d.concept = c.id) || coalesce(c.display, '') AS texts
         FROM tx_concept c WHERE c.cs_key = $1 AND c.id = ANY($2::int[]) ORDER BY c.id`,
      [this.cs.key, ids],
    );
    const matches = textFilterMatcher(text);
    return res.rows.filter((r) => matches(r.code, r.texts)).map((r) => r.id);
  }

  private conditions(selection: ConceptSelection, p: BindValues): Promise<string[]> {
    return includeConditions((codes) => this.findConcepts(codes), this.cs, selection.include, selection.path, p, selection.activeOnly);
  }

  /** Runs a selection query, turning PostgreSQL's invalid-regex error into a 400. */
  private async run(sql: string, params: unknown[]): Promise<Array<{ id: number }>> {
    try {
      return (await this.tc.db.query<{ id: number }>(sql, params)).rows;
    } catch (err) {
      throw regexError(err) ?? err;
    }
  }
}

/**
 * The stored designations of concepts `ids` of code system `key` (not its supplements'), as the
 * in-memory index has them (code-system-index.ts#loadIndex reads the same rows in the same
 * order: storage order within a concept): what a persisted index answers while it reads its
 * designations in the background (index-provider.ts). One index probe per concept.
 */
export async function storedDesignations(q: Queryable, key: number, ids: number[]): Promise<Map<number, Designation[]>> {
  const out = new Map<number, Designation[]>();
  if (ids.length === 0) return out;
  const res = await q.query<{ concept: number; language: string | null; use_system: string | null; use_code: string | null; use_display: string | null; value: string; extension: string | null }>(
    'SELECT concept, language, use_system, use_code, use_display, value, extension FROM tx_designation WHERE cs_key = $1 AND concept = ANY($2::int[])',
    [key, [...new Set(ids)]],
  );
  for (const r of res.rows) {
    const list = out.get(r.concept) ?? [];
    list.push(designationOf(r));
    out.set(r.concept, list);
  }
  return out;
}

/** The stored properties of concept `id` of code system `key` (not its supplements'), as the in-memory index has them (same rows, same order). */
export async function storedProperties(q: Queryable, key: number, id: number): Promise<StoredProperty[]> {
  const res = await q.query<{ code: string; type: string; value: string; system: string | null; display: string | null }>(
    'SELECT code, type, value, system, display FROM tx_concept_property WHERE cs_key = $1 AND concept = $2',
    [key, id],
  );
  return res.rows.map((r) => ({ code: r.code, type: r.type, value: r.value, system: r.system ?? undefined, display: r.display ?? undefined }));
}

/**
 * Runs the point reads above once for concept 1 of code system `key`, answers unused: while a
 * persisted index opens, the database (PGlite: in its own thread) opens the tables and index
 * pages the first answers then read (index-cache.ts) — on PGlite the first read of a table
 * after a start took as long as the rest of a `$lookup`.
 */
export async function warmStoredReads(q: Queryable, key: number): Promise<void> {
  await storedDesignations(q, key, [1]);
  await storedProperties(q, key, 1);
}
