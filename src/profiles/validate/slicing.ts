import type { ElementDefinitionSlicingDiscriminator } from '@medplum/fhirtypes';
import { isObject } from '../../fhir/json.js';
import type { ElementNode } from '../element-tree.js';
import { splitCanonical } from '../profile-source.js';
import { jsonEqual, matchesPattern, prefixed } from './values.js';
import type { Mode, WalkContext } from './walk-context.js';

interface Item {
  value: unknown;
  expr: string;
  type: string;
}

/**
 * Which slice each item of a sliced element belongs to (undefined: none), by the slicing's
 * discriminators (`value`, `pattern`, `exists`, `type`, `profile`); then the slicing's rules:
 * each slice's min/max, `closed` (an item in no slice is an error), `openAtEnd` (such items come
 * last) and `ordered` (items in the order of the slices).
 */
export async function assignSlices(ctx: WalkContext, element: ElementNode, items: Item[], expr: string, mode: Mode): Promise<Array<ElementNode | undefined>> {
  const slicing = element.def.slicing;
  const discriminators = slicing?.discriminator ?? (isExtensionList(element) ? BY_URL : []);
  const assigned: Array<ElementNode | undefined> = [];
  for (const item of items) {
    let match: ElementNode | undefined;
    if (discriminators.length > 0) {
      for (const slice of element.slices) {
        if (await matchesSlice(ctx, slice, item, discriminators)) {
          match = slice;
          break;
        }
      }
    }
    assigned.push(match);
  }
  if (mode === 'base' || discriminators.length === 0) return assigned;
  for (const slice of element.slices) {
    const count = assigned.filter((s) => s === slice).length;
    const min = slice.def.min ?? 0;
    const max = slice.def.max === undefined || slice.def.max === '*' ? Infinity : Number(slice.def.max);
    const label = `${element.name}:${slice.def.sliceName ?? '?'}`;
    if (count < min) ctx.add('error', 'required', `Slice ${label}: minimum required = ${min}, but only found ${count}`, expr, 'Validation_VAL_Profile_Minimum');
    if (count > max) ctx.add('error', 'structure', `Slice ${label}: maximum allowed = ${max}, but found ${count}`, expr, 'Validation_VAL_Profile_Maximum');
  }
  const rules = slicing?.rules ?? 'open';
  let lastSliceIndex = -1;
  assigned.forEach((slice, i) => {
    if (!slice) {
      if (rules === 'closed') ctx.add('error', 'structure', `This element does not match any slice of ${element.name} and the slicing is closed`, items[i].expr, 'Validation_VAL_Profile_NotSlice');
      return;
    }
    if (rules === 'openAtEnd' && assigned.slice(0, i).some((s) => s === undefined)) {
      ctx.add('error', 'structure', `Items in no slice of ${element.name} must come after the sliced ones (openAtEnd)`, items[i].expr, 'Validation_VAL_Profile_OutOfOrder');
    }
    const sliceIndex = element.slices.indexOf(slice);
    if (slicing?.ordered && sliceIndex < lastSliceIndex) {
      ctx.add('error', 'structure', `Slice ${slice.def.sliceName ?? '?'} is out of order: the slices of ${element.name} are ordered`, items[i].expr, 'Validation_VAL_Profile_OutOfOrder');
    }
    lastSliceIndex = Math.max(lastSliceIndex, sliceIndex);
  });
  return assigned;
}

/** Extensions are always sliced by url (R4 extensibility.html): also when a snapshot states no slicing. */
const BY_URL: ElementDefinitionSlicingDiscriminator[] = [{ type: 'value', path: 'url' }];

function isExtensionList(element: ElementNode): boolean {
  return element.slices.length > 0 && /\.(extension|modifierExtension)$/.test(element.def.path ?? '');
}

