import type { Resource } from '@medplum/fhirtypes';
import type { RequestContext } from '../../core/context.js';
import { FhirError, badRequest } from '../../fhir/outcome.js';
import { heard } from '../../storage/change-feed.js';
import { txIssueOutcome } from '../issues.js';
import { msg } from '../messages.js';
import { inlineCodeSystem } from '../providers/select.js';
import { resolveSupplement } from './resolve.js';
import type { TermContext, TerminologyEnv } from '../types.js';
import { parseVersionRules } from '../versions.js';

/**
 * The engine's view of one request, including resources supplied inline (`tx-resource`).
 *
 * `useSupplement` canonicals are resolved here (404 when unknown or not a supplement).
 *
 * Inline CodeSystems get an in-memory index like the one of a stored code system
 * (docs/terminology.md#request-supplied-resources) and are never persisted: the one engine
 * answers for both, and nobody else sees them.
 */
export async function termContext(env: TerminologyEnv, ctx: RequestContext, input: object): Promise<TermContext> {
  rejectNul(input);
  // Every change committed before this request has reached the caches (PostgreSQL: one round
  // trip on the listening connection, shared by concurrent requests), so none answers from a
  // version another node already replaced (docs/terminology.md#in-memory-index). When the
  // connection is lost the caches keep nothing anyway; when it does not answer within the
  // waiting limit, 503 (docs/errors.md#database-limits).
  await heard(env.db.caughtUp(ctx.since));
  const txResources = (input as { 'tx-resource'?: unknown })['tx-resource'];
  const tc: TermContext = {
    db: env.db,
    repo: ctx.repo,
    env,
    log: ctx.log,
    inlineCodeSystems: [],
    inlineValueSets: [],
    supplements: [],
    versionRules: parseVersionRules(input as Record<string, unknown>),
    memo: new Map(),
  };
  for (const r of Array.isArray(txResources) ? (txResources as Resource[]) : []) {
    if (r?.resourceType === 'ValueSet') tc.inlineValueSets.push(r);
    else if (r?.resourceType === 'CodeSystem' && r.url) {
      tc.inlineCodeSystems.push(await inlineCodeSystem(tc, r));
    }
  }
  const wanted = (input as { useSupplement?: unknown }).useSupplement;
  for (const url of Array.isArray(wanted) ? (wanted as string[]) : []) await useSupplement(tc, url);
  return tc;
}

const VALUESET_SUPPLEMENT = 'http://hl7.org/fhir/StructureDefinition/valueset-supplement';

/**
 * Makes a supplement apply to the request (its designations and properties): the
 * `useSupplement` parameter, or a value set's `valueset-supplement` extension. 404 when the
 * canonical names no supplement the caller can see.
 */
export async function useSupplement(tc: TermContext, url: string, status = 404): Promise<void> {
  const supplement = await resolveSupplement(tc, url);
  if (!supplement) {
    throw new FhirError(status, txIssueOutcome([{ severity: 'error', code: 'not-found', type: 'not-found', id: 'VALUESET_SUPPLEMENT_MISSING', text: msg.supplementNotFound(url) }]));
  }
  if (!tc.supplements.some((s) => s.key === supplement.key)) tc.supplements.push(supplement);
}

/**
 * The supplements a value set asks for with the `valueset-supplement` extension
 * (docs/terminology.md#expand): one that cannot be found makes the value set unusable, a 400.
 */
export async function useValueSetSupplements(tc: TermContext, vs: { extension?: Array<{ url?: string; valueCanonical?: string; valueUri?: string }> }): Promise<void> {
  for (const e of vs.extension ?? []) {
    const url = e.url === VALUESET_SUPPLEMENT ? (e.valueCanonical ?? e.valueUri) : undefined;
    if (url) await useSupplement(tc, url, 400);
  }
}

/**
 * PostgreSQL text cannot hold NUL: a NUL anywhere in the input is the client's mistake (400),
 * not a database error (500).
 */
function rejectNul(value: unknown, depth = 0): void {
  if (typeof value === 'string') {
    if (value.includes('\u0000')) throw badRequest('Invalid value: text contains a NUL character');
  } else if (value && typeof value === 'object' && depth < 64) {
    for (const v of Object.values(value)) rejectNul(v, depth + 1);
  }
}

/**
 * The request's Accept-Language header (the HTTP adapter puts it on the request context); a
 * `displayLanguage` parameter takes precedence over it (docs/terminology.md#displays-and-languages).
 */
export function acceptLanguage(ctx: RequestContext): string | undefined {
  return ctx.acceptLanguage;
}
