import type { OperationOutcomeIssue } from '@medplum/fhirtypes';
import { isObject } from '../json.js';
import { issue } from '../outcome.js';

type Json = Record<string, unknown>;

/**
 * The R4 rules of contained resources and local references (DomainResource dom-2 … dom-5,
 * Reference ref-1) for a resource that is not itself contained: a contained resource holds no
 * contained resources, no meta.versionId / lastUpdated / security and no narrative, and is
 * referenced from elsewhere in the resource (any `#id` value: a reference, a canonical, a uri);
 * a local reference `#id` names a contained resource (`#` alone is the container). Resources
 * nested otherwise (Bundle entries) are their own roots.
 */
export function containedIssues(resource: Json, expr: string): OperationOutcomeIssue[] {
  if (/\.contained\[\d+\]$/.test(expr)) return [];
  const contained = Array.isArray(resource.contained) ? resource.contained : [];
  const ids = new Set(contained.flatMap((c: unknown) => (isObject(c) && typeof c.id === 'string' ? [c.id] : [])));
  const local = new Set<string>();
  const references: Array<{ ref: string; at: string }> = [];
  const walk = (value: unknown, at: string, depth: number, key: string) => {
    if (depth > 64) return;
    if (typeof value === 'string') {
      if (value.startsWith('#')) {
        local.add(value);
        if (key === 'reference') references.push({ ref: value, at });
      }
      return;
    }
    if (Array.isArray(value)) {
      value.forEach((item, i) => walk(item, `${at}[${i}]`, depth + 1, key));
      return;
    }
    if (!isObject(value)) return;
    // Another resource (a Bundle entry, a parameter) has its own contained resources.
    if (depth > 0 && typeof value.resourceType === 'string' && key !== 'contained') return;
    for (const [k, child] of Object.entries(value)) walk(child, `${at}.${k.charCodeAt(0) === 95 ? k.slice(1) : k}`, depth + 1, k);
  };
  walk(resource, expr, 0, '');
  const out: OperationOutcomeIssue[] = [];
  for (const { ref, at } of references) {
    if (ref !== '#' && !ids.has(ref.slice(1))) out.push(issue('invariant', `ref-1: The local reference '${ref}' does not match a contained resource`, at));
  }
  contained.forEach((c: unknown, i) => {
    if (!isObject(c)) return;
    const at = `${expr}.contained[${i}]`;
    const meta = isObject(c.meta) ? c.meta : {};
    if (c.contained !== undefined) out.push(issue('invariant', 'dom-2: A contained resource cannot contain other resources', `${at}.contained`));
    if (meta.versionId !== undefined || meta.lastUpdated !== undefined) {
      out.push(issue('invariant', 'dom-4: A contained resource cannot have a meta.versionId or a meta.lastUpdated', `${at}.meta`));
    }
    if (meta.security !== undefined) out.push(issue('invariant', 'dom-5: A contained resource cannot have a security label', `${at}.meta.security`));
    if (c.text !== undefined) out.push(issue('invariant', 'dom-1: A contained resource cannot have narrative (text)', `${at}.text`));
    if (typeof c.id === 'string' && !local.has(`#${c.id}`) && !local.has('#')) {
      out.push(issue('invariant', `dom-3: The contained resource '${c.id}' is not referenced from elsewhere in the resource`, at));
    }
  });
  return out;
}
