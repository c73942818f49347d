import type { OperationOutcomeIssue } from '@medplum/fhirtypes';
import { isObject } from '../json.js';
import { bundleIssues } from './bundle-rules.js';
import { containedIssues } from './contained-rules.js';
import { extensionIssues } from './extension-rules.js';
import { narrativeIssues } from './narrative-rules.js';
import { questionnaireIssues } from './questionnaire-rules.js';
import { containedQuestionnaireIssues } from './questionnaire-response-rules.js';

type Json = Record<string, unknown>;

/** Rules of one resource type, given the resource and its path. */
type ResourceRules = (resource: Json, expr: string) => OperationOutcomeIssue[];

const RULES: Record<string, ResourceRules> = {
  Bundle: bundleIssues,
  Questionnaire: questionnaireIssues,
  QuestionnaireResponse: containedQuestionnaireIssues,
};

/**
 * The rules the R4 specification states beyond the element definitions, for a resource and
 * every resource inside it (contained, Bundle entries; not the resources of a Parameters
 * resource's parameters, which their operation judges): extension structure
 * (extension-rules.ts), contained resources and local references (contained-rules.ts), narrative (narrative-rules.ts), Bundle (bundle-rules.ts), Questionnaire (questionnaire-rules.ts), and a
 * QuestionnaireResponse against a contained Questionnaire (questionnaire-response-rules.ts).
 * One walk over the JSON, at most `maxDepth` levels; never throws for JSON input.
 */
export function baseRuleIssues(resource: unknown, maxDepth: number): OperationOutcomeIssue[] {
  const out: OperationOutcomeIssue[] = [];
  if (!isObject(resource) || typeof resource.resourceType !== 'string') return out;
  // Each object once (parsed JSON shares none; a cyclic JS object must not make the walk explode).
  const seen = new WeakSet<object>();
  const walk = (value: unknown, expr: string, depth: number, inExtension: boolean): void => {
    if (depth > maxDepth || (typeof value === 'object' && value !== null && seen.has(value))) return;
    if (typeof value === 'object' && value !== null) seen.add(value);
    if (Array.isArray(value)) {
      value.forEach((item, i) => walk(item, `${expr}[${i}]`, depth + 1, inExtension));
      return;
    }
    if (!isObject(value)) return;
    if (typeof value.resourceType === 'string') {
      out.push(...(RULES[value.resourceType]?.(value, expr) ?? []));
      out.push(...containedIssues(value, expr));
    }
    // A Narrative (status and div are both required there).
    if (typeof value.div === 'string' && typeof value.status === 'string') out.push(...narrativeIssues(value.div, `${expr}.div`));
    for (const [key, child] of Object.entries(value)) {
      if ((key === 'extension' || key === 'modifierExtension') && Array.isArray(child)) {
        child.forEach((ext, i) => {
          if (!isObject(ext)) return;
          const at = `${expr}.${key}[${i}]`;
          out.push(...extensionIssues(ext, at, inExtension && key === 'extension'));
          walk(ext, at, depth + 2, true);
        });
      } else if (key === 'resource' && expr.startsWith('Parameters.parameter')) {
        // A resource carried by an operation's parameter is the operation's to judge (a
        // terminology client may send a deliberately broken one; $validate validates its own).
        continue;
      } else if (key !== 'resourceType') {
        // `_given` holds the extensions of `given`: its path is the primitive's, as validate-resource.ts has it.
        const name = key.charCodeAt(0) === 95 /* _ */ ? key.slice(1) : key;
        walk(child, `${expr}.${name}`, depth + 1, false);
      }
    }
  };
  walk(resource, resource.resourceType, 0, false);
  return out;
}