async function matchesSlice(ctx: WalkContext, slice: ElementNode, item: Item, discriminators: ElementDefinitionSlicingDiscriminator[]): Promise<boolean> {
  for (const d of discriminators) {
    await ctx.tick();
    const path = d.path ?? '$this';
    const values = navigate(item.value, path);
    const target = descend(slice, path);
    const extensionUrl = path === 'url' ? slice.def.type?.[0]?.profile?.[0] : undefined;
    if (!target && extensionUrl && (d.type === 'value' || d.type === 'pattern')) {
      // An extension slice names its definition by type profile; its children are not expanded.
      if (!values.includes(splitCanonical(extensionUrl)[0])) return false;
      continue;
    }
    if (!target) return false;
    const def = target.def;
    if (d.type === 'value' || d.type === 'pattern') {
      const fixed = prefixed(def, 'fixed');
      const pattern = prefixed(def, 'pattern');
      if (fixed !== undefined) {
        if (!values.some((v) => jsonEqual(v, fixed))) return false;
      } else if (pattern !== undefined) {
        if (!values.some((v) => matchesPattern(v, pattern))) return false;
      } else if (path === 'url' && slice.def.type?.[0]?.profile?.[0]) {
        // An extension slice names its definition by type profile, not by a fixed url.
        const url = splitCanonical(slice.def.type[0].profile[0])[0];
        if (!values.includes(url)) return false;
      } else return false;
    } else if (d.type === 'exists') {
      if ((def.min ?? 0) >= 1 && values.length === 0) return false;
      if (def.max === '0' && values.length > 0) return false;
    } else if (d.type === 'type') {
      const codes = (def.type ?? []).map((t) => t.code);
      const actual = path === '$this' && item.type ? [item.type] : values.map((v) => (isObject(v) && typeof v.resourceType === 'string' ? v.resourceType : undefined));
      if (!actual.some((t) => t !== undefined && codes.includes(t))) return false;
    } else if (d.type === 'profile') {
      const profiles = (def.type ?? []).flatMap((t) => [...(t.profile ?? []), ...(t.targetProfile ?? [])]);
      if (!(await conformsToAny(ctx, profiles, values, item))) return false;
    } else return false;
  }
  return true;
}

/** Does one of the values conform to one of the profiles? Checked quietly (the issues are dropped). */
async function conformsToAny(ctx: WalkContext, profiles: string[], values: unknown[], item: Item): Promise<boolean> {
  for (const canonical of profiles) {
    const resolved = await ctx.source.resolve(canonical);
    if (resolved.found !== 'yes') continue;
    for (const value of values) {
      const issues = ctx.issues.length;
      const bindings = ctx.bindings.length;
      const type = resolved.profile.type;
      await ctx.walker.visitItem(ctx, resolved.profile.root, value, { expr: item.expr, base: type, path: type, type }, 'profile');
      const failed = ctx.issues.slice(issues).some((i) => i.severity === 'error' || i.severity === 'fatal');
      ctx.issues.length = issues;
      ctx.bindings.length = bindings;
      if (!failed) return true;
    }
  }
  return false;
}

/** The values at a discriminator path (`code.coding.system`, `$this`, `extension('url')`, `ofType(T)`, `resolve()` on contained only). */
function navigate(value: unknown, path: string): unknown[] {
  let current: unknown[] = [value];
  for (const step of splitPath(path)) {
    if (step === '$this') continue;
    const ext = /^extension\((['"])(.*)\1\)$/.exec(step);
    const ofType = /^ofType\((\w+)\)$/.exec(step);
    if (ext) {
      current = current.flatMap((v): unknown[] => (isObject(v) && Array.isArray(v.extension) ? (v.extension as unknown[]).filter((e) => isObject(e) && e.url === ext[2]) : []));
    } else if (ofType) {
      continue; // the type is the element's, checked by the slice's own type
    } else if (step === 'resolve()') {
      return [];
    } else {
      current = current.flatMap((v): unknown[] => {
        if (!isObject(v)) return [];
        const next = v[step];
        return next === undefined ? [] : Array.isArray(next) ? (next as unknown[]) : [next];
      });
    }
  }
  return current;
}

/** The element of a slice at a discriminator path (children by name, `extension('url')` by its slice). */
function descend(slice: ElementNode, path: string): ElementNode | undefined {
  let node: ElementNode | undefined = slice;
  for (const step of splitPath(path)) {
    if (!node) return undefined;
    if (step === '$this' || /^ofType\(/.test(step)) continue;
    const ext = /^extension\((['"])(.*)\1\)$/.exec(step);
    if (ext) {
      const extension: ElementNode | undefined = node.children.find((c) => c.name === 'extension');
      node = extension?.slices.find((s) => s.def.type?.some((t) => t.profile?.some((p) => splitCanonical(p)[0] === ext[2])));
      continue;
    }
    const n: ElementNode = node;
    node = n.children.find((c) => c.name === step || c.name === `${step}[x]`);
  }
  return node;
}

function splitPath(path: string): string[] {
  const steps: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < path.length; i++) {
    if (path[i] === '(') depth++;
    else if (path[i] === ')') depth--;
    else if (path[i] === '.' && depth === 0) {
      steps.push(path.slice(start, i));
      start = i + 1;
    }
  }
  steps.push(path.slice(start));
  return steps.filter(Boolean);
}
