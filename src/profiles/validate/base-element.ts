import type { ElementDefinition } from '@medplum/fhirtypes';
import { baseProfile } from '../profile-source.js';

const byPath = new Map<string, Map<string, ElementDefinition>>();

/** The base definition's element a profile's element constrains (by `base.path`), if any. */
export function baseElement(def: ElementDefinition): ElementDefinition | undefined {
  const path = def.base?.path;
  if (!path) return undefined;
  const type = path.split('.')[0];
  let elements = byPath.get(type);
  if (!elements) {
    elements = new Map();
    for (const e of baseProfile(type)?.sd.snapshot?.element ?? []) if (e.path && !e.sliceName) elements.set(e.path, e);
    byPath.set(type, elements);
  }
  return elements.get(path);
}
