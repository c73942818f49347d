import { FhirError } from '../../fhir/outcome.js';
import { txIssueOutcome } from '../issues.js';
import { displayChoices, msg } from '../messages.js';
import type { CodeSystemInfo, Concept, Designation, TxIssue } from '../types.js';

/**
 * Displays and languages: which display to return for a requested language, and whether a
 * display given by the client is valid for the concept (docs/terminology.md#displays-and-languages) — any designation in
 * the requested language(s) (all of them when none is requested) matches, case-insensitively;
 * a difference in whitespace alone is reported as such.
 */

export interface LanguagePrefs {
  /** As the client wrote it (echoed in messages), undefined when no language was requested. */
  raw: string | undefined;
  /** Language tags in preference order (highest q first; `*` and tags with q=0 removed). */
  tags: string[];
  /**
   * The wildcard `*`: true when given with a weight above 0, false when excluded (`*; q=0`),
   * undefined when not mentioned (docs/terminology.md#displays-and-languages).
   */
  wildcard?: boolean;
  /** The normalised text to echo in `expansion.parameter` (`de, *; q=0`). */
  echo?: string;
}

/** A BCP-47 language tag (loosely: letters, then dash-separated alphanumerics) or `*`. */
const LANGUAGE_TAG = /^(\*|[A-Za-z]{1,8}(-[A-Za-z0-9]{1,8})*)$/;

/** Thrown for a `displayLanguage` that is not a language list (the operation answers 400). */
export class InvalidLanguageError extends Error {
  constructor(readonly value: string) {
    super(`Invalid displayLanguage: '${value}'`);
  }
}

/**
 * Parses a `displayLanguage` value or an Accept-Language header: comma-separated tags with
 * optional `;q=` weights. `strict` (the parameter) refuses a malformed list.
 */
export function parseLanguages(raw: string | undefined, strict = false): LanguagePrefs {
  if (!raw || !raw.trim()) return { raw: undefined, tags: [] };
  const entries: Array<{ tag: string; q: number; weighted: boolean }> = [];
  for (const part of raw.split(',')) {
    const [tagPart, ...params] = part.split(';');
    const tag = tagPart.trim();
    if (!tag) continue;
    const qParam = params.map((x) => x.trim()).find((x) => x.startsWith('q='));
    const q = qParam === undefined ? 1 : Number(qParam.slice(2));
    if (!LANGUAGE_TAG.test(tag) || Number.isNaN(q)) {
      if (strict) throw new InvalidLanguageError(raw);
      continue;
    }
    entries.push({ tag, q, weighted: qParam !== undefined });
  }
  const star = entries.find((e) => e.tag === '*');
  const tags = entries
    .filter((e) => e.tag !== '*' && e.q > 0)
    .map((e, i) => ({ ...e, i }))
    .sort((a, b) => b.q - a.q || a.i - b.i)
    .map((e) => e.tag);
  // `*` alone (fetch sends `Accept-Language: *`) is no preference at all.
  if (tags.length === 0 && (!star || star.q > 0)) return { raw: undefined, tags: [] };
  const echo = entries.some((e) => e.weighted) ? entries.map((e) => (e.weighted ? `${e.tag}; q=${e.q}` : e.tag)).join(', ') : raw;
  return { raw, tags, wildcard: star ? star.q > 0 : undefined, echo };
}

/**
 * The languages of a request whose `displayLanguage` parameter is `param` and whose effective
 * language text is `raw`: a malformed parameter is a 400 (`Invalid displayLanguage: '<value>'`).
 */
export function parseRequestLanguages(raw: string | undefined, param: string | undefined): LanguagePrefs {
  try {
    return parseLanguages(raw, raw !== undefined && raw === param);
  } catch (err) {
    if (!(err instanceof InvalidLanguageError)) throw err;
    throw new FhirError(400, txIssueOutcome([{ severity: 'error', code: 'processing', type: 'invalid-display', id: 'INVALID_DISPLAY_NAME', text: err.message }]));
  }
}

const EXPANSION_PARAMETER = 'http://hl7.org/fhir/tools/StructureDefinition/valueset-expansion-parameter';
const EXPANSION_PARAMETER_CORE = 'http://hl7.org/fhir/StructureDefinition/valueset-expansion-parameter';

/**
 * The display language of a request on a value set, by priority: the `displayLanguage`
 * parameter, the value set's own `displayLanguage` expansion parameter (extension), the
 * Accept-Language header (not `*`), the value set's `language`
 * (docs/terminology.md#displays-and-languages).
 */
