import type { OperationOutcomeIssue } from '@medplum/fhirtypes';
import { isObject } from '../json.js';
import { issue } from '../outcome.js';
import { enabled, sameValue, type AnswerIndex } from './enable-when.js';
import { itemsOf } from './questionnaire-rules.js';

type Json = Record<string, unknown>;

/** An answer (a Coding) whose item draws its answers from a value set: checked by the caller's terminology. */
export interface ValueSetAnswer {
  valueSet: string;
  expression: string;
  system: string | undefined;
  code: string;
}

/** The `value[x]` keys an answer to each item type may carry (a dateTime item takes a date, a decimal an integer). */
const ANSWER_KEYS: Record<string, string[]> = {
  boolean: ['valueBoolean'],
  decimal: ['valueDecimal', 'valueInteger'],
  integer: ['valueInteger'],
  date: ['valueDate'],
  dateTime: ['valueDateTime', 'valueDate'],
  time: ['valueTime'],
  string: ['valueString'],
  text: ['valueString'],
  url: ['valueUri'],
  choice: ['valueCoding'],
  'open-choice': ['valueCoding', 'valueString'],
  attachment: ['valueAttachment'],
  reference: ['valueReference'],
  quantity: ['valueQuantity'],
};

/**
 * The rules of a QuestionnaireResponse that need no Questionnaire (qrs-1), and — when
 * `questionnaire` is a reference to a contained Questionnaire (`#id`) — the response against it.
 * `expr` is the response's path.
 */
export function containedQuestionnaireIssues(response: Json, expr: string): OperationOutcomeIssue[] {
  const out: OperationOutcomeIssue[] = [];
  const visit = (parent: Json, at: string, depth: number) => {
    if (depth > 64) return;
    for (const { item, expr: itemAt } of itemsOf(parent, at)) {
      if (item.answer !== undefined && item.item !== undefined) out.push(issue('invariant', 'qrs-1: An item cannot have both answers and nested items', itemAt));
      visit(item, itemAt, depth + 1);
      if (Array.isArray(item.answer)) item.answer.forEach((a: unknown, i) => isObject(a) && visit(a, `${itemAt}.answer[${i}]`, depth + 1));
    }
  };
  visit(response, expr, 0);
  const ref = response.questionnaire;
  if (typeof ref === 'string' && ref.startsWith('#') && Array.isArray(response.contained)) {
    const questionnaire: unknown = (response.contained as unknown[]).find((c: unknown) => isObject(c) && c.resourceType === 'Questionnaire' && c.id === ref.slice(1));
    if (isObject(questionnaire)) out.push(...questionnaireResponseIssues(response, questionnaire, expr).issues);
  }
  return out;
}

/**
 * A QuestionnaireResponse against its Questionnaire (as the reference validator checks it):
 * each item's linkId exists at that level and in the Questionnaire's order, answers have the
 * item's type, non-repeating items have at most one answer, display and group items have
 * none, answers are among the answerOptions, items disabled by enableWhen have no answers,
 * and — when the response is `completed` — required items are present and answered.
 * Answers to items with an answerValueSet are returned for the caller to check.
 */
export function questionnaireResponseIssues(response: Json, questionnaire: Json, expr: string): { issues: OperationOutcomeIssue[]; valueSetAnswers: ValueSetAnswer[] } {
  const ctx: Check = { issues: [], valueSetAnswers: [], answers: indexAnswers(response), completed: response.status === 'completed', global: new Map() };
  const index = (parent: Json, depth: number) => {
    if (depth > 64) return;
    for (const { item } of itemsOf(parent, '')) {
      if (typeof item.linkId === 'string' && !ctx.global.has(item.linkId)) ctx.global.set(item.linkId, item);
      index(item, depth + 1);
    }
  };
  index(questionnaire, 0);
  checkLevel(ctx, response, itemsOf(questionnaire, '').map((e) => e.item), expr, 0);
  return { issues: ctx.issues, valueSetAnswers: ctx.valueSetAnswers };
}

interface Check {
  issues: OperationOutcomeIssue[];
  valueSetAnswers: ValueSetAnswer[];
  answers: AnswerIndex;
  completed: boolean;
  /** Every item of the Questionnaire by linkId. */
  global: Map<string, Json>;
}

/** Every answer of the response by linkId, wherever the item is. */
function indexAnswers(response: Json): AnswerIndex {
  const index: AnswerIndex = new Map();
  const visit = (parent: Json, depth: number) => {
    if (depth > 64) return;
    for (const { item } of itemsOf(parent, '')) {
      const answers = Array.isArray(item.answer) ? item.answer.filter(isObject) : [];
      if (typeof item.linkId === 'string') {
        const list = index.get(item.linkId);
        if (list) list.push(...answers);
        else index.set(item.linkId, answers);
      }
      visit(item, depth + 1);
      for (const answer of answers) visit(answer, depth + 1);
    }
  };
  visit(response, 0);
  return index;
}

