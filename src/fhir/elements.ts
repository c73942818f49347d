import type { Coding, Resource } from '@medplum/fhirtypes';
import { structureDefinitionMap } from './definitions.js';

/**
 * Shaping a resource down to some of its top-level elements (search `_summary`/`_elements`,
 * docs/rest.md#result-parameters; Bulk Data `_elements`, docs/export.md#parameters).
 */

/** The tag a server puts on resources it returns incomplete (`_summary`, `_elements`). */
const SUBSETTED: Coding = { system: 'http://terminology.hl7.org/CodeSystem/v3-ObservationValue', code: 'SUBSETTED' };

/** Elements every shaped resource keeps. */
const ALWAYS_KEPT = ['resourceType', 'id', 'meta'];

/** Keeps the named top-level elements (`deceased` keeps `deceasedBoolean`), plus resourceType, id, meta; tags SUBSETTED. */
export function keepElements(resource: Resource, wanted: ReadonlySet<string>): Resource {
  return subset(resource, (key) => wanted.has(key) || wanted.has(baseName(resource.resourceType, key)));
}

/** Keeps the top-level elements `keep` accepts (plus resourceType, id, meta) and tags SUBSETTED. */
export function subset(resource: Resource, keep: (key: string) => boolean): Resource {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(resource)) {
    const name = key.startsWith('_') ? key.slice(1) : key; // `_birthDate` (extensions) follows `birthDate`
    if (ALWAYS_KEPT.includes(key) || keep(name)) out[key] = value;
  }
  const meta = { ...(resource.meta ?? {}) };
  const tags = meta.tag ?? [];
  if (!tags.some((t) => t.system === SUBSETTED.system && t.code === SUBSETTED.code)) meta.tag = [...tags, SUBSETTED];
  out.meta = meta;
  return out as unknown as Resource;
}

export interface ElementInfo {
  summary: Set<string>;
  mandatory: Set<string>;
  /** Choice elements by their base name (`deceased` for `deceased[x]`). */
  choices: Set<string>;
}

const elementCache = new Map<string, ElementInfo>();

/** Top-level element facts of a resource type, from its StructureDefinition (cached). */
export function elementInfo(type: string): ElementInfo {
  let info = elementCache.get(type);
  if (!info) {
    info = { summary: new Set(), mandatory: new Set(), choices: new Set() };
    for (const element of structureDefinitionMap().get(type)?.snapshot?.element ?? []) {
      const parts = (element.path ?? '').split('.');
      if (parts.length !== 2) continue;
      const name = parts[1].replace(/\[x\]$/, '');
      if (parts[1].endsWith('[x]')) info.choices.add(name);
      if (element.isSummary) info.summary.add(name);
      if ((element.min ?? 0) > 0) {
        info.mandatory.add(name);
        info.summary.add(name);
      }
    }
    elementCache.set(type, info);
  }
  return info;
}

/** `deceasedBoolean` → `deceased` when `deceased[x]` is a choice element of the type. */
export function baseName(type: string, key: string): string {
  const { choices } = elementInfo(type);
  for (let i = key.length - 1; i > 0; i--) {
    if (/[A-Z]/.test(key[i]) && choices.has(key.slice(0, i))) return key.slice(0, i);
  }
  return key;
}