export function requestLanguage(
  param: string | undefined,
  vs: { language?: string; compose?: { extension?: Array<{ url?: string; extension?: Array<{ url?: string; valueCode?: string; valueString?: string }> }> } } | undefined,
  header: string | undefined,
): string | undefined {
  if (param) return param;
  for (const ext of vs?.compose?.extension ?? []) {
    if (ext.url !== EXPANSION_PARAMETER && ext.url !== EXPANSION_PARAMETER_CORE) continue;
    const name = ext.extension?.find((e) => e.url === 'name');
    const value = ext.extension?.find((e) => e.url === 'value');
    if ((name?.valueCode ?? name?.valueString) === 'displayLanguage') return value?.valueCode ?? value?.valueString;
  }
  if (header && header.trim() !== '*') return header;
  return vs?.language;
}

/**
 * `de` matches `de-CH` and the other way round; comparison ignores case. A display without a
 * language (a code system that declares none) may be in any language.
 */
export function languageMatches(candidate: string | undefined, requested: string): boolean {
  if (!candidate) return true;
  return languageRank(candidate, requested) !== undefined;
}

/** 0: the same tag; 1: the candidate is a regional variant of the request; 2: the reverse. */
function languageRank(candidate: string, requested: string): number | undefined {
  const c = candidate.toLowerCase();
  const r = requested.toLowerCase();
  if (c === r) return 0;
  if (c.startsWith(`${r}-`)) return 1;
  if (r.startsWith(`${c}-`)) return 2;
  return undefined;
}

interface Candidate {
  value: string;
  language: string | undefined;
  /** The status of an inactive designation (`withdrawn`, `deprecated`): valid, but no longer current. */
  inactive?: string;
}

/**
 * The displays a client may give for a concept: its display and the designations that are
 * displays — without a `use`, or with a display use (docs/terminology.md#displays-and-languages);
 * a designation with another use (an abbreviation, a historic form, …) is not a display. Each
 * with its language (default: the code system's).
 */
export function displayCandidates(cs: CodeSystemInfo, concept: Concept, designations: Designation[]): Candidate[] {
  const out: Candidate[] = [];
  if (concept.display) out.push({ value: concept.display, language: cs.language });
  for (const d of designations) {
    if (!d.value || (d.use && !isDisplayDesignationUse(d.use))) continue;
    const inactive = designationStatus(d);
    out.push({ value: d.value, language: d.language ?? cs.language, ...(inactive ? { inactive } : {}) });
  }
  return out;
}

const STANDARDS_STATUS = 'http://hl7.org/fhir/StructureDefinition/structuredefinition-standards-status';

/** The status of a former designation (`retired`), or `withdrawn` / `deprecated` when its standards status makes it inactive, else undefined. */
export function designationStatus(d: Designation): string | undefined {
  if (d.retired) return d.retired;
  const status = d.extension?.find((e) => e.url === STANDARDS_STATUS)?.valueCode;
  return status === 'withdrawn' || status === 'deprecated' ? status : undefined;
}

/** The display to answer with: the first one in a requested language, else the concept's display. */
export function preferredDisplay(cs: CodeSystemInfo, concept: Concept, designations: Designation[], prefs: LanguagePrefs): string | undefined {
  const choice = chooseDisplay(cs, concept, designations, prefs);
  return choice.kind === 'none' ? (prefs.wildcard === false ? undefined : concept.display) : choice.value;
}

/** Where a display came from: the concept's own display, one of its designations, or nothing in the requested languages. */
export type DisplayChoice = { kind: 'display'; value: string } | { kind: 'designation'; value: string; designation: Designation } | { kind: 'none' };

/**
 * Chooses the display for the requested languages (docs/terminology.md#displays-and-languages):
 * per tag in preference order, the concept's display when its language matches, else a
 * designation in that language (the same tag before a regional variant before the base
 * language; designations without a `use`, or used as display, first). No tag → the display.
 */
export function chooseDisplay(cs: CodeSystemInfo, concept: Concept, designations: Designation[], prefs: LanguagePrefs): DisplayChoice {
  if (prefs.tags.length === 0) return concept.display ? { kind: 'display', value: concept.display } : { kind: 'none' };
  for (const tag of prefs.tags) {
    // A display without a language (the code system declares none) is the last resort.
    const displayRank = concept.display ? (cs.language ? languageRank(cs.language, tag) : 3) : undefined;
    let best: { d: Designation | undefined; score: number } | undefined = displayRank === undefined ? undefined : { d: undefined, score: displayRank * 2 };
    for (const d of designations) {
      if (!d.value || d.retired) continue;
      const rank = languageRank(d.language ?? cs.language ?? '', tag);
      if (rank === undefined) continue;
      const score = rank * 2 + (d.use && !isDisplayUse(d.use) ? 1 : 0);
      if (!best || score < best.score) best = { d, score };
    }
    if (best?.d) return { kind: 'designation', value: best.d.value, designation: best.d };
    if (best && concept.display) return { kind: 'display', value: concept.display };
  }
  if (prefs.wildcard === true && concept.display) return { kind: 'display', value: concept.display };
  return { kind: 'none' };
}