/** The response items under `parent` against the Questionnaire items of that level. */
function checkLevel(ctx: Check, parent: Json, questions: Json[], expr: string, depth: number): void {
  if (depth > 64) return;
  const present = new Map<string, number>();
  const positions = new Map<unknown, number>();
  questions.forEach((q, i) => positions.has(q.linkId) || positions.set(q.linkId, i));
  let last = -1;
  for (const { item, expr: at } of itemsOf(parent, expr)) {
    const linkId = item.linkId;
    if (typeof linkId !== 'string') continue;
    const position = positions.get(linkId) ?? -1;
    if (position < 0) {
      const text = ctx.global.has(linkId)
        ? `The item with linkId '${linkId}' is not allowed at this level of the Questionnaire`
        : `No item with linkId '${linkId}' in the Questionnaire`;
      ctx.issues.push(issue('structure', text, `${at}.linkId`));
      continue;
    }
    const question = questions[position];
    if (position < last) ctx.issues.push(issue('structure', `The item with linkId '${linkId}' is out of the Questionnaire's order`, at));
    last = Math.max(last, position);
    const seen = (present.get(linkId) ?? 0) + 1;
    present.set(linkId, seen);
    if (seen === 2 && question.repeats !== true) {
      ctx.issues.push(issue('structure', `Only one item with linkId '${linkId}' is allowed: the item does not repeat`, at));
    }
    checkItem(ctx, item, question, at, depth);
  }
  if (!ctx.completed) return;
  for (const question of questions) {
    if (question.required !== true || question.type === 'display' || typeof question.linkId !== 'string') continue;
    if (!present.has(question.linkId) && enabled(question, ctx.answers)) {
      ctx.issues.push(issue('required', `The required item '${question.linkId}' is missing from a completed response`, expr));
    }
  }
}

function checkItem(ctx: Check, item: Json, question: Json, at: string, depth: number): void {
  const answers = Array.isArray(item.answer) ? item.answer : [];
  const children = itemsOf(question, '').map((e) => e.item);
  const type = question.type;
  if (answers.length > 0 || item.item !== undefined) {
    if (!enabled(question, ctx.answers) && hasAnswer(item, 0)) {
      ctx.issues.push(issue('invalid', `The item '${String(question.linkId)}' has answers but is not enabled (enableWhen)`, at));
    }
  }
  if (type === 'display' || type === 'group') {
    if (answers.length > 0) ctx.issues.push(issue('structure', `A ${type} item cannot have answers`, `${at}.answer`));
    checkLevel(ctx, item, children, at, depth + 1);
    return;
  }
  if (question.repeats !== true && answers.length > 1) {
    ctx.issues.push(issue('structure', `The item '${String(question.linkId)}' does not repeat: at most one answer is allowed`, `${at}.answer`));
  }
  if (ctx.completed && question.required === true && answers.length === 0 && item.item === undefined && enabled(question, ctx.answers)) {
    ctx.issues.push(issue('required', `The required item '${String(question.linkId)}' has no answer in a completed response`, at));
  }
  answers.forEach((answer: unknown, i) => {
    if (!isObject(answer)) return;
    const answerAt = `${at}.answer[${i}]`;
    checkAnswer(ctx, answer, question, answerAt);
    checkLevel(ctx, answer, children, answerAt, depth + 1);
  });
  if (item.item !== undefined) checkLevel(ctx, item, children, at, depth + 1);
}

function checkAnswer(ctx: Check, answer: Json, question: Json, at: string): void {
  const key = Object.keys(answer).find((k) => k.startsWith('value') && k.length > 5);
  const type = typeof question.type === 'string' ? question.type : undefined;
  if (!key || !type || !ANSWER_KEYS[type]) return;
  const options = Array.isArray(question.answerOption) ? question.answerOption.filter(isObject) : [];
  const optionKeys = options.flatMap((o) => Object.keys(o).filter((k) => k.startsWith('value')));
  const allowed = type === 'choice' || type === 'open-choice' ? [...ANSWER_KEYS[type], ...optionKeys] : ANSWER_KEYS[type];
  if (!allowed.includes(key)) {
    ctx.issues.push(issue('structure', `An answer to a ${type} item must be ${[...new Set(allowed)].join(' or ')}, not ${key}`, at));
    return;
  }
  const value = answer[key];
  if (options.length > 0 && !(type === 'open-choice' && key === 'valueString')) {
    if (!options.some((o) => o[key] !== undefined && sameValue(o[key], value))) {
      ctx.issues.push(issue('code-invalid', `The answer is not one of the answerOptions of item '${String(question.linkId)}'`, at));
    }
    return;
  }
  if (typeof question.answerValueSet === 'string' && key === 'valueCoding' && isObject(value) && typeof value.code === 'string') {
    const system = typeof value.system === 'string' ? value.system : undefined;
    ctx.valueSetAnswers.push({ valueSet: question.answerValueSet, expression: at, system, code: value.code });
  }
}

function hasAnswer(item: Json, depth: number): boolean {
  if (depth > 64) return false;
  if (Array.isArray(item.answer) && item.answer.length > 0) return true;
  return itemsOf(item, '').some((e) => hasAnswer(e.item, depth + 1));
}
