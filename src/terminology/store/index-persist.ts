import type { Database } from '../../core/database.js';
import { loadIndex } from '../providers/fhir/code-system-index.js';
import { INDEX_SECTION, snapshotKey, writeSnapshot } from '../providers/fhir/index-snapshot.js';
import { parseSctVersion, SCT_SYSTEM } from '../providers/snomed/sct-meta.js';
import { persistSnomedGraph } from '../providers/snomed/sct-index.js';

/**
 * After an import switched index `key` in: builds its in-memory index (and a SNOMED CT edition's
 * graph) once, here, and persists them (docs/terminology.md#persisted-indexes), so that the
 * first answer after a server starts reads them instead of building them. Returns the bytes
 * written.
 */
export async function persistIndexes(db: Database, key: number): Promise<number> {
  const row = (await db.query<{ url: string; version: string | null; concept_count: number }>('SELECT url, version, concept_count FROM tx_code_system WHERE cs_key = $1', [key])).rows[0];
  if (!row) return 0;
  const cs = { key, url: row.url, version: row.version ?? undefined, conceptCount: row.concept_count };
  const index = await db.readPass((q) => loadIndex(q, key));
  let bytes = await writeSnapshot(db, key, INDEX_SECTION, snapshotKey(cs), index.toParts());
  if (cs.url === SCT_SYSTEM && parseSctVersion(cs.version ?? '')) bytes += await persistSnomedGraph(db, cs, index);
  return bytes;
}
