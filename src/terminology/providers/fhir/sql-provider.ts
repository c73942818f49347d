import type { CodeSystemInfo, Concept, Designation, TermContext } from '../../types.js';
import type { StoredProperty } from './code-system-index.js';
import { splitCanonical } from '../../versions.js';

/**
 * The SQL reference of the concept reads (docs/terminology.md#in-memory-index): the same
 * answers as concepts.ts gives from memory, straight from the database index. The engine runs
 * on the in-memory index; this path stays for the equivalence test (`TermContext.sqlReference`).
 * Every query is an index probe on `cs_key`.
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

export const CONCEPT_COLUMNS = 'c.id, c.code, c.display, c.definition, c.inactive, c.abstract, c.status';

/** Maps a `tx_concept` row (selected with CONCEPT_COLUMNS). */
export function toConcept(r: ConceptRow): Concept {
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

/**
 * Finds the concepts of `codes` (one query for any number of codes). Exact matches win; in a
 * case-insensitive system a code also matches up to case. The map is keyed by the given code.
 */
export async function findConcepts(tc: TermContext, cs: CodeSystemInfo, codes: string[]): Promise<Map<string, Concept>> {
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

/** One concept by code (see findConcepts). */
export async function findConcept(tc: TermContext, cs: CodeSystemInfo, code: string): Promise<Concept | undefined> {
  return (await findConcepts(tc, cs, [code])).get(code);
}

/** Concepts by id, in id order. */
export async function conceptsByIds(tc: TermContext, cs: CodeSystemInfo, ids: number[]): Promise<Concept[]> {
  if (ids.length === 0) return [];
  const res = await tc.db.query<ConceptRow>(
    `SELECT ${CONCEPT_COLUMNS} FROM tx_concept c WHERE c.cs_key = $1 AND c.id = ANY($2::int[]) ORDER BY c.id`,
    [cs.key, ids],
  );
  return res.rows.map(toConcept);
}

/** Keys of the requested supplements that supplement `cs` (their canonical names its url). */
export function supplementKeys(tc: TermContext, cs: CodeSystemInfo): number[] {
  return tc.supplements.filter((s) => splitCanonical(s.supplements ?? '').url === cs.url).map((s) => s.key);
}

/**
 * The designations of concepts (not the display itself), by concept id — including those of the
 * requested supplements of the code system, matched by code.
 */
export async function designationsOf(tc: TermContext, cs: CodeSystemInfo, ids: number[]): Promise<Map<number, Designation[]>> {
  const out = new Map<number, Designation[]>();
  if (ids.length === 0) return out;
  const sups = supplementKeys(tc, cs);
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
    list.push({ language: r.language ?? undefined, use, value: r.value, ...(r.extension ? { extension: JSON.parse(r.extension) as Designation['extension'] } : {}), ...(supplement ? { source: supplement.version ? `${supplement.url}|${supplement.version}` : supplement.url } : {}) });
    out.set(r.concept, list);
  }
  return out;
}

/** The stored properties of one concept (and those its requested supplements add). */
export async function propertiesOf(tc: TermContext, cs: CodeSystemInfo, id: number): Promise<StoredProperty[]> {
  const res = await tc.db.query<{ code: string; type: string; value: string; system: string | null; display: string | null }>(
    `SELECT p.code, p.type, p.value, p.system, p.display FROM tx_concept_property p WHERE p.cs_key = $1 AND p.concept = $2
     UNION ALL
     SELECT p.code, p.type, p.value, p.system, p.display
     FROM tx_concept c JOIN tx_concept s ON s.cs_key = ANY($3::int[]) AND s.code = c.code
     JOIN tx_concept_property p ON p.cs_key = s.cs_key AND p.concept = s.id
     WHERE c.cs_key = $1 AND c.id = $2`,
    [cs.key, id, supplementKeys(tc, cs)],
  );
  return res.rows.map((r) => ({ code: r.code, type: r.type, value: r.value, system: r.system ?? undefined, display: r.display ?? undefined }));
}

/** Direct parents (`up`) or children of a concept. */
export async function neighbours(tc: TermContext, cs: CodeSystemInfo, id: number, up: boolean): Promise<Concept[]> {
  const [self, other] = up ? ['descendant', 'ancestor'] : ['ancestor', 'descendant'];
  const res = await tc.db.query<ConceptRow>(
    `SELECT ${CONCEPT_COLUMNS} FROM tx_closure h JOIN tx_concept c ON c.cs_key = h.cs_key AND c.id = h.${other}
     WHERE h.cs_key = $1 AND h.${self} = $2 AND h.depth = 1 ORDER BY c.id`,
    [cs.key, id],
  );
  return res.rows.map(toConcept);
}

/**
 * True when `ancestor` is a proper ancestor of `descendant`: a walk up the direct edges from
 * `descendant` (docs/terminology.md#hierarchy-storage), which stops where it finds `ancestor`, so
 * it visits the descendant's ancestors at most (tens), not the ancestor's descendants.
 */
export async function isAncestor(tc: TermContext, cs: CodeSystemInfo, ancestor: number, descendant: number): Promise<boolean> {
  if (ancestor === descendant) return false; // not even in a cycle
  const res = await tc.db.query(
    `WITH RECURSIVE up(id) AS (SELECT ancestor FROM tx_closure WHERE cs_key = $1 AND descendant = $2
       UNION SELECT h.ancestor FROM tx_closure h JOIN up ON h.cs_key = $1 AND h.descendant = up.id)
     SELECT 1 FROM up WHERE id = $3 LIMIT 1`,
    [cs.key, descendant, ancestor],
  );
  return res.rows.length > 0;
}
