import type { OperationOutcomeIssue } from '@medplum/fhirtypes';
import { isObject } from '../json.js';
import { issue } from '../outcome.js';

type Json = Record<string, unknown>;

/** The item types that may carry answerOption/answerValueSet (que-5). */
const WITH_OPTIONS = new Set(['choice', 'open-choice', 'decimal', 'integer', 'date', 'dateTime', 'time', 'string', 'quantity']);
/** The item types that may declare maxLength (que-10). */
const WITH_MAX_LENGTH = new Set(['boolean', 'decimal', 'integer', 'string', 'text', 'url', 'open-choice']);

/** The items of a Questionnaire (or of an item), each with its path. */
export function itemsOf(parent: Json, expr: string): Array<{ item: Json; expr: string }> {
  return Array.isArray(parent.item) ? parent.item.flatMap((item: unknown, i) => (isObject(item) ? [{ item, expr: `${expr}.item[${i}]` }] : [])) : [];
}

/**
 * The rules of an R4 Questionnaire beyond its element definitions: the invariants que-1 … que-13
 * and, as the reference validator checks, that every `enableWhen.question` names an item of the
 * Questionnaire. `expr` is the Questionnaire's path. Items nest at most as deep as the JSON
 * validation allowed.
 */
export function questionnaireIssues(questionnaire: Json, expr: string): OperationOutcomeIssue[] {
  const out: OperationOutcomeIssue[] = [];
  const linkIds = new Map<string, string>();
  const all: Array<{ item: Json; expr: string }> = [];
  const collect = (parent: Json, at: string, depth: number) => {
    if (depth > 64) return;
    for (const entry of itemsOf(parent, at)) {
      all.push(entry);
      collect(entry.item, entry.expr, depth + 1);
    }
  };
  collect(questionnaire, expr, 0);
  for (const { item, expr: at } of all) {
    if (typeof item.linkId !== 'string') continue;
    const first = linkIds.get(item.linkId);
    if (first) out.push(invariant('que-2', `The linkId '${item.linkId}' is not unique (also at ${first})`, `${at}.linkId`));
    else linkIds.set(item.linkId, at);
  }
  for (const { item, expr: at } of all) out.push(...itemIssues(item, at, linkIds));
  return out;
}

function itemIssues(item: Json, at: string, linkIds: Map<string, string>): OperationOutcomeIssue[] {
  const out: OperationOutcomeIssue[] = [];
  const type = item.type;
  const has = (key: string) => item[key] !== undefined;
  const count = (key: string) => (Array.isArray(item[key]) ? item[key].length : has(key) ? 1 : 0);
  if (type === 'group' && !has('item')) out.push(invariant('que-1', 'A group item must have nested items', at));
  if (type === 'display') {
    if (has('item')) out.push(invariant('que-1', 'A display item cannot have nested items', `${at}.item`));
    if (has('code')) out.push(invariant('que-3', 'A display item cannot have a code', `${at}.code`));
    if (has('required') || has('repeats')) out.push(invariant('que-6', 'required and repeats are not permitted for display items', at));
    if (has('readOnly')) out.push(invariant('que-9', 'readOnly is not permitted for display items', `${at}.readOnly`));
  }
  if (has('answerOption') && has('answerValueSet')) out.push(invariant('que-4', 'An item cannot have both answerOption and answerValueSet', at));
  if (typeof type === 'string' && !WITH_OPTIONS.has(type) && (has('answerOption') || has('answerValueSet'))) {
    out.push(invariant('que-5', `A ${type} item cannot have answerOption or answerValueSet`, at));
  }
  if ((type === 'group' || type === 'display') && has('initial')) out.push(invariant('que-8', `Initial values cannot be given for ${type} items`, `${at}.initial`));
  if (typeof type === 'string' && !WITH_MAX_LENGTH.has(type) && has('maxLength')) {
    out.push(invariant('que-10', `maxLength cannot be declared for ${type} items`, `${at}.maxLength`));
  }
  if (has('answerOption') && has('initial')) out.push(invariant('que-11', 'An item with answerOption cannot have initial values', `${at}.initial`));
  if (count('enableWhen') > 2 && !has('enableBehavior')) out.push(invariant('que-12', 'enableBehavior must be given with more than two enableWhen conditions', at));
  if (item.repeats !== true && count('initial') > 1) out.push(invariant('que-13', 'Only a repeating item can have more than one initial value', `${at}.initial`));
  const conditions = Array.isArray(item.enableWhen) ? item.enableWhen : [];
  conditions.forEach((condition: unknown, i) => {
    if (!isObject(condition)) return;
    const cAt = `${at}.enableWhen[${i}]`;
    if (condition.operator === 'exists' && condition.answerBoolean === undefined) {
      out.push(invariant('que-7', "With operator 'exists' the answer must be a boolean (answerBoolean)", cAt));
    }
    if (typeof condition.question === 'string' && !linkIds.has(condition.question)) {
      out.push(issue('value', `enableWhen.question '${condition.question}' is not the linkId of an item of this Questionnaire`, `${cAt}.question`));
    }
  });
  return out;
}

function invariant(key: string, text: string, expression: string): OperationOutcomeIssue {
  return issue('invariant', `${key}: ${text}`, expression);
}
