import type { ValueSet, ValueSetComposeInclude } from '@medplum/fhirtypes';
import { LIST_CODE, LOINC_URL, LOINC_VS, PART_CODE, TERM_CODE } from './loinc-model.js';

/**
 * LOINC's implicit value sets (docs/terminology.md#loinc): `http://loinc.org/vs` is all of
 * LOINC, `http://loinc.org/vs/<LL code>` the answers of an answer list (in their list order is
 * not kept: expansions are in code-system order), `http://loinc.org/vs/<LP code>` the LOINC
 * terms under a part in the multiaxial hierarchy. Undefined for any other URL.
 *
 * `code` is the LL or LP code the URL names (the caller checks that the loaded release has it);
 * the value set takes the version of the LOINC release it is evaluated against.
 */
export function loincImplicitCode(url: string): string | undefined | null {
  if (url === LOINC_VS) return null;
  if (!url.startsWith(`${LOINC_VS}/`)) return undefined;
  const code = url.slice(LOINC_VS.length + 1);
  return LIST_CODE.test(code) || PART_CODE.test(code) ? code : undefined;
}

export function loincImplicitValueSet(url: string, code: string | null, version: string | undefined, display?: string): ValueSet {
  const include: ValueSetComposeInclude = { system: LOINC_URL, ...(version ? { version } : {}) };
  let name = 'LOINC';
  let title = 'All LOINC codes';
  if (code && LIST_CODE.test(code)) {
    include.filter = [{ property: 'LIST', op: '=', value: code }];
    name = `LOINC_answer_list_${code.replace('-', '_')}`;
    title = `LOINC answer list ${code}${display ? ` ${display}` : ''}`;
  } else if (code) {
    include.filter = [
      { property: 'ancestor', op: '=', value: code },
      { property: 'concept', op: 'regex', value: TERM_CODE.source.slice(1, -1) },
    ];
    name = `LOINC_part_${code.replace('-', '_')}`;
    title = `LOINC terms under ${code}${display ? ` ${display}` : ''}`;
  }
  return {
    resourceType: 'ValueSet',
    url,
    ...(version ? { version } : {}),
    name,
    title,
    status: 'active',
    experimental: false,
    publisher: 'Regenstrief Institute, Inc.',
    compose: { include: [include] },
  };
}