/** The designation use of a concept's display listed among its designations. */
export const PREFERRED_FOR_LANGUAGE = { system: 'http://terminology.hl7.org/CodeSystem/hl7TermMaintInfra', code: 'preferredForLanguage', display: 'Preferred For Language' };

function isDisplayUse(use: NonNullable<Designation['use']>): boolean {
  return use.code === PREFERRED_FOR_LANGUAGE.code || (use.system === 'http://snomed.info/sct' && use.code === '900000000000003001');
}

/** Uses under which a designation is a display: none, preferred for a language, display, SNOMED FSN or synonym. */
const DISPLAY_USES = new Set(['preferredForLanguage', 'display', '900000000000003001', '900000000000013009']);

function isDisplayDesignationUse(use: NonNullable<Designation['use']>): boolean {
  return use.code !== undefined && DISPLAY_USES.has(use.code);
}

/**
 * The designations shown with a display choice: when a designation became the display, it is
 * not repeated and the concept's own display is listed instead, in the code system's language
 * with use `preferredForLanguage` (also when no display was in the requested languages).
 */
export function designationsFor(cs: CodeSystemInfo, concept: Concept, designations: Designation[], choice: DisplayChoice): Designation[] {
  if (choice.kind === 'display') return designations;
  const rest = choice.kind === 'designation' ? designations.filter((d) => d !== choice.designation) : designations;
  if (!concept.display) return rest;
  return [{ language: cs.language, use: PREFERRED_FOR_LANGUAGE, value: concept.display }, ...rest];
}

const normalise = (s: string) => s.replace(/\s+/g, ' ').trim().toLowerCase();

/**
 * Checks a client-supplied display. Returns the issues (empty when valid) for the display at
 * `expression`; `lenient` downgrades errors to warnings.
 */
export function checkDisplay(
  given: string,
  system: string,
  cs: CodeSystemInfo,
  concept: Concept,
  designations: Designation[],
  prefs: LanguagePrefs,
  expression: string,
  lenient: boolean,
): TxIssue[] {
  const all = displayCandidates(cs, concept, designations);
  if (all.length === 0) return [];
  const inLanguage = prefs.tags.length === 0 || prefs.wildcard === true ? all : all.filter((c) => prefs.tags.some((t) => languageMatches(c.language, t)));
  const same = (c: Candidate) => c.value.toLowerCase() === given.toLowerCase();
  const sameish = (c: Candidate) => normalise(c.value) === normalise(given);
  const languages = prefs.raw ?? '--';
  const severity = lenient ? 'warning' : 'error';
  const issue = (id: string, text: string, sev: TxIssue['severity'] = severity): TxIssue => ({
    severity: sev,
    code: 'invalid',
    type: 'invalid-display',
    id,
    text,
    expression,
    inMessage: true,
  });
  if (inLanguage.length === 0) {
    if (all.some(same) || all.some(sameish)) {
      return [issue('NO_VALID_DISPLAY_FOUND_NONE_FOR_LANG_OK', msg.noDisplayForLanguageValid(system, concept.code, languages, given), 'information')];
    }
    return [issue('NO_VALID_DISPLAY_FOUND_NONE_FOR_LANG_ERR', msg.noDisplayForLanguageWrong(given, system, concept.code, languages, concept.display ?? all[0].value))];
  }
  const current = inLanguage.filter((c) => !c.inactive);
  if (current.some(same)) return [];
  const retired = inLanguage.find(same);
  if (retired?.inactive) {
    const correct = [...new Set(current.map((c) => c.value))].sort();
    return [{ ...issue('INACTIVE_DISPLAY_FOUND', msg.inactiveDisplay(given, concept.code, retired.inactive, correct), 'warning'), type: 'display-comment', inMessage: false }];
  }
  const choices = displayChoices(unique(current.length > 0 ? current : inLanguage));
  if (inLanguage.some(sameish)) return [issue('Display_Name_WS_for__should_be_one_of__instead_of', msg.wrongWhitespace(given, system, concept.code, choices, languages))];
  return [issue('Display_Name_for__should_be_one_of__instead_of', msg.wrongDisplay(given, system, concept.code, choices, languages))];
}

function unique(list: Candidate[]): Candidate[] {
  const seen = new Set<string>();
  return list.filter((c) => {
    const k = `${c.value}\u0000${c.language ?? ''}`;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}
