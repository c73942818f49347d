import type { CodeableConcept, Coding, ValueSet } from '@medplum/fhirtypes';
import { badRequest } from '../../fhir/outcome.js';
import type { Operation } from '../../core/operation.js';
import type { TerminologyEnv } from '../types.js';
import { parseRequestLanguages, requestLanguage } from '../engine/display.js';
import { checkCodeableConcept, terminologyLimits } from '../limits.js';
import { resolveCodeSystem } from '../engine/resolve.js';
import { acceptLanguage, termContext } from '../engine/request-context.js';
import { validateInCodeSystem, validateInValueSet, type ValidateRequest, type ValidateResult } from '../engine/validate.js';
import { loadDefinition } from '../../operations/definitions/index.js';
import { instanceCodeSystem, requireValueSet } from './target.js';
import { cachedAnswer, keptAnswers, stampedAnswer } from './answer-cache.js';
import { messageOf, txIssueOutcome } from '../issues.js';
import { msg } from '../messages.js';
import type { TxIssue } from '../types.js';
import { splitCanonical, versionMatches } from '../versions.js';

interface ValidateInput {
  url?: string;
  valueSet?: ValueSet;
  valueSetVersion?: string;
  code?: string;
  system?: string;
  systemVersion?: string;
  version?: string;
  display?: string;
  coding?: Coding;
  codeableConcept?: CodeableConcept;
  abstract?: boolean;
  displayLanguage?: string;
  inferSystem?: boolean;
  activeOnly?: boolean;
  'lenient-display-validation'?: boolean;
  'valueset-membership-only'?: boolean;
  'tx-resource'?: unknown[];
}

/** `ValueSet/$validate-code` (docs/terminology.md#valueset-validate-code), type and instance level. */
export function valueSetValidateCodeOperation(env: TerminologyEnv): Operation {
  const definition = loadDefinition('ValueSet-validate-code');
  return {
    definition,
    alsoInstance: true,
    keptAnswers: keptAnswers(env, 'vs-validate-code'),
    async handler(ctx, input: ValidateInput, target) {
      checkCodeableConcept(input.codeableConcept, terminologyLimits(env)); // before any work
      const tc = await termContext(env, ctx, input);
      if (!input.url && !input.valueSet && target.level !== 'instance') throw badRequest('No ValueSet specified');
      requireCode(input);
      // Asked again (the same value set, input, language, project): the kept answer (answer-cache.ts).
      const question = `vs-validate\u0000${target.id ?? ''}\u0000${acceptLanguage(ctx) ?? ''}\u0000${JSON.stringify(input)}`;
      return stampedAnswer(env, tc, definition, question, async () => {
        const vs = await requireValueSet(tc, target, input);
        return output(await validateInValueSet(tc, vs, request(input, requestLanguage(input.displayLanguage, vs, acceptLanguage(ctx)))));
      });
    },
  };
}

