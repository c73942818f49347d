import type { OperationOutcomeIssue } from '@medplum/fhirtypes';
import type { ResourceRepository } from '../../core/repository.js';
import type { BindingChecker } from '../../core/validation.js';
import { isObject } from '../json.js';
import { FhirError } from '../outcome.js';
import { questionnaireResponseIssues } from './questionnaire-response-rules.js';

type Json = Record<string, unknown>;

/** Most QuestionnaireResponses of one resource (a Bundle) checked against looked-up Questionnaires. */
export const MAX_RESPONSES = 20;

/**
 * Each QuestionnaireResponse in `resource` (itself, or the entries of a Bundle, at any depth)
 * whose `questionnaire` is a canonical (not `#contained`, which validate-resource.ts checks)
 * against that Questionnaire: found in the same Bundle, else in `repo` (the caller's project and
 * shared content). Not found, or not readable by the caller → a warning that the answers were not
 * checked; without `repo` (a validation for no caller) only Questionnaires in the Bundle are used. Answers from an answerValueSet are checked with `checker` when it resolves the value set.
 */
export async function questionnaireLookupIssues(resource: unknown, repo: ResourceRepository | undefined, checker: BindingChecker): Promise<OperationOutcomeIssue[]> {
  const responses: Array<{ response: Json; expr: string }> = [];
  const inBundle = new Map<string, Json>();
  const walk = (value: unknown, expr: string, depth: number) => {
    if (depth > 64 || !isObject(value)) return;
    if (value.resourceType === 'QuestionnaireResponse' && typeof value.questionnaire === 'string' && !value.questionnaire.startsWith('#')) {
      if (responses.length < MAX_RESPONSES) responses.push({ response: value, expr });
    }
    if (value.resourceType === 'Questionnaire' && typeof value.url === 'string') {
      inBundle.set(value.url, value);
      if (typeof value.version === 'string') inBundle.set(`${value.url}|${value.version}`, value);
    }
    if (value.resourceType === 'Bundle' && Array.isArray(value.entry)) {
      value.entry.forEach((entry: unknown, i) => isObject(entry) && walk(entry.resource, `${expr}.entry[${i}].resource`, depth + 1));
    }
  };
  walk(resource, isObject(resource) && typeof resource.resourceType === 'string' ? resource.resourceType : '', 0);
  if (responses.length === 0) return [];
  const found = new Map<string, Promise<Json | undefined>>();
  const out: OperationOutcomeIssue[] = [];
  for (const { response, expr } of responses) {
    const canonical = response.questionnaire as string;
    let lookup = found.get(canonical);
    if (!lookup) {
      lookup = inBundle.has(canonical) ? Promise.resolve(inBundle.get(canonical)) : fromRepository(repo, canonical);
      found.set(canonical, lookup);
    }
    const questionnaire = await lookup;
    // Without a caller (PATCH, imports) nothing was looked up: no claim either way.
    if (!questionnaire && !repo) continue;
    if (!questionnaire) {
      out.push({
        severity: 'warning',
        code: 'not-found',
        details: { text: `The Questionnaire '${canonical}' was not found: the answers were not checked against it` },
        expression: [`${expr}.questionnaire`],
      });
      continue;
    }
    const { issues, valueSetAnswers } = questionnaireResponseIssues(response, questionnaire, expr);
    out.push(...issues);
    if (valueSetAnswers.length === 0) continue;
    const codes = await checker.codesOf([...new Set(valueSetAnswers.map((a) => a.valueSet))]);
    for (const answer of valueSetAnswers) {
      const members = codes.get(answer.valueSet);
      if (!members || members.has(answer.system, answer.code)) continue;
      const shown = answer.system ? `${answer.system}|${answer.code}` : answer.code;
      out.push({ severity: 'error', code: 'code-invalid', details: { text: `The answer '${shown}' is not in the answer value set ${answer.valueSet}` }, expression: [answer.expression] });
    }
  }
  return out;
}

async function fromRepository(repo: ResourceRepository | undefined, canonical: string): Promise<Json | undefined> {
  if (!repo) return undefined;
  const [url, version] = canonical.split('|');
  const params: Array<[string, string]> = [['url', url], ['_count', '1']];
  if (version) params.push(['version', version]);
  try {
    const result = await repo.search({ resourceType: 'Questionnaire', params });
    return result.resources[0] as unknown as Json | undefined;
  } catch (err) {
    // A caller who may not read Questionnaires is told the same as for one not held.
    if (err instanceof FhirError) return undefined;
    throw err;
  }
}
