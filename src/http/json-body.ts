import { MAX_JSON_DEPTH } from '../fhir/json.js';
import type { OperationOutcomeIssue } from '@medplum/fhirtypes';
import { badRequest, FhirError, issue } from '../fhir/outcome.js';
import { jsonProblems, type JsonProblem } from './json-syntax.js';

/** The answer to a request body (JSON or form) with a NUL character. */
export const NUL_IN_CONTENT = 'Content contains a NUL character (U+0000)';

/**
 * Parses a JSON request body. Whitespace only = no body (undefined). Throws a 400 FhirError
 * for text that is not JSON (one issue per syntax problem found, with its line and column),
 * repeats a property name in one object (JSON.parse would silently keep the last), is nested
 * deeper than MAX_JSON_DEPTH, or holds a NUL character
 * in a string: PostgreSQL text cannot store one (and FHIR strings may not contain it), so
 * it is refused here rather than failing in whichever feature stores the value.
 */
export function parseJsonBody(text: string): unknown {
  if (text.trim() === '') return undefined;
  const scanned = scan(text);
  if (scanned === 'too-deep') throw badRequest(`Content is nested too deeply (more than ${MAX_JSON_DEPTH} levels)`);
  if (scanned === 'nul') throw badRequest(NUL_IN_CONTENT);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new FhirError(400, [issue('invalid', 'Content could not be parsed'), ...jsonProblems(text).map(problemIssue)]);
  }
  // A repeated name leaves the parsed objects fewer properties than the text has names; only
  // then is the text read again to say where (the full reader costs as much as the parse).
  if (propertyCount(value) !== scanned) {
    const duplicates = jsonProblems(text);
    if (duplicates.length > 0) throw new FhirError(400, duplicates.map(problemIssue));
  }
  return value;
}

/** Properties of every object in a parsed JSON value (nested no deeper than MAX_JSON_DEPTH: scanned first). */
function propertyCount(value: unknown): number {
  if (typeof value !== 'object' || value === null) return 0;
  let n = 0;
  if (Array.isArray(value)) {
    for (const item of value) n += propertyCount(item);
    return n;
  }
  for (const key in value) n += 1 + propertyCount((value as Record<string, unknown>)[key]);
  return n;
}

const LINE = 'http://hl7.org/fhir/StructureDefinition/operationoutcome-issue-line';
const COLUMN = 'http://hl7.org/fhir/StructureDefinition/operationoutcome-issue-col';

/** One problem of the text as an issue: `line L, column C: …`, with the R4 line/col extensions. */
function problemIssue(problem: JsonProblem): OperationOutcomeIssue {
  return {
    ...issue('invalid', `Line ${problem.line}, column ${problem.column}: ${problem.text}`),
    extension: [
      { url: LINE, valueInteger: problem.line },
      { url: COLUMN, valueInteger: problem.column },
    ],
  };
}

/**
 * One linear pass over the text, no recursion: brackets outside strings count nesting; inside
 * strings a `\u0000` escape is a NUL (a raw NUL is a JSON syntax error anyway). Otherwise the
 * number of property names: strings followed by a `:` (in text JSON.parse accepts, exactly the
 * names of its objects' members).
 */
function scan(text: string): 'too-deep' | 'nul' | number {
  let depth = 0;
  let inString = false;
  let names = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) {
        if (text.startsWith('u0000', i + 1)) return 'nul';
        i++; // skip the escaped character
      } else if (c === 0x22) {
        inString = false;
        let j = i + 1;
        for (let w = text.charCodeAt(j); w === 0x20 || w === 0x0a || w === 0x0d || w === 0x09; w = text.charCodeAt(++j));
        if (text.charCodeAt(j) === 0x3a) names++;
      }
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > MAX_JSON_DEPTH) return 'too-deep';
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return names;
}
