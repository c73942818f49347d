import type { ElementDefinition, StructureDefinition } from '@medplum/fhirtypes';

/**
 * One element of a snapshot with its children and slices, so validation walks a tree instead of
 * searching the flat element list: `Observation.component` → its children (`code`, `value[x]`, …)
 * and, when it is sliced, its slices (`Observation.component:systolic`), each with its own children.
 */
export interface ElementNode {
  def: ElementDefinition;
  /** The element's name in its parent: `code`, `value[x]`. */
  name: string;
  children: ElementNode[];
  slices: ElementNode[];
}

/** A StructureDefinition made ready for validation (profile-source.ts caches these). */
export interface CompiledProfile {
  sd: StructureDefinition;
  url: string;
  /** The type it constrains (`Observation`, `Extension`, `Quantity`). */
  type: string;
  root: ElementNode;
}

/**
 * The element tree of a snapshot. Element ids name the parent (`A.b:s.c` is a child of
 * `A.b:s`); a snapshot without ids (older authoring tools) is read by path, without slices.
 */
export function compileProfile(sd: StructureDefinition, url: string): CompiledProfile | undefined {
  const elements = sd.snapshot?.element ?? [];
  const first = elements[0];
  if (!first?.path) return undefined;
  const byId = new Map<string, ElementNode>();
  const root: ElementNode = { def: first, name: first.path, children: [], slices: [] };
  byId.set(first.id ?? first.path, root);
  for (const def of elements.slice(1)) {
    if (!def.path) continue;
    const id = def.id ?? def.path;
    const cut = lastDot(id);
    if (cut < 0) continue;
    const last = id.slice(cut + 1);
    const colon = last.indexOf(':');
    const name = colon >= 0 ? last.slice(0, colon) : last;
    const node: ElementNode = { def, name, children: [], slices: [] };
    byId.set(id, node);
    if (colon >= 0) {
      // A slice (or a re-slice `a:s/t`): attached to the element it slices.
      const sliceName = last.slice(colon + 1);
      const slash = sliceName.lastIndexOf('/');
      const slicedId = slash >= 0 ? `${id.slice(0, cut + 1)}${name}:${sliceName.slice(0, slash)}` : `${id.slice(0, cut + 1)}${name}`;
      const sliced = byId.get(slicedId);
      // A choice type renamed as a slice (`value[x]:valueQuantity`) constrains the one type: it is the element itself.
      if (sliced) sliced.slices.push(node);
      continue;
    }
    byId.get(id.slice(0, cut))?.children.push(node);
  }
  return { sd, url, type: sd.type ?? first.path, root };
}

/** The last `.` of an id that is not inside a slice name (slice names may hold dots after `:`). */
function lastDot(id: string): number {
  let cut = -1;
  let inSlice = false;
  for (let i = 0; i < id.length; i++) {
    const ch = id[i];
    if (ch === ':') inSlice = true;
    else if (ch === '.') {
      // A dot after a slice name starts a child when what follows is an element name.
      if (inSlice && !/^[a-z_][A-Za-z0-9_]*(\[x\])?(:|\.|$)/.test(id.slice(i + 1))) continue;
      inSlice = false;
      cut = i;
    }
  }
  return cut;
}

/** The child elements of `node` whose JSON keys `obj` may carry, by name (`value[x]` → `value`). */
export function choiceBase(name: string): string | undefined {
  return name.endsWith('[x]') ? name.slice(0, -3) : undefined;
}
