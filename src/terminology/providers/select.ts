import type { CodeSystemInfo, TermContext } from '../types.js';
import type { CodeSystemProvider, ConceptSelection } from './provider.js';
import { builtinProvider } from './builtin.js';
import { requestIndex } from './fhir/code-system-index.js';
import { terminologyCache } from './fhir/index-cache.js';
import { IndexProvider } from './fhir/index-provider.js';
import { SqlProvider } from './fhir/sql-provider.js';
import { LoincProvider } from './loinc/loinc-provider.js';
import { LOINC_URL } from './loinc/loinc-model.js';
import { SnomedProvider } from './snomed/sct-provider.js';
import { parseSctVersion, SCT_SYSTEM } from './snomed/sct-meta.js';

export { inlineCodeSystem } from './fhir/inline-code-system.js';
export { loincImplicitCode, loincImplicitValueSet } from './loinc/implicit-value-sets.js';
export { LOINC_URL } from './loinc/loinc-model.js';

/**
 * The one place a code system's provider is chosen (docs/terminology.md#code-system-providers).
 * Code systems stored as FHIR resources (and those a request supplies inline): their in-memory
 * index when it is ready; while a stored system's index builds in the background, SQL answers
 * the point reads (no request waits for the build of a large system) and set questions wait for
 * the index; `TermContext.sqlReference` answers everything from SQL (the equivalence test).
 * The code systems built in (builtin.ts) answer from their grammar or registry.
 */
export function providerFor(tc: TermContext, cs: CodeSystemInfo): CodeSystemProvider {
  const builtin = builtinProvider(tc, cs);
  if (builtin) return builtin;
  // LOINC: the index's provider, with the filters LOINC defines (docs/terminology.md#loinc).
  const stored = storedProvider(tc, cs);
  return cs.url === LOINC_URL ? new LoincProvider(stored) : stored;
}

function storedProvider(tc: TermContext, cs: CodeSystemInfo): CodeSystemProvider {
  const inline = requestIndex(tc, cs.key);
  if (inline) return new IndexProvider(tc, cs, inline);
  if (tc.sqlReference || cs.key <= 0) return new SqlProvider(tc, cs);
  // A SNOMED CT edition loaded from RF2 (its tables hold what SQL cannot answer): its graph.
  if (cs.url === SCT_SYSTEM && parseSctVersion(cs.version ?? '') && cs.conceptCount > 0) return new SnomedProvider(tc, cs);
  const ready = terminologyCache(tc.db).ready(cs);
  return ready ? new IndexProvider(tc, cs, ready) : new LoadingProvider(tc, cs);
}

/** A stored code system whose index is loading: point reads from SQL, includes from the index once built. */
class LoadingProvider extends SqlProvider {
  override async selected(selection: ConceptSelection, ids: number[]): Promise<Set<number>> {
    return (await this.indexed()).selected(selection, ids);
  }

  override async enumerate(selection: ConceptSelection, within?: number[]): Promise<number[]> {
    return (await this.indexed()).enumerate(selection, within);
  }

  private async indexed(): Promise<IndexProvider> {
    return new IndexProvider(this.tc, this.cs, await terminologyCache(this.tc.db).index(this.cs));
  }
}