/** `CodeSystem/$validate-code` (docs/terminology.md#codesystem-validate-code), type and instance level. */
export function codeSystemValidateCodeOperation(env: TerminologyEnv): Operation {
  const definition = loadDefinition('CodeSystem-validate-code');
  return {
    definition,
    alsoInstance: true,
    keptAnswers: keptAnswers(env, 'validate-code'),
    async handler(ctx, input: ValidateInput, target) {
      checkCodeableConcept(input.codeableConcept, terminologyLimits(env)); // before any work
      const tc = await termContext(env, ctx, input);
      requireCode(input);
      const version = input.version ?? input.systemVersion ?? input.coding?.version;
      if (target.level === 'instance') {
        const cs = await instanceCodeSystem(tc, target);
        const mismatch = instanceMismatch(cs.url, input);
        if (mismatch) return output(mismatch);
        return output(await validateInCodeSystem(tc, cs, cs.url, request(input, input.displayLanguage ?? acceptLanguage(ctx))));
      }
      const url = input.url ?? input.coding?.system ?? input.system ?? input.codeableConcept?.coding?.find((c) => c.system)?.system;
      if (!url) throw badRequest('No code system specified');
      // A version that does not exist of a known code system is the coding's finding (unknown
      // version, with the valid ones), not an unknown code system: validate against the newest.
      const split = splitCanonical(url);
      const wanted = version ?? split.version;
      const cs = (await resolveCodeSystem(tc, url, version)) ?? (wanted !== undefined ? await resolveCodeSystem(tc, split.url) : undefined);
      const language = input.displayLanguage ?? acceptLanguage(ctx);
      const answer = async () => {
        const req = request(input, language);
        if (cs && wanted !== undefined && cs.version !== undefined && !versionMatches(cs.version, wanted)) req.options.systemVersion = wanted;
        return output(await validateInCodeSystem(tc, cs, cs ? cs.url : url, req));
      };
      return cs && wanted === undefined && onlyAbout(cs.url, input) ? cachedAnswer(tc, cs, definition, `validate\u0000${language ?? ''}\u0000${JSON.stringify(input)}`, answer) : answer();
    },
  };
}

/**
 * Instance level: a `url`, `coding.system` or `system` naming another code system than the
 * instance is not an error of the request but an invalid code (docs/terminology.md#codesystem-validate-code).
 */
function instanceMismatch(url: string, input: ValidateInput): ValidateResult | undefined {
  const [named, expression] =
    input.url !== undefined ? [input.url, 'url'] : input.coding?.system !== undefined ? [input.coding.system, 'Coding.system'] : [input.system, 'system'];
  if (named === undefined || splitCanonical(named).url === url) return undefined;
  const issues: TxIssue[] = [{ severity: 'error', code: 'invalid', type: 'invalid-data', text: msg.instanceSystemMismatch(named, url), expression }];
  return {
    result: false,
    message: messageOf(issues),
    code: input.coding?.code ?? input.code,
    system: named,
    codeableConcept: input.codeableConcept,
    issues: txIssueOutcome(issues),
  };
}

/**
 * A code or Coding of `url` only (no CodeableConcept, no other system named): its answer
 * depends on that code system alone, so it may be kept with it (answer-cache.ts).
 */
function onlyAbout(url: string, input: ValidateInput): boolean {
  if (input.codeableConcept !== undefined || input.coding?.version !== undefined) return false;
  return [input.url, input.system, input.coding?.system].every((s) => s === undefined || s === url);
}

/** Needs code (+system), a coding, or a codeableConcept with at least one coding. */
function requireCode(input: ValidateInput): void {
  const has = input.code !== undefined || input.coding?.code !== undefined || (input.codeableConcept?.coding?.length ?? 0) > 0;
  if (!has) throw badRequest('No code specified');
}

function request(input: ValidateInput, language: string | undefined): ValidateRequest {
  return {
    code: input.code,
    system: input.system,
    display: input.display,
    coding: input.coding,
    codeableConcept: input.codeableConcept,
    inferSystem: input.inferSystem,
    options: {
      activeOnly: input.activeOnly === true,
      abstractAllowed: input.abstract !== false,
      lenientDisplay: input['lenient-display-validation'] === true,
      membershipOnly: input['valueset-membership-only'] === true,
      languages: parseRequestLanguages(language, input.displayLanguage),
      systemVersion: input.systemVersion ?? input.version,
    },
  };
}

/** Engine result → out-parameters (names of the definition). */
function output(r: ValidateResult): Record<string, unknown> {
  return {
    result: r.result,
    message: r.message,
    display: r.display,
    code: r.code,
    system: r.system,
    version: r.version,
    codeableConcept: r.codeableConcept,
    issues: r.issues,
    inactive: r.inactive,
    status: r.status,
    'normalized-code': r.normalizedCode,
    'x-unknown-system': r.unknownSystem,
    'x-caused-by-unknown-system': r.causedByUnknownSystem,
  };
}
