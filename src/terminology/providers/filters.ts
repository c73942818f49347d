import type { ValueSetComposeIncludeFilter } from '@medplum/fhirtypes';
import { stemmer } from 'stemmer';
import { FhirError } from '../../fhir/outcome.js';
import { txIssueOutcome } from '../issues.js';
import { msg } from '../messages.js';
import type { CodeSystemInfo } from '../types.js';

/**
 * What a compose filter means, whatever the provider that evaluates it
 * (docs/terminology.md#value-set-membership): its operator (R4 `op` or the R5 extension), the
 * anchoring and bounds of regular expressions, which property is the notSelectable flag, the
 * flag values a boolean filter selects, the words of a text filter, and the 400 of a filter
 * that cannot be evaluated.
 */

/** R5 filter operators reach R4 as this extension on `_op` (e.g. `child-of`). */
const FILTER_OP_EXT = 'http://hl7.org/fhir/5.0/StructureDefinition/extension-ValueSet.compose.include.filter.op';
/** Longer patterns are refused outright (the engine's cost grows with the pattern). */
const MAX_REGEX_LENGTH = 500;

/** The operator of a filter, from `op` or the R5 extension. */
export function filterOp(f: ValueSetComposeIncludeFilter): string | undefined {
  if (f.op) return f.op;
  const ext = (f as { _op?: { extension?: Array<{ url?: string; valueCode?: string }> } })._op?.extension;
  return ext?.find((e) => e.url === FILTER_OP_EXT)?.valueCode;
}

/**
 * FHIR regex filters match the whole value. A pattern whose groups do not balance could close
 * the anchoring group (`a)|(b` → `^(?:a)|(b)$`, which matches far more): it is refused.
 */
export function anchored(pattern: string, path: string): string {
  if (pattern.length > MAX_REGEX_LENGTH) throw invalidValueSet(msg.badRegex(pattern.slice(0, 40) + '…'), path);
  if (!groupsBalance(pattern)) throw invalidValueSet(msg.badRegex(pattern.slice(0, 40)), path);
  return `^(?:${pattern})$`;
}

/** True when every `(` outside a bracket expression is closed by a `)` after it (escapes skipped). */
function groupsBalance(pattern: string): boolean {
  let depth = 0;
  let inBracket = false;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === '\\') i++;
    else if (inBracket) inBracket = !(c === ']' && pattern[i - 1] !== '[' && pattern.slice(i - 2, i) !== '[^');
    else if (c === '[') inBracket = true;
    else if (c === '(') depth++;
    else if (c === ')' && --depth < 0) return false;
  }
  return depth === 0 && !inBracket;
}

const NOT_SELECTABLE_URI = 'http://hl7.org/fhir/concept-properties#notSelectable';

/**
 * Whether a filter's property is the concept's notSelectable (abstract) flag: by its
 * conventional code (`notSelectable`, `abstract`), or a property the code system declares with
 * the concept-properties#notSelectable URI under another code (docs/terminology.md#value-set-membership).
 */
export function isNotSelectableProperty(cs: CodeSystemInfo, property: string): boolean {
  if (property === 'notSelectable' || property === 'abstract') return !cs.propertyDefs.some((d) => d.code === property && d.uri && d.uri !== NOT_SELECTABLE_URI);
  return cs.propertyDefs.some((d) => d.code === property && d.uri === NOT_SELECTABLE_URI);
}

/**
 * The concept property a notSelectable filter reads (docs/terminology.md#value-set-membership):
 * the property the code system declares with the concept-properties#notSelectable URI, else the
 * filter's own code. Its values are compared as written, like any property's: `= true` and `in`
 * select only concepts that state a matching value, `not-in` also those that state none.
 */
export function notSelectableCode(cs: CodeSystemInfo, property: string): string {
  return cs.propertyDefs.find((d) => d.uri === NOT_SELECTABLE_URI)?.code ?? property;
}

