import type { ElementDefinition } from '@medplum/fhirtypes';

/**
 * Element ids as the specification forms them (elementdefinition.html#id): the path's names
 * joined by `.`, each name followed by `:<sliceName>` when the element is in a slice
 * (`Patient.identifier:mrn.system`); a re-slice names its slice `mrn/sub`.
 */

/** One step of an id: the element name and, for a slice, its slice name. */
export interface IdStep {
  name: string;
  slice?: string;
}

/** `Patient.identifier:mrn.system` → [{Patient}, {identifier, mrn}, {system}]. */
export function idSteps(id: string): IdStep[] {
  return id.split('.').map((part) => {
    const colon = part.indexOf(':');
    return colon < 0 ? { name: part } : { name: part.slice(0, colon), slice: part.slice(colon + 1) };
  });
}

/** The path of an element id: the id without its slice names. */
export function pathOfId(id: string): string {
  return idSteps(id).map((s) => s.name).join('.');
}

/** The id of an element, or the one its path gives when it has none. */
export function idOf(element: ElementDefinition): string {
  return element.id ?? element.path ?? '';
}

/** True when `id` is a descendant (child, grandchild…) of `parent`, not a slice of it. */
export function isChildOf(id: string, parent: string): boolean {
  return id.startsWith(parent + '.');
}

/** True when `id` belongs to the group of `root`: its children, its slices and their children. */
export function inSliceGroup(id: string, root: string): boolean {
  return id.startsWith(root + '.') || id.startsWith(root + ':') || id.startsWith(root + '/');
}

/** Replaces the leading `from` of an id or path (a prefix ending at a step boundary) with `to`. */
export function rebase(value: string, from: string, to: string): string {
  return to + value.slice(from.length);
}

/**
 * The type a renamed choice element names: `valueQuantity` of `value[x]` → `Quantity`,
 * `valueString` → `string` (primitive type codes start in lower case). Undefined when `name`
 * is not `<prefix><Type>` of the choice element `choiceName` (`value[x]`).
 */
export function choiceType(name: string, choiceName: string, element: ElementDefinition): string | undefined {
  if (!choiceName.endsWith('[x]')) return undefined;
  const prefix = choiceName.slice(0, -3);
  if (!name.startsWith(prefix) || name.length === prefix.length) return undefined;
  const typeName = name.slice(prefix.length);
  return element.type?.find((t) => t.code.toLowerCase() === typeName.toLowerCase() && t.code.slice(1) === typeName.slice(1))?.code;
}
