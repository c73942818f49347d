import type { ValueSet, ValueSetComposeInclude } from '@medplum/fhirtypes';
import type { CodeSystemInfo, TermContext } from '../types.js';
import { SCT_SYSTEM } from './snomed/sct-meta.js';
import { SnomedProvider } from './snomed/sct-provider.js';

/**
 * Value sets a code system defines by URL pattern rather than as resources
 * (docs/terminology.md#implicit-value-sets): SNOMED CT's `?fhir_vs` forms, under the system
 * URI or an edition / version URI. They resolve wherever a ValueSet canonical is accepted.
 */

const SCT_IMPLICIT = /^http:\/\/snomed\.info\/(?:(x?sct)\/(\d+)(\/version\/\d{8})?|sct)\/?\?fhir_vs(?:=(.*))?$/s;

/** Whether a canonical names an implicit value set (the whole text: ECL may contain `|`). */
export function isImplicitValueSet(canonical: string): boolean {
  return SCT_IMPLICIT.test(canonical);
}

/**
 * The implicit value set a canonical names, or undefined when it names none (unknown form, or a
 * `refset/<id>` that is not a reference set of the edition). `codeSystem` resolves the edition.
 */
export async function implicitValueSet(
  tc: TermContext,
  canonical: string,
  codeSystem: (url: string, version: string | undefined) => Promise<CodeSystemInfo | undefined>,
): Promise<ValueSet | undefined> {
  const m = SCT_IMPLICIT.exec(canonical);
  if (!m) return undefined;
  const version = m[2] ? `http://snomed.info/${m[1]}/${m[2]}${m[3] ?? ''}` : undefined;
  const query = m[4] === undefined ? '' : decode(m[4]);
  const include: ValueSetComposeInclude = { system: SCT_SYSTEM, ...(version ? { version } : {}) };
  let title = 'SNOMED CT';
  if (query === '') {
    title = 'SNOMED CT Reference Set (All of SNOMED CT)';
  } else if (query === 'refset') {
    include.filter = [{ property: 'refset', op: 'exists', value: 'true' }];
    title = 'SNOMED CT reference sets';
  } else if (query.startsWith('isa/') && /^\d{6,18}$/.test(query.slice(4))) {
    include.filter = [{ property: 'concept', op: 'is-a', value: query.slice(4) }];
    title = `SNOMED CT concept ${query.slice(4)} and its descendants`;
  } else if (query.startsWith('refset/') && /^\d{6,18}$/.test(query.slice(7))) {
    const refset = query.slice(7);
    const cs = await codeSystem(SCT_SYSTEM, version ?? tc.versionRules?.defaults.get(SCT_SYSTEM));
    if (!cs || cs.url !== SCT_SYSTEM || cs.conceptCount === 0) return undefined;
    const provider = new SnomedProvider(tc, cs);
    const { graph } = await provider.edition();
    const id = graph.resolve(refset);
    if (id === undefined || !graph.isRefset(id)) return undefined;
    include.filter = [{ property: 'concept', op: 'in', value: refset }];
    title = `SNOMED CT reference set ${refset}`;
  } else if (query.startsWith('ecl/') && query.length > 4) {
    include.filter = [{ property: 'constraint', op: '=', value: query.slice(4) }];
    title = 'SNOMED CT concepts selected by ECL';
  } else {
    return undefined;
  }
  return { resourceType: 'ValueSet', url: canonical, ...(version ? { version } : {}), title, status: 'active', compose: { include: [include] } };
}

function decode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
