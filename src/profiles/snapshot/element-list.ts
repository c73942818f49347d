import type { ElementDefinition, StructureDefinition } from '@medplum/fhirtypes';
import { constrain } from './constrain.js';
import { choiceType, idOf, idSteps, inSliceGroup, isChildOf, rebase } from './element-ids.js';
import { applyExtensionDefinition } from './extension-slices.js';
import { profileError } from './errors.js';
import type { Definitions, SnapshotElements } from './context.js';
import { typeChildren } from './type-children.js';

/**
 * The snapshot being built: a copy of the base's snapshot elements that the differential's
 * elements are applied to, one at a time, in the differential's order. An element the
 * differential names is found by its id; on the way there, children of a complex type are
 * expanded from the type's definition ("diving"), slices are added after their slice group,
 * and a renamed choice (`valueQuantity`) becomes the type slice `value[x]:valueQuantity`, as the
 * published R4 snapshots form them.
 */
export class ElementList implements SnapshotElements {
  readonly elements: ElementDefinition[];
  /** path → id of the slice the differential is in (for differential elements without an id). */
  private readonly sliceContext = new Map<string, string>();
  private current = '';

  constructor(
    readonly generation: Definitions,
    readonly profileUrl: string,
    readonly base: StructureDefinition,
    /** The derivation this profile is in (for definitions it needs on the way). */
    readonly chain: string[],
  ) {
    this.elements = (base.snapshot?.element ?? []).map((e) => {
      const copy = structuredClone(e);
      copy.id = idOf(e);
      copy.base ??= { path: e.path, min: e.min ?? 0, max: e.max ?? '*' };
      return copy;
    });
    generation.count(this.elements.length, profileUrl);
  }

  /** Applies the differential's element number `index`. */
  apply(diff: ElementDefinition, index: number): void {
    const id = this.diffId(diff);
    this.current = `StructureDefinition.differential.element[${index}]`;
    const at = this.locate(id);
    this.elements[at] = constrain(this.elements[at], diff, this.profileUrl);
    applyExtensionDefinition(this, at, diff);
  }

  /** Index of the element with this id; -1 when there is none. */
  indexOf(id: string): number {
    return this.elements.findIndex((e) => e.id === id);
  }

  /** The error for an element the base does not have. */
  notInBase(id: string, why = ''): Error {
    return profileError(this.profileUrl, `differential element ${id} is not in the base definition ${this.base.url ?? ''}${why}`, this.current);
  }

  /** The id a differential element has, or the one its path and the slices before it give. */
  private diffId(diff: ElementDefinition): string {
    const path = diff.path ?? '';
    let id = diff.id;
    if (!id) {
      const names = path.split('.');
      id = names[0];
      for (let i = 1; i < names.length; i++) {
        id += `.${names[i]}`;
        const prefix = names.slice(0, i + 1).join('.');
        if (i === names.length - 1) id = diff.sliceName ? `${id}:${diff.sliceName}` : id;
        else id = this.sliceContext.get(prefix) ?? id;
      }
    }
    for (const key of [...this.sliceContext.keys()]) if (key === path || key.startsWith(`${path}.`)) this.sliceContext.delete(key);
    if (diff.sliceName) this.sliceContext.set(path, id);
    return id;
  }

  /** Finds (creating on the way: expanded children, slices) the element with this id. */
  private locate(id: string): number {
    const steps = idSteps(id);
    const root = this.elements[0]?.id;
    if (!root || steps[0].name !== root || steps[0].slice) throw this.notInBase(id);
    let current = root;
    for (const step of steps.slice(1)) {
      current = this.child(current, step.name, id);
      if (step.slice) current = this.slice(current, step.slice, id);
    }
    return this.indexOf(current);
  }

  /** The id of `parent`'s child `name`: expanded from the parent's type when needed; a renamed choice becomes a type slice. */
  private child(parent: string, name: string, id: string): string {
    const childId = `${parent}.${name}`;
    if (this.indexOf(childId) >= 0) return childId;
    if (!this.elements.some((e) => isChildOf(e.id ?? '', parent))) {
      this.expand(parent, id);
      if (this.indexOf(childId) >= 0) return childId;
    }
    for (const e of this.elements) {
      const rest = (e.id ?? '').slice(parent.length + 1);
      if (!isChildOf(e.id ?? '', parent) || rest.includes('.') || rest.includes(':')) continue;
      const type = choiceType(name, rest, e);
      if (type) return this.choiceSlice(e.id as string, name, type, id);
    }
    throw this.notInBase(id);
  }

