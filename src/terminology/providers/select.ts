import type { CodeSystemInfo, TermContext } from '../types.js';
import type { CodeSystemProvider, ConceptSelection } from './provider.js';
import { requestIndex } from './fhir/code-system-index.js';
import { terminologyCache } from './fhir/index-cache.js';
import { IndexProvider } from './fhir/index-provider.js';
import { SqlProvider } from './fhir/sql-provider.js';
import { SnomedProvider } from './snomed/sct-provider.js';
import { parseSctVersion, SCT_SYSTEM } from './snomed/sct-meta.js';

export { inlineCodeSystem } from './fhir/inline-code-system.js';

/**
 * The one place a code system's provider is chosen (docs/terminology.md#code-system-providers).
 * Code systems stored as FHIR resources (and those a request supplies inline): their in-memory
 * index when it is ready; while a stored system's index builds in the background, SQL answers
 * the point reads (no request waits for the build of a large system) and set questions wait for
 * the index; `TermContext.sqlReference` answers everything from SQL (the equivalence test).
 */
export function providerFor(tc: TermContext, cs: CodeSystemInfo): CodeSystemProvider {
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
