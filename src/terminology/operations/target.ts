import type { ValueSet } from '@medplum/fhirtypes';
import { badRequest, notFound } from '../../fhir/outcome.js';
import type { OperationTarget } from '../../core/operation.js';
import { msg } from '../messages.js';
import { useValueSetSupplements } from '../engine/request-context.js';
import { defaultValueSetVersion, splitCanonical } from '../versions.js';
import { codeSystemByResourceId, resolveCodeSystem, resolveValueSet, valueSetByResourceId } from '../engine/resolve.js';
import type { CodeSystemInfo, TermContext } from '../types.js';

/**
 * The code system or value set an operation works on: the instance of an instance-level call,
 * else the canonical given in the input (errors use the texts of docs/terminology.md#errors).
 */

/** The code system of an instance-level call; 404 `Not found` when the caller cannot see it. */
export async function instanceCodeSystem(tc: TermContext, target: OperationTarget): Promise<CodeSystemInfo> {
  const cs = await codeSystemByResourceId(tc, target.id as string);
  if (!cs) throw notFound();
  return cs;
}

/** A code system by canonical; 404 `CodeSystem <url> not found` when unknown. */
export async function requireCodeSystem(tc: TermContext, url: string, version: string | undefined): Promise<CodeSystemInfo> {
  const cs = await resolveCodeSystem(tc, url, version);
  if (!cs) throw notFound(msg.codeSystemNotFound(version && !url.includes('|') ? `${url}|${version}` : url));
  return cs;
}

/**
 * The value set of a `$validate-code` / `$expand` call: the `valueSet` input, the instance, or
 * `url` (+ `valueSetVersion`). 400 `No ValueSet specified` / `ValueSet <url> not found`.
 */
export async function requireValueSet(
  tc: TermContext,
  target: OperationTarget,
  input: { url?: string; valueSet?: ValueSet; valueSetVersion?: string },
): Promise<ValueSet> {
  const vs = await findValueSet(tc, target, input);
  // A value set may name the supplements its expansion and validation use.
  await useValueSetSupplements(tc, vs);
  return vs;
}

async function findValueSet(tc: TermContext, target: OperationTarget, input: { url?: string; valueSet?: ValueSet; valueSetVersion?: string }): Promise<ValueSet> {
  if (input.valueSet) return input.valueSet;
  if (target.level === 'instance') return (await valueSetByResourceId(tc, target.id as string)) ?? tc.repo.read<ValueSet>('ValueSet', target.id as string);
  if (!input.url) throw badRequest('No ValueSet specified');
  const split = splitCanonical(input.url);
  const byDefault = (input.valueSetVersion ?? split.version) !== undefined ? undefined : defaultValueSetVersion(tc.versionRules, split.url);
  const vs = await resolveValueSet(tc, input.url, input.valueSetVersion ?? byDefault);
  if (!vs) throw valueSetNotFound(byDefault ? `${split.url}|${byDefault}` : input.url);
  return vs;
}

/**
 * The seed (§4.4, §7) fixes this error: 400, one issue with code `invalid`, text naming the
 * value set. (The HL7 tx tests expect issue code `not-found` here; the seed wins.)
 */
export function valueSetNotFound(url: string) {
  return badRequest(msg.valueSetNotFound(url));
}
