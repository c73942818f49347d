import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { formatOutput } from '../../operations/format-output.js';
import { loadDefinition } from '../../operations/definitions/index.js';
import type { LookupResult } from '../engine/lookup.js';
import { lookupAnswerText } from './lookup-answer.js';
import { lookupOutput } from './lookup.js';

const definition = loadDefinition('CodeSystem-lookup');

/** The text the generic path gives: the handler's output formatted by the definition, serialised. */
const generic = (r: LookupResult) => JSON.stringify(formatOutput(definition, lookupOutput(r)));

const base: LookupResult = {
  name: 'LOINC',
  version: '2.82',
  display: 'Glucose [Mass/volume] in Blood',
  definition: undefined,
  abstract: false,
  code: '2339-0',
  system: 'http://loinc.org',
  designation: [],
  property: [],
  usedSupplements: [],
};

const use = { system: 'http://loinc.org', code: 'LONG_COMMON_NAME', display: 'Long common name' };

describe('a $lookup answer written straight to JSON text (lookup-answer.ts)', () => {
  const cases: Array<[string, LookupResult]> = [
    ['the fewest parameters', { ...base, version: undefined }],
    ['no display: the code is shown', { ...base, display: undefined }],
    ['a definition, abstract', { ...base, definition: 'A "quoted" definition,\nwith a line break and \u00e9', abstract: true }],
    [
      'designations with and without language, use and source',
      {
        ...base,
        designation: [
          { language: 'en-US', use: { system: 'http://terminology.hl7.org/CodeSystem/hl7TermMaintInfra', code: 'preferredForLanguage' }, value: base.display as string },
          { language: 'de-DE', use, value: 'Glukose [Masse/Volumen] in Blut' },
          { value: 'no language, no use' },
          { language: 'zh-CN', value: '\u8461\u8404\u7cd6', source: 'http://example.org/supplement|1' },
        ],
      },
    ],
    [
      'properties of every kind the index gives',
      {
        ...base,
        property: [
          { code: 'parent', value: { type: 'code', value: 'LP14635-4' } },
          { code: 'parent', value: { type: 'code', value: 'LP1-1' }, description: 'Its display' },
          { code: 'inactive', value: { type: 'boolean', value: false } },
          { code: 'CLASSTYPE', value: { type: 'string', value: '1' }, description: 'Laboratory class' },
          { code: 'rank', value: { type: 'integer', value: 42 } },
          { code: 'weight', value: { type: 'decimal', value: 1.25 } },
          { code: 'when', value: { type: 'dateTime', value: '2024-01-02T03:04:05Z' } },
          { code: 'coded', value: { type: 'Coding', value: { system: 'http://snomed.info/sct', code: '123', display: 'x' } } },
          { code: '363698007', codeDisplay: 'Finding site', value: { type: 'code', value: '39057004' }, description: 'Pulmonary valve' },
        ],
      },
    ],
    ['used supplements', { ...base, usedSupplements: ['http://example.org/a|1', 'http://example.org/b|2'] }],
  ];
  for (const [name, r] of cases) {
    test(`${name}: the generic formatter's text`, () => {
      assert.equal(lookupAnswerText(r), generic(r));
    });
  }

  // What the formatter refuses (a server bug it reports as a 500) is left to it: no text.
  const refused: Array<[string, LookupResult]> = [
    ['an empty display', { ...base, display: '' }],
    ['an empty designation value', { ...base, designation: [{ language: 'en', value: '' }] }],
    ['a decimal that is not finite', { ...base, property: [{ code: 'w', value: { type: 'decimal', value: Number.NaN } }] }],
    ['an integer that is not whole', { ...base, property: [{ code: 'n', value: { type: 'integer', value: 1.5 } }] }],
    ['an empty property code', { ...base, property: [{ code: '', value: { type: 'string', value: 'x' } }] }],
  ];
  for (const [name, r] of refused) {
    test(`${name}: no text, and the generic formatter refuses it too`, () => {
      assert.equal(lookupAnswerText(r), undefined);
      assert.throws(() => generic(r), /out-parameter/);
    });
  }
});
