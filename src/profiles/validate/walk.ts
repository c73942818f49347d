import type { ElementDefinition } from '@medplum/fhirtypes';
import { isObject } from '../../fhir/json.js';
import { choiceBase, type CompiledProfile, type ElementNode } from '../element-tree.js';
import { baseProfile } from '../profile-source.js';
import { collectBinding } from './bindings.js';
import { checkExtension } from './extensions.js';
import { checkInvariants } from './invariants.js';
import { assignSlices } from './slicing.js';
import { checkReference } from './references.js';
import { checkValue } from './values.js';
import type { At, Mode, Walker, WalkContext } from './walk-context.js';

export type { At, Mode };

const PRIMITIVE = /^[a-z]/;

/** The walk, for the checks that validate nested content through it. */
export const walker: Walker = { visitItem: (...args) => visitItem(...args), validateAgainst: (...args) => validateAgainst(...args) };

/** Validates `value` (a resource, or an element of `profile.type`) against the profile's root. */
export async function validateAgainst(ctx: WalkContext, profile: CompiledProfile, value: unknown, at: At, mode: Mode): Promise<void> {
  await visitItem(ctx, profile.root, value, { ...at, base: profile.type, type: profile.type }, mode);
}

/** One item: its own checks, then its children (from the profile, else from its type's definition). */
export async function visitItem(ctx: WalkContext, node: ElementNode, value: unknown, at: At, mode: Mode): Promise<void> {
  await ctx.tick(1 + (node.def.constraint?.length ?? 0));
  const def = node.def;
  checkValue(ctx, def, value, at.expr);
  if (mode === 'profile') collectBinding(ctx, def, at.type, value, at.expr);
  await checkInvariants(ctx, def, value, at, mode);
  if (at.type === 'Reference' && isObject(value)) await checkReference(ctx, def, value, at, mode);
  if (!isObject(value)) return;
  if (node.children.length > 0) {
    await visitChildren(ctx, node, value, at, mode);
    return;
  }
  // No children in this snapshot: the type's own profile, else (base mode) the type's definition.
  const typeProfiles = def.type?.find((t) => t.code === at.type)?.profile ?? [];
  if (typeProfiles.length > 0 && mode === 'profile') {
    for (const canonical of typeProfiles) {
      const resolved = await ctx.source.resolve(canonical);
      if (resolved.found === 'yes') await validateAgainst(ctx, resolved.profile, value, at, 'profile');
    }
    return;
  }
  if (mode !== 'base') return;
  const type = at.type === 'Resource' || at.type === 'DomainResource' ? (typeof value.resourceType === 'string' ? value.resourceType : undefined) : at.type;
  if (!type || PRIMITIVE.test(type) || type === 'Element' || type === 'BackboneElement') return;
  const definition = baseProfile(type);
  if (!definition) return;
  const isResource = definition.sd.kind === 'resource';
  if (!isResource) {
    await validateAgainst(ctx, definition, value, at, 'base');
    return;
  }
  const contained = at.path.endsWith('.contained');
  const rootResource = contained ? (at.rootResource ?? ctx.root) : value;
  await validateAgainst(ctx, definition, value, { ...at, path: type, resource: value, rootResource }, 'base');
}

