import { isObject } from '../json.js';

type Json = Record<string, unknown>;

/** The answers of a QuestionnaireResponse by linkId. */
export type AnswerIndex = Map<string, Json[]>;

/**
 * Whether a Questionnaire item is enabled by its `enableWhen` conditions (enableBehavior `all`,
 * the default, or `any`) given the response's answers. A condition that cannot be decided (an
 * answer of another type than the condition's, an unknown operator) counts as met: an item is
 * reported as disabled only when it surely is.
 */
export function enabled(question: Json, answers: AnswerIndex): boolean {
  const conditions = Array.isArray(question.enableWhen) ? question.enableWhen.filter(isObject) : [];
  if (conditions.length === 0) return true;
  const results = conditions.map((c) => conditionMet(c, answers));
  return question.enableBehavior === 'any' ? results.some(Boolean) : results.every(Boolean);
}

function conditionMet(condition: Json, index: AnswerIndex): boolean {
  const answers = typeof condition.question === 'string' ? (index.get(condition.question) ?? []) : [];
  const operator = condition.operator;
  if (operator === 'exists') return typeof condition.answerBoolean === 'boolean' ? answers.length > 0 === condition.answerBoolean : true;
  const key = Object.keys(condition).find((k) => k.startsWith('answer') && k.length > 6);
  if (!key) return true;
  const expected = condition[key];
  const valueKey = `value${key.slice(6)}`;
  if (answers.length === 0) return operator === '!=' || !['=', '>', '<', '>=', '<='].includes(String(operator));
  const values = answers.map((a) => a[valueKey]).filter((v) => v !== undefined);
  if (values.length === 0) return true;
  switch (operator) {
    case '=':
      return values.some((v) => sameValue(expected, v));
    case '!=':
      return !values.every((v) => sameValue(expected, v));
    case '>':
    case '<':
    case '>=':
    case '<=': {
      const outcomes = values.map((v) => compare(v, expected));
      if (outcomes.some((o) => o === undefined)) return true;
      return outcomes.some((o) => test(operator, o as number));
    }
    default:
      return true;
  }
}

function test(operator: string, order: number): boolean {
  if (operator === '>') return order > 0;
  if (operator === '<') return order < 0;
  if (operator === '>=') return order >= 0;
  return order <= 0;
}

/** The order of two values of one type; undefined when they cannot be compared. */
function compare(a: unknown, b: unknown): number | undefined {
  const num = (v: unknown) => (typeof v === 'number' ? v : isObject(v) && typeof v.value === 'number' ? v.value : undefined);
  const [x, y] = [num(a), num(b)];
  if (x !== undefined && y !== undefined) return x - y;
  // Dates, dateTimes and times of the same precision compare as text.
  if (typeof a === 'string' && typeof b === 'string' && a.length === b.length) return a < b ? -1 : a > b ? 1 : 0;
  return undefined;
}

/** An option value and an answer value are the same (Codings by system and code). */
export function sameValue(a: unknown, b: unknown): boolean {
  if (isObject(a) && isObject(b)) {
    if ('code' in a || 'code' in b) return a.code === b.code && (a.system === undefined || b.system === undefined || a.system === b.system);
    if ('reference' in a) return a.reference === b.reference;
    return JSON.stringify(a) === JSON.stringify(b);
  }
  return a === b;
}
