import type { ElementDefinition } from '@medplum/fhirtypes';
import { isObject } from '../../fhir/json.js';
import { isBaseTypeUrl, splitCanonical } from '../profile-source.js';
import { baseElement } from './base-element.js';
import type { At, Mode, WalkContext } from './walk-context.js';

const BASE_PREFIX = 'http://hl7.org/fhir/StructureDefinition/';

/**
 * The target of a reference against the element's `targetProfile`s: the type of a literal
 * reference (`Patient/1`, an absolute URL ending so, `#x` → the contained resource's type) must be
 * one the profiles allow. A logical reference (identifier only) or a URL with no type is not judged.
 * In profile mode only targets the profile narrows (a non-base target profile) are checked.
 */
export async function checkReference(ctx: WalkContext, def: ElementDefinition, value: Record<string, unknown>, at: At, mode: Mode): Promise<void> {
  const expr = at.expr;
  const targets = def.type?.find((t) => t.code === 'Reference')?.targetProfile ?? [];
  if (targets.length === 0 || typeof value.reference !== 'string') return;
  if (mode === 'profile') {
    // The base definition's targets are its check: only a narrowed list is the profile's.
    const baseTargets = baseElement(def)?.type?.find((t) => t.code === 'Reference')?.targetProfile ?? [];
    if (targets.length === baseTargets.length && targets.every((t) => baseTargets.includes(t))) return;
  }
  const actual = targetType(at.rootResource ?? ctx.root, value.reference);
  if (!actual) return;
  const allowed = new Set<string>();
  for (const target of targets) {
    const [url] = splitCanonical(target);
    if (url.startsWith(BASE_PREFIX) && isBaseTypeUrl(url)) {
      allowed.add(url.slice(BASE_PREFIX.length));
      continue;
    }
    const resolved = await ctx.source.resolve(target);
    // A target profile the server cannot resolve: its type is unknown, so nothing is judged.
    if (resolved.found !== 'yes') return;
    allowed.add(resolved.profile.type);
  }
  if (allowed.has('Resource') || allowed.has(actual)) return;
  ctx.add('error', 'structure', `The reference points to a ${actual}; this element allows ${[...allowed].join(', ')}`, `${expr}.reference`, 'Reference_REF_BadTargetType');
}

/** The resource type a literal reference names, or undefined when it does not say. */
function targetType(root: Record<string, unknown>, reference: string): string | undefined {
  if (reference.startsWith('#')) {
    const id = reference.slice(1);
    const contained = Array.isArray(root.contained) ? root.contained : [];
    const found: unknown = contained.find((c) => isObject(c) && c.id === id);
    return isObject(found) && typeof found.resourceType === 'string' ? found.resourceType : undefined;
  }
  if (reference.startsWith('urn:')) return undefined;
  const parts = reference.split('?')[0].split('/');
  const history = parts.indexOf('_history');
  const trimmed = history >= 0 ? parts.slice(0, history) : parts;
  if (trimmed.length < 2) return undefined;
  const type = trimmed[trimmed.length - 2];
  return /^[A-Z][A-Za-z]+$/.test(type) ? type : undefined;
}