/** The children of one object: cardinality, slicing, extensions, then each item. */
async function visitChildren(ctx: WalkContext, node: ElementNode, obj: Record<string, unknown>, at: At, mode: Mode): Promise<void> {
  for (const child of node.children) {
    const def = child.def;
    const choice = choiceBase(child.name);
    const name = choice ?? child.name;
    const present = presentKeys(obj, child, choice);
    const items: Array<{ value: unknown; key: string; expr: string; type: string }> = [];
    let count = 0;
    for (const { key, type } of present) {
      const raw = obj[key];
      if (raw === undefined) {
        count++; // only `_key` (a primitive with extensions)
        continue;
      }
      const list = Array.isArray(raw) ? raw : [raw];
      count += list.length;
      list.forEach((value: unknown, i) => items.push({ value, key, expr: Array.isArray(raw) ? `${at.expr}.${key}[${i}]` : `${at.expr}.${key}`, type }));
      if (mode === 'profile' && choice && type === '' && def.type && def.type.length > 0) {
        ctx.add('error', 'structure', `Type ${key.slice(name.length)} is not allowed here by the profile: ${child.name} allows ${def.type.map((t) => t.code).join(', ')}`, `${at.expr}.${key}`, 'Validation_VAL_Profile_WrongType');
      }
    }
    if (mode === 'profile') checkCardinality(ctx, def, count, `${at.expr}.${present[0]?.key ?? name}`, child.name);
    if (mode === 'base') for (const { key, type } of present) await primitiveExtensions(ctx, obj[`_${key}`], { ...at, expr: `${at.expr}._${key}`, path: `${at.path}.${name}`, base: `${at.base}.${name}`, type: type || (def.type?.[0]?.code ?? '') });
    const assigned = child.slices.length > 0 ? await assignSlices(ctx, child, items, `${at.expr}.${name}`, mode) : [];
    const isExtension = child.name === 'extension' || child.name === 'modifierExtension';
    for (let i = 0; i < items.length; i++) {
      const item = items[i];
      const slice = assigned[i];
      const target = slice ?? child;
      const type = item.type || (target.def.type?.length === 1 ? (target.def.type[0].code ?? '') : '');
      const itemAt: At = { ...at, expr: item.expr, base: `${at.base}.${name}`, path: `${at.path}.${name}`, type };
      if (isExtension && !slice && mode === 'base') await checkExtension(ctx, item.value, at, child.name === 'modifierExtension', item.expr);
      await visitItem(ctx, target, item.value, itemAt, mode);
    }
  }
}

/** The extensions of a primitive (`_birthDate`, `_given[i]`): each checked as an extension of that element. */
async function primitiveExtensions(ctx: WalkContext, shadow: unknown, at: At): Promise<void> {
  const items = Array.isArray(shadow) ? shadow.map((s: unknown, i) => [s, `${at.expr}[${i}]`] as const) : shadow === undefined ? [] : [[shadow, at.expr] as const];
  for (const [item, expr] of items) {
    if (!isObject(item) || !Array.isArray(item.extension)) continue;
    for (const [i, ext] of (item.extension as unknown[]).entries()) await checkExtension(ctx, ext, at, false, `${expr}.extension[${i}]`);
  }
}

/** The JSON keys of `obj` that hold the child (`valueQuantity` for `value[x]`), with the type each names ('' = not allowed). */
function presentKeys(obj: Record<string, unknown>, child: ElementNode, choice: string | undefined): Array<{ key: string; type: string }> {
  if (!choice) {
    const has = obj[child.name] !== undefined || obj[`_${child.name}`] !== undefined;
    return has ? [{ key: child.name, type: '' }] : [];
  }
  const found: Array<{ key: string; type: string }> = [];
  for (const key of Object.keys(obj)) {
    const plain = key.startsWith('_') ? key.slice(1) : key;
    if (plain.length <= choice.length || !plain.startsWith(choice) || !/[A-Z]/.test(plain[choice.length])) continue;
    if (key !== plain && obj[plain] !== undefined) continue;
    const suffix = plain.slice(choice.length);
    const type = child.def.type?.find((t) => upperFirst(t.code ?? '') === suffix)?.code ?? '';
    found.push({ key: plain, type });
  }
  return found;
}

function upperFirst(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

/** min/max of the profile where it differs from the base definition (the structural check has the base's). */
export function checkCardinality(ctx: WalkContext, def: ElementDefinition, count: number, expr: string, label: string): void {
  const min = def.min ?? 0;
  const max = def.max === undefined || def.max === '*' ? Infinity : Number(def.max);
  const sameAsBase = def.base && def.base.min === def.min && def.base.max === def.max && !def.sliceName;
  if (sameAsBase) return;
  if (count < min) {
    ctx.add('error', 'required', `${label}: minimum required = ${min}, but only found ${count}`, expr, 'Validation_VAL_Profile_Minimum');
  }
  if (count > max) {
    ctx.add('error', 'structure', `${label}: maximum allowed = ${max}, but found ${count}`, expr, 'Validation_VAL_Profile_Maximum');
  }
}
