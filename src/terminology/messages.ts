import { versionList } from './versions.js';

/**
 * The texts of terminology messages and issues. They follow what the HL7 reference server
 * (tx.fhir.org) answers, so clients and the HL7 conformance tests see the same wording
 * (`shared/conformance/tx-cases/messages-tx.fhir.org.json`). One function per message.
 */

/** How a coding is named in messages: `system|version#code ('display')`. */
export function codingText(system: string | undefined, version: string | undefined, code: string, display?: string): string {
  return `${system ?? ''}${version ? `|${version}` : ''}#${code}${display ? ` ('${display}')` : ''}`;
}

/** How a value set is named in messages: `url|version`, or `(unidentified)` for an anonymous one. */
export function valueSetText(vs: { url?: string; version?: string }): string {
  if (!vs.url) return '(unidentified)';
  return vs.version ? `${vs.url}|${vs.version}` : vs.url;
}

export const msg = {
  notInValueSet: (coding: string, vs: string) => `The provided code '${coding}' was not found in the value set '${vs}'`,
  noValidCoding: (vs: string) => `No valid coding was found for the value set '${vs}'`,
  unknownCode: (code: string, url: string, version: string | undefined, versionLabel?: string) =>
    `Unknown code '${code}' in the CodeSystem '${url}'${version ? ` version '${version}'` : ''}${version && versionLabel ? ` (${versionLabel})` : ''}`,
  unknownCodeInFragment: (code: string, url: string, version: string | undefined) =>
    `Unknown Code '${code}' in the CodeSystem '${url}'${version ? ` version '${version}'` : ''} - note that the code system is labeled as a fragment, so the code may be valid in some other fragment`,
  /**
   * The reference server quotes the URL in some situations and not in others; `quoted` says
   * which (see validate-coding.ts).
   */
  unknownSystem: (url: string, quoted: boolean) =>
    `A definition for CodeSystem ${quoted ? `'${url}'` : url} could not be found, so the code cannot be validated`,
  expansionTooCostly: (vs: string, limit: number) => `The value set '${vs}' expansion has too many codes to produce (>${limit})`,
  grammarUnclosed: (system: string) => `The code System '${system}' has a grammar and so has infinite members`,
  /** `valueset-unclosed-reason` of an expansion that lists a grammar's common codes. */
  grammarCommonCodes: (url: string, common: string) =>
    `The code System '${url}' has a grammar and so has infinite members. This extension is based on ${common}`,
  noDefinition: (vs: string) => `The value set '${vs}' has no compose and no expansion, so it cannot be expanded`,
  cannotExpand: (url: string) => `A definition for CodeSystem '${url}' could not be found, so the value set cannot be expanded`,
  /** `valid`: the known versions, newest first (listed oldest first). */
  unknownSystemVersion: (url: string, version: string, valid: string[]) =>
    `A definition for CodeSystem '${url}' version '${version}' could not be found, so the code cannot be validated. ${validVersions(valid)}`,
  cannotExpandVersion: (url: string, version: string, valid: string[]) =>
    `A definition for CodeSystem '${url}' version '${version}' could not be found, so the value set cannot be expanded. ${validVersions(valid)}`,
  versionMismatch: (system: string, version: string, value: string) =>
    `The code system '${system}' version '${version}' in the ValueSet include is different to the one in the value ('${value}')`,
  versionMismatchChanged: (system: string, version: string, declared: string, value: string) =>
    `The code system '${system}' version '${version}' resulting from the version '${declared}' in the ValueSet include is different to the one in the value ('${value}')`,
  versionMismatchVersionless: (system: string, version: string, value: string) =>
    `The code system '${system}' version '${version}' for the versionless include in the ValueSet include is different to the one in the value ('${value}')`,
  versionNotAllowed: (version: string, system: string, pattern: string) =>
    `The version '${version}' is not allowed for system '${system}': required to be '${pattern}' by a version-check parameter`,
  unknownValueSet: (url: string) => `A definition for the value Set '${url}' could not be found`,
  /** An imported value set (`include.valueSet`) not found: a pinned version is named as such. */
  unknownImport: (ref: string) => {
    const bar = ref.indexOf('|');
    return bar < 0 ? msg.unknownValueSet(ref) : `Unable to find included value set '${ref.slice(0, bar)}' version '${ref.slice(bar + 1)}'`;
  },
  /** `matches`: systems of the value set that have the code (several = ambiguous); else `systems` searched. */
  cannotInfer: (code: string, vs: string, matches: string[], systems: string[]) =>
    `The System URI could not be determined for the code '${code}' in the ValueSet '${vs}'` +
    (matches.length > 1
      ? `: value set expansion has multiple matches: [${matches.join(', ')}]`
      : `: the code is not in ${systems.length === 1 ? `its code system ${systems[0]}` : `any of its code systems [${systems.join(', ')}]`}`),
  systemIsValueSet: (url: string) => `The Coding references a value set, not a code system ('${url}')`,
  fragmentExpansion: (url: string) => `This extension is based on a fragment of the code system ${url}`,
  systemIsSupplement: (canonical: string) => `CodeSystem ${canonical} is a supplement, so can't be used as a value in Coding.system`,
  localSystem: () => 'Coding.system must be an absolute reference, not a local reference',
  noSystem: () => 'Coding has no system. A code with no system has no defined meaning, and it cannot be validated. A system should be provided',
  inactiveConcept: (code: string, status: string) => `The concept '${code}' has a status of ${status} and its use should be reviewed`,
  /** A concept that is deprecated but still active. */
  deprecatedConcept: (code: string) => `The concept '${code}' is deprecated and its use should be reviewed`,
  /** A display that matches only an inactive (withdrawn / deprecated) designation. */
  inactiveDisplay: (display: string, code: string, status: string, correct: string[]) =>
    `'${display}' is no longer considered a correct display for code '${code}' (status = ${status}). The correct display is one of ${correct.map((d) => (/[\s,"]/.test(d) ? `"${d}"` : d)).join(',')}.`,
  deprecatedInValueSet: (code: string, system: string, vs: string, status: string) =>
    `The presence of the concept '${code}' in the system '${system}' in the value set ${vs} is marked with a status of ${status} and its use should be reviewed`,
  notActive: (code: string) => `The concept '${code}' is valid but is not active`,
  abstractNotAllowed: (coding: string) => `Code '${coding}' is abstract, and not allowed in this context`,
  wrongDisplay: (display: string, system: string, code: string, choices: string, languages: string) =>
    `Wrong Display Name '${display}' for ${system}#${code}. Valid display is ${choices} (for the language(s) '${languages}')`,
  wrongWhitespace: (display: string, system: string, code: string, choices: string, languages: string) =>
    `Wrong whitespace in Display Name '${display}' for ${system}#${code}. Valid display is ${choices} (for the language(s) '${languages}')`,
  noDisplayForLanguageValid: (system: string, code: string, languages: string, display: string) =>
    `There are no valid display names found for the code ${system}#${code} for language(s) '${languages}'. The display is '${display}' which is a valid display for the default language`,
  noDisplayForLanguageWrong: (display: string, system: string, code: string, languages: string, defaultDisplay: string) =>
    `Wrong Display Name '${display}' for ${system}#${code}. There are no valid display names found for language(s) '${languages}'. Default display is '${defaultDisplay}'`,
  caseDiffers: (given: string, correct: string, system: string) =>
    `The code '${given}' differs from the correct code '${correct}' by case. Although the code system '${system}' is case insensitive, implementers are strongly encouraged to use the correct case anyway`,
  filterNoValue: (system: string, property: string, op: string) => `The system ${system} filter with property = ${property}, op = ${op} has no value`,
  filterNotSupported: (system: string, property: string, op: string) =>
    `The filter with property = ${property}, op = ${op} is not supported for the system ${system}`,
  badRegex: (pattern: string) => `The regular expression '${pattern}' is not valid or too complex`,
  /** `pathway`: the value sets (`url|version`) from the root to the one whose reference closes the cycle. */
  valueSetCycle: (target: string, pathway: string[]) => `Found a circularity pointing to ${target} processing ValueSet with pathway [${pathway.join(', ')}]`,
  /** A CodeSystem or ValueSet used by the request has a status worth reviewing (docs/terminology.md#status-of-the-resources-used). */
  statusReference: (status: string, type: string, canonical: string) => `Reference to ${status} ${type} ${canonical}`,
  // Contract texts (docs/terminology.md#errors) for errors answered with a 4xx status.
  codeSystemNotFound: (url: string) => `CodeSystem ${url} not found`,
  supplementNotFound: (url: string) => `Required supplement not found: ${url}`,
  valueSetNotFound: (url: string) => `ValueSet ${url} not found`,
  /** `ValueSet/$compare`: the relation of `a` (this) to `b` (other), in words. */
  compared: (relation: string, a: string, b: string) => {
    switch (relation) {
      case 'subset': return `The valueSet ${a} is a sub-set of the valueSet ${b}`;
      case 'superset': return `The valueSet ${a} is a super-set of the valueSet ${b}`;
      case 'overlapping': return `Both value sets ${a} and ${b} contain the codes the other doesn't, but there is some overlap`;
      case 'disjoint': return `No shared codes between the value sets ${a} and ${b}`;
      case 'empty': return `Both the value sets ${a} and ${b} are empty`;
      default: return `The value sets ${a} and ${b} contain the same codes`;
    }
  },
  notCompared: (a: string, b: string, why: string) => `Unable to compare ${a} and ${b}: This expansion failed: ${why}`,
  codeNotInSystem: (code: string, url: string) => `Code '${code}' not found in CodeSystem ${url}`,
  notIsA: (url: string) => `CodeSystem ${url} does not define an is-a hierarchy`,
  instanceSystemMismatch: (named: string, url: string) => `The code system '${named}' is not the code system '${url}' the operation was invoked on`,
  conceptMapNotFound: (url: string) => `ConceptMap ${url} not found`,
  noTranslation: (codings: string) => `No translation found for ${codings}`,
  /** `$batch-validate-code`: a validation that names nothing to validate (the reference server's text). */
  nothingToValidate: () => 'Unable to find code to validate (looked for coding | codeableConcept | code+system | code+inferSystem in parameters',
};

function validVersions(valid: string[]): string {
  return valid.length > 0 ? `Valid versions: ${versionList(valid)}` : 'No versions of this code system are known';
}

/** Choice list of a wrong-display message: `'Display 1' (en)` or `one of 3 choices: 'a' (en), 'b' (de) or 'c' (fr)`. */
export function displayChoices(choices: Array<{ value: string; language: string | undefined }>): string {
  const one = (c: { value: string; language: string | undefined }) => `'${c.value}'${c.language ? ` (${c.language})` : ''}`;
  if (choices.length === 1) return one(choices[0]);
  const texts = choices.map(one);
  return `one of ${choices.length} choices: ${texts.slice(0, -1).join(', ')} or ${texts[texts.length - 1]}`;
}
