import { isObject } from '../fhir/json.js';
import type { ResourceRepository } from '../core/repository.js';
import { FhirError, badRequest, issue } from '../fhir/outcome.js';
import { conditionalQuery } from './conditional.js';

/** `Type?search`: a conditional reference (FHIR R4 http.html#trules). */
export const CONDITIONAL_REFERENCE = /^([A-Z][A-Za-z]+)\?(.+)$/;

type Json = Record<string, unknown>;

/**
 * The conditional references one Bundle resolved (docs/rest.md#conditional-references): each
 * distinct criteria (normalised, as conditional.ts reads them) is searched once, however many
 * entries repeat it — a Synthea-shaped Bundle names the same `Organization?identifier=…`
 * hundreds of times. An entry that writes a resource of a type drops what was resolved for that
 * type: the next reference to it searches again and sees the write.
 */
export class ResolvedReferences {
  private readonly byType = new Map<string, Map<string, string>>();

  get(type: string, key: string): string | undefined {
    return this.byType.get(type)?.get(key);
  }

  set(type: string, key: string, target: string): void {
    let resolved = this.byType.get(type);
    if (!resolved) this.byType.set(type, (resolved = new Map<string, string>()));
    resolved.set(key, target);
  }

  /** An entry wrote (created, updated, patched or deleted) a resource of `type`. */
  written(type: string | undefined): void {
    if (type) this.byType.delete(type);
  }
}

/**
 * A conditional reference's single match as `Type/id` (docs/rest.md#conditional-references):
 * no match → 400, several → 412 (as a conditional update's several matches). Anything else is
 * returned unchanged. With `resolved`, criteria the Bundle resolved before are not searched again.
 */
export async function resolveConditionalReference(repo: ResourceRepository, reference: string, resolved?: ResolvedReferences): Promise<string> {
  const conditional = CONDITIONAL_REFERENCE.exec(reference);
  if (!conditional) return reference;
  const [, type, search] = conditional;
  const query = conditionalQuery(type, [...new URLSearchParams(search)], `Conditional reference '${reference}'`);
  const key = new URLSearchParams(query.params).toString();
  const known = resolved?.get(type, key);
  if (known) return known;
  const result = await repo.search({ resourceType: type, params: [...query.params, ['_count', '2']] });
  if (result.resources.length === 0) throw badRequest(`conditional reference '${reference}' matches no resource`);
  if (result.resources.length > 1) throw new FhirError(412, [issue('conflict', `conditional reference '${reference}' matches several resources`)]);
  const target = `${type}/${result.resources[0].id}`;
  resolved?.set(type, key, target);
  return target;
}

/**
 * The resource with every conditional reference (`Type?search`) replaced by its single match —
 * in a plain create or update as in a batch or transaction entry, so none is ever stored as text.
 * Returns the input itself when it holds none.
 */
export async function resolveConditionalReferences<T>(repo: ResourceRepository, value: T, resolved?: ResolvedReferences): Promise<T> {
  if (!holdsConditional(value)) return value;
  return (await resolveIn(repo, value, resolved)) as T;
}

function holdsConditional(value: unknown): boolean {
  if (Array.isArray(value)) return value.some(holdsConditional);
  if (!isObject(value)) return false;
  return Object.entries(value).some(([key, v]) => (key === 'reference' && typeof v === 'string' ? CONDITIONAL_REFERENCE.test(v) : holdsConditional(v)));
}

async function resolveIn(repo: ResourceRepository, value: unknown, resolved: ResolvedReferences | undefined): Promise<unknown> {
  // One element at a time: the lookups may share a transaction's connection (no concurrent queries on it).
  if (Array.isArray(value)) {
    const out: unknown[] = [];
    for (const item of value) out.push(await resolveIn(repo, item, resolved));
    return out;
  }
  if (!isObject(value)) return value;
  const out: Json = {};
  for (const [key, v] of Object.entries(value)) {
    out[key] = key === 'reference' && typeof v === 'string' ? await resolveConditionalReference(repo, v, resolved) : await resolveIn(repo, v, resolved);
  }
  return out;
}
