import { FhirError, issue } from '../../fhir/outcome.js';
import { msg } from '../messages.js';
import { supplementCanonical, supplementsOf } from '../providers/provider.js';
import { providerFor } from '../providers/select.js';
import { PREFERRED_FOR_LANGUAGE, preferredDisplay, type LanguagePrefs } from './display.js';
import { isExtensionProperty } from '../providers/concept-extensions.js';
import type { CodeSystemInfo, TermContext } from '../types.js';

/**
 * `$lookup` (docs/terminology.md#lookup): everything the index holds about one code — name and version of
 * the code system, display (in the requested language when there is one), definition,
 * designations, and properties: parent/child relationships (one entry per related code, with
 * the related display as description), `inactive`, and every stored property typed as declared.
 */

/** A value with its FHIR type (the handler turns it into `value<Type>`). */
export interface Typed {
  type: string;
  value: unknown;
}

export interface LookupResult {
  name: string;
  version: string | undefined;
  display: string | undefined;
  definition: string | undefined;
  abstract: boolean;
  code: string;
  system: string;
  designation: Array<{ language?: string; use?: { system?: string; code?: string; display?: string }; value: string; source?: string }>;
  property: Array<{ code: string; value: Typed; description?: string; codeDisplay?: string }>;
  /** The supplements that contributed (`url|version`). */
  usedSupplements: string[];
}

/** Properties computed from the concept rather than stored as such. */
const COMPUTED = new Set(['parent', 'child', 'inactive']);

/**
 * Looks up `code` in `cs`; 404 `not-found` naming code, code system and its version (the
 * wording of the other operations' unknown codes) when the code system does not have it.
 * `properties` restricts the property output (undefined or `*` = all).
 */
export async function lookupCode(
  tc: TermContext,
  cs: CodeSystemInfo,
  code: string,
  languages: LanguagePrefs,
  properties: string[] | undefined,
): Promise<LookupResult> {
  const provider = providerFor(tc, cs);
  const concept = (await provider.findConcepts([code])).get(code);
  if (!concept) throw new FhirError(404, [issue('not-found', msg.unknownCode(code, cs.url, cs.version))]);
  const onRequest = provider.onRequestProperties;
  const wanted = (p: string) =>
    onRequest?.has(p) ? !!properties?.includes(p) : !properties || properties.length === 0 || properties.includes('*') || properties.includes(p);
  const all = (await provider.designations([concept.id])).get(concept.id) ?? [];
  // Former designations are displays to recognise, not designations to list.
  const designations = all.filter((d) => !d.retired);
  // The display comes first, also when it is one of the designations (listsDisplay).
  const shown = designations.findIndex((d) => d.value === concept.display);
  if (provider.listsDisplay && shown > 0) designations.unshift(...designations.splice(shown, 1));
  const property: LookupResult['property'] = [];

  const bare = provider.bareRelations === true;
  if (wanted('parent')) {
    for (const p of await provider.neighbours(concept.id, true)) property.push(related('parent', p.code, bare ? undefined : p.display));
  }
  if (wanted('child')) {
    for (const c of await provider.neighbours(concept.id, false)) property.push(related('child', c.code, bare ? undefined : c.display));
  }
  if (wanted('inactive')) property.push({ code: 'inactive', value: { type: 'boolean', value: concept.inactive } });
  const stored = (await provider.properties(concept.id)).filter((p) => !COMPUTED.has(p.code) && !isExtensionProperty(p.code, cs.propertyDefs) && wanted(p.code));
  // A code-valued property naming another concept of this system is described by its display.
  const targets = bare ? new Map<string, { display?: string }>() : await provider.findConcepts(stored.filter((p) => p.type === 'code').map((p) => p.value));
  // A property the code system does not declare, named by one of its codes (a SNOMED CT
  // attribute), is described by that concept's display too (`code-display`).
  const declared = new Set(cs.propertyDefs.map((d) => d.code));
  const named = await provider.findConcepts([...new Set(stored.filter((p) => !declared.has(p.code)).map((p) => p.code))]);
  for (const p of stored) {
    const entry: LookupResult['property'][number] = { code: p.code, value: typedValue(p) };
    const target = p.type === 'code' ? targets.get(p.value) : undefined;
    if (target?.display) entry.description = target.display;
    // A value that is not a Coding may carry what it stands for (LOINC's CLASSTYPE).
    else if (p.type !== 'Coding' && p.display) entry.description = p.display;
    const codeDisplay = declared.has(p.code) ? undefined : named.get(p.code)?.display;
    if (codeDisplay) entry.codeDisplay = codeDisplay;
    property.push(entry);
  }

  return {
    name: provider.lookupName ?? cs.name ?? cs.title ?? cs.url,
    version: cs.version,
    display: preferredDisplay(cs, concept, designations, languages),
    definition: concept.definition,
    abstract: concept.abstract,
    code: concept.code,
    system: cs.url,
    // The display is a designation too: the preferred one for the code system's language.
    designation: [...(concept.display && !provider.listsDisplay ? [{ language: cs.language, use: PREFERRED_FOR_LANGUAGE, value: concept.display }] : []), ...designations].map(
      designationOut,
    ),
    property,
    usedSupplements: supplementsOf(tc, cs).map(supplementCanonical),
  };
}

/** A designation as `$lookup` answers it: absent fields left out (assigned, not spread: this runs per designation). */
function designationOut(d: { language?: string; use?: LookupResult['designation'][number]['use']; value: string; source?: string }): LookupResult['designation'][number] {
  const out: LookupResult['designation'][number] = { value: d.value };
  if (d.language) out.language = d.language;
  if (d.use) out.use = d.use;
  if (d.source) out.source = d.source;
  return out;
}

function related(code: 'parent' | 'child', target: string, display: string | undefined): LookupResult['property'][number] {
  const entry: LookupResult['property'][number] = { code, value: { type: 'code', value: target } };
  if (display) entry.description = display;
  return entry;
}

/** A stored property value with its declared type (integer/decimal/boolean back to JSON types). */
function typedValue(p: { type: string; value: string; system?: string; display?: string }): Typed {
  switch (p.type) {
    case 'Coding':
      return { type: 'Coding', value: { ...(p.system ? { system: p.system } : {}), code: p.value, ...(p.display ? { display: p.display } : {}) } };
    case 'integer':
    case 'decimal':
      return { type: p.type, value: Number(p.value) };
    case 'boolean':
      return { type: 'boolean', value: p.value === 'true' };
    default:
      return { type: p.type, value: p.value };
  }
}
