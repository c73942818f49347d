import type { OperationOutcome, OperationOutcomeIssue } from '@medplum/fhirtypes';
import type { TxIssue } from './types.js';

/** The tx-ecosystem issue-type code system (`details.coding` of terminology issues). */
export const TX_ISSUE_TYPE = 'http://hl7.org/fhir/tools/CodeSystem/tx-issue-type';
/** The id of the message an issue was made from (same ids as the reference server). */
export const MESSAGE_ID = 'http://hl7.org/fhir/StructureDefinition/operationoutcome-message-id';

/** A tx issue as an OperationOutcome issue: message id, severity, code, details (coding + text), expression. */
export function toOutcomeIssue(i: TxIssue): OperationOutcomeIssue {
  // Two literals rather than a conditional spread (V8's slow path; this runs for every issue).
  const severity = i.severity;
  const code = i.code as OperationOutcomeIssue['code'];
  const details = { coding: [{ system: TX_ISSUE_TYPE, code: i.type }], text: i.text };
  const out: OperationOutcomeIssue = i.id ? { extension: [{ url: MESSAGE_ID, valueString: i.id }], severity, code, details } : { severity, code, details };
  if (i.expression) out.expression = [i.expression];
  return out;
}

/** An OperationOutcome of tx issues (the `issues` output, or the body of a terminology error). */
export function txIssueOutcome(issues: TxIssue[]): OperationOutcome {
  return { resourceType: 'OperationOutcome', issue: issues.map(toOutcomeIssue) };
}

/**
 * The `message` output: the texts of the errors and warnings (and of informational issues
 * flagged for it, but not of issues flagged `inMessage: false`), joined with `; `; undefined
 * when there are none.
 */
export function messageOf(issues: TxIssue[]): string | undefined {
  const texts = issues.filter((i) => i.inMessage ?? i.severity !== 'information').map((i) => i.text);
  return texts.length > 0 ? [...new Set(texts)].join('; ') : undefined;
}

/** True when any issue is an error. */
export function hasError(issues: TxIssue[]): boolean {
  return issues.some((i) => i.severity === 'error');
}
