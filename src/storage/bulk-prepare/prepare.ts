import type { OperationOutcomeIssue, Resource } from '@medplum/fhirtypes';
import { extractRows } from '../search/extract.js';
import type { IndexRows } from '../search/index-rows.js';
import { copyLines } from '../copy-load.js';

/**
 * The per-resource work of a bulk load's batch (docs/rest.md#bulk-load), done in a worker thread
 * of the pool (pool.ts) or, without one, in the caller's: validation, the references the batch
 * makes, the search-index rows and their COPY text, and the stored JSON. Pure: the same input
 * gives the same output in either thread.
 */
export interface PrepareInput {
  resources: Resource[];
  /** Where each came from (`line 12`, `entry 3`): named by a refusal. */
  wheres: string[];
  /** Validate each resource first (the structural R4 validation: validate-resource.ts). */
  validate: boolean;
  projectId: string | undefined;
  /** `meta.lastUpdated` of the batch. */
  now: string;
}

export interface PreparedResource {
  /** The stored JSON: the resource with its meta (versionId 1, lastUpdated, project). */
  content: string;
  /** Per table of COPY_TABLES (copy-load.ts): this resource's lines, `''` for none. */
  copy: string[];
  /** Its `_text`/`_content` rows (the database computes their tsvector). */
  text: IndexRows['text'];
  /** Each relative reference it makes (`Type/id`, `Type/id/_history/v`), once each, in document order. */
  refs: string[];
}

export interface Prepared {
  resources: PreparedResource[];
  /** The first refusal in input order, worded for the user (`line 12: …`); `resources` is then empty. */
  problem?: string;
}

/** A relative reference (`Type/id`, optionally with its version): the load checks what it names. */
export const RELATIVE = /^([A-Z][A-Za-z]+)\/([A-Za-z0-9\-.]{1,64})(\/_history\/[^/]+)?$/;

/**
 * Prepares one batch. Every resource is validated before any is indexed, so a refusal names the
 * first invalid resource of the batch before any reference problem (the order the in-thread load
 * always reported them in). `validate` runs the structural validation where the input asks for it.
 */
export function prepareBatch(input: PrepareInput, validate: ((resource: Resource) => OperationOutcomeIssue[]) | undefined): Prepared {
  const { resources, wheres } = input;
  if (input.validate && validate) {
    for (let i = 0; i < resources.length; i++) {
      const problem = firstProblem(validate(resources[i]));
      if (problem) return { resources: [], problem: `${wheres[i]}: ${problem}` };
    }
  }
  const out: PreparedResource[] = [];
  for (let i = 0; i < resources.length; i++) {
    const resource = resources[i];
    const refs = new Set<string>();
    let unresolved: string | undefined;
    visitReferences(resource, (reference) => {
      if (reference.startsWith('urn:uuid:')) unresolved ??= reference;
      if (RELATIVE.test(reference)) refs.add(reference);
    });
    // A Bundle's `urn:uuid:` references were rewritten before (bulk-load.ts): one left names no entry.
    if (unresolved) return { resources: [], problem: `${wheres[i]}: reference ${unresolved} is to no entry of the Bundle before it or in its batch` };
    const rows = extractRows(resource);
    const meta = { ...(resource.meta ?? {}), versionId: '1', lastUpdated: input.now, project: input.projectId } as Record<string, unknown>;
    if (!input.projectId) delete meta.project;
    out.push({
      content: JSON.stringify({ ...resource, meta }),
      copy: copyLines(resource.resourceType, resource.id as string, input.now, rows),
      text: rows.text,
      refs: [...refs],
    });
  }
  return { resources: out };
}

/** The first error of `issues` as a refusal's text (`… (Patient.name)`), or undefined. */
export function firstProblem(issues: OperationOutcomeIssue[]): string | undefined {
  const first = issues.find((p) => p.severity === 'error' || p.severity === 'fatal');
  if (!first) return undefined;
  const text = first.diagnostics ?? first.details?.text ?? first.code;
  const at = first.expression?.[0];
  return at ? `${text} (${at})` : text;
}

/** Calls `fn` with each `reference` string in `value`. */
function visitReferences(value: unknown, fn: (reference: string) => void): void {
  if (Array.isArray(value)) {
    for (const item of value) if (item !== null && typeof item === 'object') visitReferences(item, fn);
    return;
  }
  if (value === null || typeof value !== 'object') return;
  for (const key in value as Record<string, unknown>) {
    const child = (value as Record<string, unknown>)[key];
    if (key === 'reference' && typeof child === 'string') fn(child);
    else if (child !== null && typeof child === 'object') visitReferences(child, fn);
  }
}
