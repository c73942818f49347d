import type { CodeableConcept, Coding, OperationOutcome, ValueSet } from '@medplum/fhirtypes';
import { badRequest } from '../../fhir/outcome.js';
import { UnknownValueSetError, ValueSetEvaluator } from './compose.js';
import { hasError, messageOf, txIssueOutcome } from '../issues.js';
import { codingText, msg, valueSetText } from '../messages.js';
import { StatusReport, valueSetPublication } from './status.js';
import type { CodeSystemInfo, TermContext, TxIssue } from '../types.js';
import { validateCodings, type CodingCheck, type CodingOutcome, type ValidationOptions, type ValidationTarget } from './validate-coding.js';
import { resolveSupplement } from './resolve.js';
import { splitCanonical } from '../versions.js';
import { withCallerPaths } from './caller-paths.js';

/**
 * `$validate-code` (docs/terminology.md#valueset-validate-code, docs/terminology.md#codesystem-validate-code): normalises the three input forms (code+system,
 * coding, codeableConcept) into coding checks, runs them in one batch and assembles the
 * tx-ecosystem answer. A code outside the value set is `result: false`, never an error status.
 */

export interface ValidateRequest {
  code?: string;
  system?: string;
  display?: string;
  coding?: Coding;
  codeableConcept?: CodeableConcept;
  /** `inferSystem`: find the system of a bare code from the value set. */
  inferSystem?: boolean;
  options: ValidationOptions;
}

export interface ValidateResult {
  result: boolean;
  message?: string;
  display?: string;
  code?: string;
  system?: string;
  version?: string;
  codeableConcept?: CodeableConcept;
  issues?: OperationOutcome;
  inactive?: boolean;
  status?: string;
  normalizedCode?: string;
  unknownSystem?: string;
  causedByUnknownSystem?: string;
}

/** Validates the request's code against a value set. */
export function validateInValueSet(tc: TermContext, vs: ValueSet, req: ValidateRequest): Promise<ValidateResult> {
  return withCallerPaths(vs, () => validateIn(tc, vs, req));
}

async function validateIn(tc: TermContext, vs: ValueSet, req: ValidateRequest): Promise<ValidateResult> {
  const evaluator = new ValueSetEvaluator(tc, vs);
  const vsText = valueSetText(vs);
  const target: ValidationTarget = { kind: 'valueSet', evaluator, vsText };
  try {
    if (req.codeableConcept) return await validateConcept(tc, target, req.codeableConcept, req.options, vsText);
    const isCoding = req.coding !== undefined;
    const input = isCoding
      ? { system: req.coding?.system, version: req.coding?.version, code: req.coding?.code ?? '', display: req.coding?.display ?? req.display }
      : { system: req.system, code: req.code ?? '', display: req.display };
    const prefix = isCoding ? 'Coding.' : '';
    if (!input.system) {
      if (isCoding) return noSystem(input.code, vsText, prefix);
      const inferred = await inferSystem(evaluator, input.code, req.inferSystem === true, vsText);
      if (typeof inferred !== 'string') return inferred;
      input.system = inferred;
    }
    const check: CodingCheck = { input, prefix, whole: isCoding ? 'Coding' : 'code', isCoding };
    const outcome = (await validateCodings(tc, target, [check], req.options))[0];
    return single(outcome, statusIssues(target, [outcome]));
  } catch (err) {
    if (err instanceof UnknownValueSetError) {
      const issues: TxIssue[] = [{ severity: 'error', code: 'not-found', type: 'not-found', id: 'Unable_to_resolve_value_Set_', text: msg.unknownValueSet(err.url) }];
      return { result: false, message: messageOf(issues), codeableConcept: req.codeableConcept, issues: txIssueOutcome(issues) };
    }
    throw err;
  }
}

