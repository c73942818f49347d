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
  /** Per type: matches by normalised criteria, matches and refusals by the reference as written. */
  private readonly types = new Map<string, { byKey: Map<string, string>; byReference: Map<string, string>; failures: Map<string, FhirError> }>();

  private of(type: string) {
    let held = this.types.get(type);
    if (!held) this.types.set(type, (held = { byKey: new Map(), byReference: new Map(), failures: new Map() }));
    return held;
  }

  get(type: string, key: string): string | undefined {
    return this.types.get(type)?.byKey.get(key);
  }

  set(type: string, key: string, target: string): void {
    this.of(type).byKey.set(key, target);
  }

  /** The match of `reference` (as written) resolved before, if its type was not written since (no parse of its search again). */
  known(type: string, reference: string): string | undefined {
    return this.types.get(type)?.byReference.get(reference);
  }

  remember(type: string, reference: string, target: string): void {
    this.of(type).byReference.set(reference, target);
  }

  /** What a reference's search refused (no match, several), searched ahead (`resolveAhead`): thrown when an entry uses it, until its type is written. */
  failure(type: string, reference: string): FhirError | undefined {
    return this.types.get(type)?.failures.get(reference);
  }

  failed(type: string, reference: string, err: FhirError): void {
    this.of(type).failures.set(reference, err);
  }

  /** An entry wrote (created, updated, patched or deleted) a resource of `type`. */
  written(type: string | undefined): void {
    if (type) this.types.delete(type);
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
  const again = resolved?.known(type, reference);
  if (again) return again;
  const refused = resolved?.failure(type, reference);
  if (refused) throw refused;
  const query = conditionalQuery(type, [...new URLSearchParams(search)], `Conditional reference '${reference}'`);
  const key = new URLSearchParams(query.params).toString();
  let target = resolved?.get(type, key);
  if (!target) {
    const result = await repo.search({ resourceType: type, params: [...query.params, ['_count', '2']] });
    if (result.resources.length === 0) throw badRequest(`conditional reference '${reference}' matches no resource`);
    if (result.resources.length > 1) throw new FhirError(412, [issue('conflict', `conditional reference '${reference}' matches several resources`)]);
    target = `${type}/${result.resources[0].id}`;
    resolved?.set(type, key, target);
  }
  resolved?.remember(type, reference, target);
  return target;
}

/**
 * Resolves, before any entry is processed, the conditional references of a transaction whose
 * type no entry writes (docs/rest.md#conditional-references): what they match cannot change
 * within the Bundle, so searching them first gives the same answers, and the creates are not
 * interrupted by a search (each of which writes the creates held before it). A reference that
 * matches nothing or several (or whose criteria are refused) is refused when an entry uses it,
 * as before. `references` in processing order; each distinct criteria is searched once.
 */
export async function resolveAhead(repo: ResourceRepository, references: Iterable<string>, written: ReadonlySet<string>, resolved: ResolvedReferences): Promise<void> {
  for (const reference of references) {
    const conditional = CONDITIONAL_REFERENCE.exec(reference);
    if (!conditional || written.has(conditional[1])) continue;
    const type = conditional[1];
    if (resolved.known(type, reference) || resolved.failure(type, reference)) continue;
    try {
      await resolveConditionalReference(repo, reference, resolved);
    } catch (err) {
      if (!(err instanceof FhirError)) throw err;
      resolved.failed(type, reference, err); // thrown when an entry resolves it, with the entry's index
    }
  }
}

/** Every `reference` string inside a value, in document order. */
export function referencesIn(value: unknown, out: string[] = []): string[] {
  if (Array.isArray(value)) {
    for (const item of value) referencesIn(item, out);
  } else if (isObject(value)) {
    for (const key in value) {
      const v = value[key];
      if (key === 'reference' && typeof v === 'string') out.push(v);
      else if (typeof v === 'object' && v !== null) referencesIn(v, out);
    }
  }
  return out;
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
