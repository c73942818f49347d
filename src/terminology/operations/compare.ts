import type { ValueSet } from '@medplum/fhirtypes';
import { badRequest } from '../../fhir/outcome.js';
import type { Operation } from '../../core/operation.js';
import type { TerminologyEnv, TermContext } from '../types.js';
import { compareValueSets } from '../engine/compare.js';
import { termContext, useValueSetSupplements } from '../engine/request-context.js';
import { resolveValueSet } from '../engine/resolve.js';
import { loadDefinition } from '../../operations/definitions/index.js';
import { valueSetNotFound } from './target.js';

interface CompareInput {
  thisUrl?: string;
  thisVersion?: string;
  thisValueSet?: ValueSet;
  otherUrl?: string;
  otherVersion?: string;
  otherValueSet?: ValueSet;
  diagnostics?: boolean;
  'tx-resource'?: unknown[];
}

/** One side of the comparison: the value set given, or the one its url (and version) names. */
async function side(tc: TermContext, which: 'this' | 'other', vs: ValueSet | undefined, url: string | undefined, version: string | undefined): Promise<ValueSet> {
  if (vs && url) throw badRequest(`Give either ${which}ValueSet or ${which}Url, not both`);
  let found = vs;
  if (!found) {
    if (!url) throw badRequest(`No ${which} value set specified (${which}Url or ${which}ValueSet)`);
    found = await resolveValueSet(tc, url, version);
    if (!found) throw valueSetNotFound(version && !url.includes('|') ? `${url}|${version}` : url);
  }
  await useValueSetSupplements(tc, found);
  return found;
}

/** Codes for an output: without their systems, each once, in code order; absent when none. */
function codeList(codes: string[] | undefined): string | undefined {
  if (!codes?.length) return undefined;
  return [...new Set(codes.map((c) => c.slice(c.lastIndexOf('|') + 1)))].sort().join(',');
}

/** `ValueSet/$compare` (docs/terminology.md#compare), type level. */
export function compareOperation(env: TerminologyEnv): Operation {
  return {
    definition: loadDefinition('ValueSet-compare'),
    async handler(ctx, input: CompareInput) {
      const tc = await termContext(env, ctx, input);
      const a = await side(tc, 'this', input.thisValueSet, input.thisUrl, input.thisVersion);
      const b = await side(tc, 'other', input.otherValueSet, input.otherUrl, input.otherVersion);
      const c = await compareValueSets(tc, a, b);
      return {
        result: c.result,
        message: c.message,
        'performed-expansion': c.performedExpansion,
        'common-codes': codeList(c.common),
        'missing-codes': codeList(c.missing),
        'extra-codes': codeList(c.extra),
      };
    },
  };
}
