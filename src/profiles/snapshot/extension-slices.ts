import type { ElementDefinition } from '@medplum/fhirtypes';
import type { SnapshotElements } from './context.js';

/**
 * An extension slice whose type names an extension definition (`type.profile`): the slice
 * takes the definition's texts (short, definition) and modifier flag where the differential
 * states none — its cardinality stays the slice's (the differential's, else the sliced
 * element's), as the published R4 snapshots have it (clinicaldocument's `versionNumber` is 0..*
 * though its definition says 0..1) — and
 * its `url` child (when the snapshot has one) is fixed to the definition's url — as a
 * published snapshot shows it. The definition gets a snapshot first when it has none.
 */
export function applyExtensionDefinition(list: SnapshotElements, at: number, diff: ElementDefinition): void {
  const element = list.elements[at];
  const type = element.type?.length === 1 ? element.type[0] : undefined;
  const canonical = type?.profile?.[0];
  if (!canonical || !diff.type || (type?.code !== 'Extension' && type?.code !== 'ModifierExtension')) return;
  const definition = list.generation.withSnapshot(canonical, list.chain, `extension definition of ${element.id}`);
  const root = definition.snapshot?.element?.[0];
  if (!root) return;
  if (diff.short === undefined && root.short) element.short = root.short;
  if (diff.definition === undefined && root.definition) element.definition = root.definition;
  if (!element.isModifier && root.isModifier) element.isModifier = true;
  const url = list.elements[list.indexOf(`${element.id}.url`)];
  if (url && definition.url) {
    for (const key of Object.keys(url)) if (/^fixed[A-Z]/.test(key)) delete (url as unknown as Record<string, unknown>)[key];
    url.fixedUri = canonical.split('|')[0];
  }
}