  /** Inserts the children of `parent` (from its type's definition, or the element its contentReference names). */
  private expand(parent: string, id: string): void {
    const at = this.indexOf(parent);
    const element = this.elements[at];
    let children: ElementDefinition[];
    if (element.contentReference) {
      const ref = element.contentReference.slice(element.contentReference.indexOf('#') + 1);
      const source = this.elements.find((e) => e.id === ref);
      if (!source) throw this.notInBase(id, ` (its contentReference ${element.contentReference} is not found)`);
      children = this.elements
        .filter((e) => isChildOf(e.id ?? '', ref) && !(e.id ?? '').slice(ref.length).includes(':'))
        .map((e) => this.moved(e, ref, source.path, parent, element.path));
    } else {
      const types = [...new Set((element.type ?? []).map((t) => t.code))];
      if (types.length !== 1) {
        const why = types.length === 0 ? ' (its parent has no type)' : ` (${parent} has several types: ${types.join(', ')}; name one, e.g. ${parent.replace(/\[x\]$/, types[0][0].toUpperCase() + types[0].slice(1))})`;
        throw this.notInBase(id, why);
      }
      const typeDef = typeChildren(this, element, id);
      children = typeDef.children.map((e) => this.moved(e, typeDef.rootId, typeDef.rootPath, parent, element.path));
    }
    if (children.length === 0) throw this.notInBase(id);
    this.generation.count(children.length, this.profileUrl);
    this.elements.splice(at + 1, 0, ...children);
  }

  /** A copy of `e` under another parent: its id and path re-rooted. */
  private moved(e: ElementDefinition, fromId: string, fromPath: string | undefined, toId: string, toPath: string | undefined): ElementDefinition {
    const copy = structuredClone(e);
    copy.id = rebase(idOf(e), fromId, toId);
    copy.path = rebase(e.path ?? '', fromPath ?? fromId, toPath ?? toId);
    copy.base ??= { path: e.path, min: e.min ?? 0, max: e.max ?? '*' };
    return copy;
  }

  /**
   * The slice `sliceName` of the element `root` (a re-slice `mrn/sub` of the slice `root:mrn`),
   * added when it is not there: a copy of the sliced element and its children, placed after
   * the last element of its slice group, with min 0 until the differential says otherwise.
   */
  slice(root: string, sliceName: string, id: string): string {
    const sliceId = `${root}:${sliceName}`;
    if (this.indexOf(sliceId) >= 0) return sliceId;
    const slash = sliceName.lastIndexOf('/');
    const sliced = slash < 0 ? root : this.slice(root, sliceName.slice(0, slash), id);
    const at = this.indexOf(sliced);
    if (at < 0) throw this.notInBase(id);
    let end = at + 1;
    while (end < this.elements.length && inSliceGroup(this.elements[end].id ?? '', sliced)) end++;
    const subtree = [this.elements[at], ...this.elements.slice(at + 1, end).filter((e) => isChildOf(e.id ?? '', sliced))];
    const copies = subtree.map((e) => ({ ...structuredClone(e), id: rebase(e.id ?? '', sliced, sliceId) }));
    delete copies[0].slicing;
    copies[0].sliceName = sliceName;
    copies[0].min = 0;
    this.generation.count(copies.length, this.profileUrl);
    this.elements.splice(end, 0, ...copies);
    return sliceId;
  }

  /** `valueQuantity` of `value[x]`: the type slice `value[x]:valueQuantity`, its types narrowed to the one named. */
  private choiceSlice(choiceId: string, name: string, type: string, id: string): string {
    const choice = this.elements[this.indexOf(choiceId)];
    choice.slicing ??= { discriminator: [{ type: 'type', path: '$this' }], ordered: false, rules: 'closed' };
    const sliceId = this.slice(choiceId, name, id);
    const slice = this.elements[this.indexOf(sliceId)];
    slice.type = (slice.type ?? []).filter((t) => t.code === type);
    return sliceId;
  }
}