/** Validates the request's code in one code system (`cs` undefined: the system is unknown). */
export async function validateInCodeSystem(
  tc: TermContext,
  cs: CodeSystemInfo | undefined,
  url: string,
  req: ValidateRequest,
): Promise<ValidateResult> {
  if (!cs) {
    const code = req.coding?.code ?? req.code ?? req.codeableConcept?.coding?.[0]?.code;
    const expression = req.codeableConcept ? 'CodeableConcept.coding[0].system' : req.coding ? 'Coding.system' : 'system';
    // A supplement is not a code system (docs/terminology.md#supplements-are-not-code-systems).
    const supplement = await resolveSupplement(tc, url);
    if (supplement) {
      const canonical = supplement.version ? `${supplement.url}|${supplement.version}` : supplement.url;
      const issues: TxIssue[] = [{ severity: 'error', code: 'invalid', type: 'invalid-data', id: 'CODESYSTEM_CS_NO_SUPPLEMENT', text: msg.systemIsSupplement(canonical), expression }];
      const version = req.coding?.version;
      return { result: false, message: messageOf(issues), code, system: splitCanonical(url).url, version, codeableConcept: req.codeableConcept, issues: txIssueOutcome(issues) };
    }
    const issues: TxIssue[] = [
      { severity: 'error', code: 'not-found', type: 'not-found', id: 'UNKNOWN_CODESYSTEM', text: msg.unknownSystem(url, true), expression: req.coding ? 'Coding.system' : 'system' },
    ];
    return { result: false, message: messageOf(issues), code, system: url, codeableConcept: req.codeableConcept, issues: txIssueOutcome(issues), unknownSystem: url };
  }
  const target: ValidationTarget = { kind: 'codeSystem', cs };
  if (req.codeableConcept) return validateConcept(tc, target, req.codeableConcept, req.options, '');
  const isCoding = req.coding !== undefined;
  const input = isCoding
    ? { system: req.coding?.system ?? cs.url, version: req.coding?.version, code: req.coding?.code ?? '', display: req.coding?.display ?? req.display }
    : { system: cs.url, code: req.code ?? '', display: req.display };
  const check: CodingCheck = { input, prefix: isCoding ? 'Coding.' : '', whole: isCoding ? 'Coding' : 'code', isCoding };
  const outcome = (await validateCodings(tc, target, [check], req.options))[0];
  return single(outcome, statusIssues(target, [outcome]));
}

/**
 * The status of the resources the validation used (docs/terminology.md#status-of-the-resources-used):
 * the value set itself, the value sets it imported, the code system version of each coding
 * (used by the value set, or by `CodeSystem/$validate-code`, which counts as an active user).
 */
function statusIssues(target: ValidationTarget, outcomes: CodingOutcome[]): TxIssue[] {
  const report = new StatusReport();
  if (target.kind === 'valueSet') {
    const vs = target.evaluator.vs;
    report.valueSet(vs, 'self');
    report.merge(target.evaluator.evaluation.statuses);
    for (const o of outcomes) if (o.cs) report.codeSystem(o.cs, valueSetPublication(vs));
  } else {
    for (const o of outcomes) if (o.cs) report.codeSystem(o.cs, { status: 'active' });
  }
  return report.issues();
}

function single(o: CodingOutcome, extra: TxIssue[]): ValidateResult {
  const issues = [...o.issues, ...extra];
  return {
    result: o.member && !hasError(o.issues),
    message: o.refusal ? [o.refusal, messageOf(o.issues)].filter(Boolean).join('; ') : messageOf(o.issues),
    display: o.display,
    code: o.code,
    system: o.system,
    version: o.version,
    issues: issues.length > 0 ? txIssueOutcome(issues) : undefined,
    inactive: o.inactive,
    status: o.status,
    normalizedCode: o.normalizedCode,
    unknownSystem: o.unknownSystem,
    causedByUnknownSystem: o.causedByUnknownSystem,
  };
}

/**
 * A codeableConcept is valid when one of its codings is: per-coding "not in value set" findings
 * become informational (`this-code-not-in-vs`), and only when no coding is a member is there an
 * error for the concept as a whole. The first member coding supplies code/system/display.
 */
