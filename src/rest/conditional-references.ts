import { isObject } from '../fhir/json.js';
import type { ResourceRepository } from '../core/repository.js';
import { FhirError, badRequest, issue } from '../fhir/outcome.js';
import { conditionalQuery } from './conditional.js';

/** `Type?search`: a conditional reference (FHIR R4 http.html#trules). */
export const CONDITIONAL_REFERENCE = /^([A-Z][A-Za-z]+)\?(.+)$/;

type Json = Record<string, unknown>;

/**
 * A conditional reference's single match as `Type/id` (docs/rest.md#conditional-references):
 * no match → 400, several → 412 (as a conditional update's several matches). Anything else is
 * returned unchanged.
 */
export async function resolveConditionalReference(repo: ResourceRepository, reference: string): Promise<string> {
  const conditional = CONDITIONAL_REFERENCE.exec(reference);
  if (!conditional) return reference;
  const [, type, search] = conditional;
  const query = conditionalQuery(type, [...new URLSearchParams(search)], `Conditional reference '${reference}'`);
  const result = await repo.search({ resourceType: type, params: [...query.params, ['_count', '2']] });
  if (result.resources.length === 0) throw badRequest(`conditional reference '${reference}' matches no resource`);
  if (result.resources.length > 1) throw new FhirError(412, [issue('conflict', `conditional reference '${reference}' matches several resources`)]);
  return `${type}/${result.resources[0].id}`;
}

/**
 * The resource with every conditional reference (`Type?search`) replaced by its single match —
 * in a plain create or update as in a batch or transaction entry, so none is ever stored as text.
 * Returns the input itself when it holds none.
 */
export async function resolveConditionalReferences<T>(repo: ResourceRepository, value: T): Promise<T> {
  if (!holdsConditional(value)) return value;
  return (await resolveIn(repo, value)) as T;
}

function holdsConditional(value: unknown): boolean {
  if (Array.isArray(value)) return value.some(holdsConditional);
  if (!isObject(value)) return false;
  return Object.entries(value).some(([key, v]) => (key === 'reference' && typeof v === 'string' ? CONDITIONAL_REFERENCE.test(v) : holdsConditional(v)));
}

async function resolveIn(repo: ResourceRepository, value: unknown): Promise<unknown> {
  // One element at a time: the lookups may share a transaction's connection (no concurrent queries on it).
  if (Array.isArray(value)) {
    const out: unknown[] = [];
    for (const item of value) out.push(await resolveIn(repo, item));
    return out;
  }
  if (!isObject(value)) return value;
  const out: Json = {};
  for (const [key, v] of Object.entries(value)) {
    out[key] = key === 'reference' && typeof v === 'string' ? await resolveConditionalReference(repo, v) : await resolveIn(repo, v);
  }
  return out;
}