/** A value set that cannot be evaluated: 400 with a tx `vs-invalid` issue at the filter. */
export function invalidValueSet(text: string, expression: string, id?: string): FhirError {
  return new FhirError(400, txIssueOutcome([{ severity: 'error', code: 'invalid', type: 'vs-invalid', id, text, expression }]));
}

/** Maps PostgreSQL's "invalid regular expression" error to a 400. */
export function regexError(err: unknown, pattern?: string, expression?: string): FhirError | undefined {
  const code = (err as { code?: string })?.code;
  if (code === '2201B') {
    // The message names the pattern as the value set gives it (anchored() wraps it).
    const given = pattern?.startsWith('^(?:') && pattern.endsWith(')$') ? pattern.slice(4, -2) : pattern;
    const text = msg.badRegex(given ?? String((err as Error).message ?? ''));
    return new FhirError(400, txIssueOutcome([{ severity: 'error', code: 'invalid', type: 'vs-invalid', text, expression }]));
  }
  return undefined;
}

/**
 * The words of an expansion's text `filter` (split at anything but letters and digits): a
 * concept matches when every word matches a word of its display or of one of its designations,
 * ignoring case and order, or when its code starts with the text (codeMatchesFilter;
 * docs/terminology.md#expand).
 */
export function filterWords(text: string): string[] {
  return text.split(/[^\p{L}\p{N}]+/u).filter(Boolean);
}

/**
 * The other way a concept meets the text filter: its code starts with the filter text, ignoring
 * case (a code typed, or its start — the left matching the `$expand` `filter` description names).
 */
export function codeMatchesFilter(code: string, text: string): boolean {
  const t = text.trim().toLowerCase();
  return t !== '' && code.toLowerCase().startsWith(t);
}

/**
 * Whether a concept meets an expansion's text `filter`, the one rule every provider applies
 * (docs/terminology.md#expand): its code starts with the text, or every word of the text matches
 * a word of one of the concept's texts (display, designations), ignoring case and order. A word
 * matches when the concept's word starts with it (`att` finds `attack`) or when the Porter stem
 * of the concept's word starts with the word's stem (`attacks` finds `attack`, `happy` finds
 * `happiness`). Stems are computed once per word of a request (the matcher caches them), and
 * only for words that share the filter word's first two letters, the part Porter never changes.
 */
export function textFilterMatcher(text: string): (code: string, texts: readonly string[]) => boolean {
  const words = filterWords(text.toLowerCase()).map((w) => ({ w, stem: stemmer(w), head: w.slice(0, 2) }));
  const stems = new Map<string, string>();
  const stemOf = (x: string) => {
    let s = stems.get(x);
    if (s === undefined) {
      s = stemmer(x);
      if (stems.size < MAX_CACHED_STEMS) stems.set(x, s);
    }
    return s;
  };
  return (code, texts) => {
    if (codeMatchesFilter(code, text)) return true;
    if (words.length === 0) return false;
    const conceptWords = texts.flatMap((t) => filterWords(t.toLowerCase()));
    return words.every(({ w, stem, head }) => conceptWords.some((x) => x.startsWith(w) || (x.startsWith(head) && stemOf(x).startsWith(stem))));
  };
}

/** Stems a text-filter matcher remembers (the distinct words of the concepts it reads). */
const MAX_CACHED_STEMS = 100_000;

/**
 * The SQL side of textFilterMatcher: a pattern that every text holding a word the filter word
 * can match also matches (a word starting with the filter word's first two letters); the
 * matcher then decides on the rows it selects.
 */
export function textWordCandidate(word: string): string {
  return `(^|[^[:alnum:]])${escapeRegex(word.toLowerCase().slice(0, 2))}`;
}

/** A word as a literal inside a regular expression. */
export const escapeRegex = (w: string) => w.replace(/[\\.^$|?*+()[\]{}]/g, '\\$&');