async function validateConcept(
  tc: TermContext,
  target: ValidationTarget,
  cc: CodeableConcept,
  options: ValidationOptions,
  vsText: string,
): Promise<ValidateResult> {
  const codings = cc.coding ?? [];
  const checks: CodingCheck[] = [];
  const positions: number[] = [];
  const issues: TxIssue[] = [];
  codings.forEach((coding, i) => {
    const prefix = `CodeableConcept.coding[${i}].`;
    if (!coding.system && target.kind === 'valueSet') {
      issues.push({ severity: 'warning', code: 'invalid', type: 'invalid-data', id: 'Coding_has_no_system__cannot_validate', text: msg.noSystem(), expression: `CodeableConcept.coding[${i}]` });
      return;
    }
    checks.push({
      input: { system: coding.system, version: coding.version, code: coding.code ?? '', display: coding.display },
      prefix,
      whole: `CodeableConcept.coding[${i}]`,
      isCoding: false,
    });
    positions.push(i);
  });
  const outcomes = await validateCodings(tc, target, checks, options);
  const statuses = statusIssues(target, outcomes);
  for (const o of outcomes) {
    for (const i of o.issues) {
      issues.push(i.type === 'not-in-vs' ? { ...i, severity: 'information', type: 'this-code-not-in-vs' } : i);
    }
  }
  const member = outcomes.find((o) => o.member);
  // A value set that could not be evaluated (a code system or version it needs is unknown) is
  // reported as such, not as "no valid coding".
  const unevaluable = outcomes.some((o) => o.causedByUnknownSystem);
  if (!member && !unevaluable && target.kind === 'valueSet') {
    issues.unshift({ severity: 'error', code: 'code-invalid', type: 'not-in-vs', id: 'TX_GENERAL_CC_ERROR_MESSAGE', text: msg.noValidCoding(vsText) });
  }
  const unknown = outcomes.find((o) => o.unknownSystem)?.unknownSystem;
  const caused = outcomes.find((o) => o.causedByUnknownSystem)?.causedByUnknownSystem;
  issues.push(...statuses);
  return {
    result: member !== undefined && !hasError(issues),
    message: messageOf(issues),
    display: member?.display,
    code: member?.code,
    system: member?.system,
    version: member?.version,
    codeableConcept: cc,
    issues: issues.length > 0 ? txIssueOutcome(issues) : undefined,
    inactive: member?.inactive,
    status: member?.status,
    normalizedCode: member?.normalizedCode,
    unknownSystem: unknown,
    causedByUnknownSystem: caused,
  };
}

/** A Coding without a system cannot be validated. */
function noSystem(code: string, vsText: string, prefix: string): ValidateResult {
  const issues: TxIssue[] = [
    { severity: 'warning', code: 'invalid', type: 'invalid-data', id: 'Coding_has_no_system__cannot_validate', text: msg.noSystem(), expression: prefix ? prefix.slice(0, -1) : 'code' },
    { severity: 'error', code: 'code-invalid', type: 'not-in-vs', id: 'None_of_the_provided_codes_are_in_the_value_set_one', text: msg.notInValueSet(codingText(undefined, undefined, code), vsText), expression: `${prefix}code` },
  ];
  return { result: false, message: messageOf(issues), code, issues: txIssueOutcome(issues) };
}

/**
 * The system of a bare code: the one system of the value set that has it. Without
 * `inferSystem` only a value set drawing on exactly one code system implies it (docs/terminology.md#valueset-validate-code); otherwise the code is not specified well enough (400).
 */
async function inferSystem(evaluator: ValueSetEvaluator, code: string, asked: boolean, vsText: string): Promise<string | ValidateResult> {
  const systems = await evaluator.includedSystems();
  if (!asked && systems.length !== 1) throw badRequest('No code specified');
  const matches: string[] = [];
  for (const s of systems) if ((await evaluator.members(s, undefined, [code])).size > 0) matches.push(s);
  if (matches.length === 1) return matches[0];
  const issues: TxIssue[] = [
    {
      severity: 'error',
      code: 'not-found',
      type: 'cannot-infer',
      id: matches.length > 1 ? 'Unable_to_resolve_system__value_set_has_multiple_matches' : 'UNABLE_TO_INFER_CODESYSTEM',
      text: msg.cannotInfer(code, vsText, matches, systems),
      expression: 'code',
    },
    { severity: 'error', code: 'code-invalid', type: 'not-in-vs', id: 'None_of_the_provided_codes_are_in_the_value_set_one', text: msg.notInValueSet(codingText(undefined, undefined, code), vsText), expression: 'code' },
  ];
  return { result: false, message: messageOf(issues), code, issues: txIssueOutcome(issues) };
}
