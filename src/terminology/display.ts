import { displayChoices, msg } from './messages.js';
import type { CodeSystemInfo, Concept, Designation, TxIssue } from './types.js';

/**
 * Displays and languages: which display to return for a requested language, and whether a
 * display given by the client is valid for the concept (docs/terminology.md#displays-and-languages) — any designation in
 * the requested language(s) (all of them when none is requested) matches, case-insensitively;
 * a difference in whitespace alone is reported as such.
 */

export interface LanguagePrefs {
  /** As the client wrote it (echoed in messages), undefined when no language was requested. */
  raw: string | undefined;
  /** Language tags in preference order (q-values dropped, `*` removed). */
  tags: string[];
}

/** Parses a `displayLanguage` value or an Accept-Language header. */
export function parseLanguages(raw: string | undefined): LanguagePrefs {
  if (!raw || !raw.trim()) return { raw: undefined, tags: [] };
  const tags = raw
    .split(',')
    .map((part) => part.split(';')[0].trim())
    .filter((t) => t && t !== '*');
  // `*` alone (fetch sends `Accept-Language: *`) is no preference at all.
  return tags.length > 0 ? { raw, tags } : { raw: undefined, tags: [] };
}

/** `de` matches `de-CH` and the other way round; comparison ignores case. */
export function languageMatches(candidate: string | undefined, requested: string): boolean {
  if (!candidate) return false;
  const c = candidate.toLowerCase();
  const r = requested.toLowerCase();
  return c === r || c.startsWith(`${r}-`) || r.startsWith(`${c}-`);
}

interface Candidate {
  value: string;
  language: string | undefined;
}

/** The display and the designations of a concept, each with its language (default: the code system's). */
export function displayCandidates(cs: CodeSystemInfo, concept: Concept, designations: Designation[]): Candidate[] {
  const out: Candidate[] = [];
  if (concept.display) out.push({ value: concept.display, language: cs.language });
  for (const d of designations) if (d.value) out.push({ value: d.value, language: d.language ?? cs.language });
  return out;
}

/** The display to answer with: the first one in a requested language, else the concept's display. */
export function preferredDisplay(cs: CodeSystemInfo, concept: Concept, designations: Designation[], prefs: LanguagePrefs): string | undefined {
  const all = displayCandidates(cs, concept, designations);
  for (const tag of prefs.tags) {
    const found = all.find((c) => languageMatches(c.language, tag));
    if (found) return found.value;
  }
  return concept.display ?? all[0]?.value;
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
  const inLanguage = prefs.tags.length === 0 ? all : all.filter((c) => prefs.tags.some((t) => languageMatches(c.language, t)));
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
  if (inLanguage.some(same)) return [];
  const choices = displayChoices(unique(inLanguage));
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
