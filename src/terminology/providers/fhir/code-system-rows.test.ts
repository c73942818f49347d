import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { CodeSystem, CodeSystemConcept, CodeSystemConceptProperty, CodeSystemProperty } from '@medplum/fhirtypes';
import { DESIGNATION_COLUMNS, PROPERTY_COLUMNS } from '../../store/index-columns.js';
import { CONCEPT_PROPERTIES } from '../concept-extensions.js';
import {
  codeSystemRows,
  conceptRow,
  propertyKinds,
  propertyRow,
  type ConceptRow,
  type DesignationRow,
  type PropertyRow,
} from './code-system-rows.js';

function codeSystem(concept: CodeSystemConcept[], property?: CodeSystemProperty[]): CodeSystem {
  return { resourceType: 'CodeSystem', url: 'http://example.org/cs', status: 'active', content: 'complete', concept, property };
}

/** A concept row with the defaults of a concept that has no flags. */
function row(code: string, extra: Partial<ConceptRow> = {}): ConceptRow {
  return { code, display: undefined, definition: undefined, inactive: false, abstract: false, status: undefined, ...extra };
}

/** Edges by code, sorted (`child>parent`). */
function edgesByCode(cs: CodeSystem): string[] {
  const rows = codeSystemRows(cs);
  return rows.edges.map(([c, p]) => `${rows.concepts[c - 1].code}>${rows.concepts[p - 1].code}`).sort();
}

const conventional = propertyKinds(undefined);

describe('codeSystemRows: concepts and nesting', () => {
  test("a language pack (a supplement with a language) gives each display as a designation in that language; a code system does not", () => {
    const concepts = (): CodeSystemConcept[] => [{ code: 'a', display: 'Ah' }, { code: 'b' }, { code: 'c', display: 'Ce', designation: [{ language: 'de', value: 'Ce' }] }];
    const base = { resourceType: 'CodeSystem', status: 'active', language: 'de' } as const;
    const pack = codeSystemRows({ ...base, content: 'supplement', concept: concepts() });
    assert.deepEqual(
      pack.designations.map((d) => [d.concept, d.language, d.value]),
      [
        [1, 'de', 'Ah'],
        [3, 'de', 'Ce'],
      ],
    );
    assert.deepEqual(codeSystemRows({ ...base, content: 'complete', concept: concepts() }).designations.map((d) => d.value), ['Ce']);
    assert.deepEqual(codeSystemRows({ ...base, language: undefined, content: 'supplement', concept: concepts() }).designations.map((d) => d.value), ['Ce']);
  });

  test('concepts are numbered 1..n in document order (depth first), nested ones after their parent', () => {
    const rows = codeSystemRows(
      codeSystem([
        { code: 'A', display: 'Alpha', definition: 'The first', concept: [{ code: 'A1' }, { code: 'A2', concept: [{ code: 'A2a' }] }] },
        { code: 'B' },
      ]),
    );
    assert.deepEqual(rows.concepts, [row('A', { display: 'Alpha', definition: 'The first' }), row('A1'), row('A2'), row('A2a'), row('B')]);
    assert.deepEqual(rows.edges, [
      [2, 1],
      [3, 1],
      [4, 3],
    ]);
    assert.deepEqual(rows.properties, []);
    assert.deepEqual(rows.designations, []);
  });

  test('an empty code system has no rows', () => {
    assert.deepEqual(codeSystemRows({ resourceType: 'CodeSystem', status: 'active', content: 'not-present' }), {
      concepts: [],
      properties: [],
      designations: [],
      edges: [],
    });
  });

  test('a code repeated under another parent is one concept with both parents; its first occurrence gives the row', () => {
    const rows = codeSystemRows(
      codeSystem([
        { code: 'A', concept: [{ code: 'C', display: 'first', property: [{ code: 'p', valueString: '1' }], designation: [{ value: 'd1' }] }] },
        { code: 'B', concept: [{ code: 'C', display: 'second', property: [{ code: 'p', valueString: '2' }], designation: [{ value: 'd2' }] }] },
      ]),
    );
    assert.deepEqual(rows.concepts, [row('A'), row('C', { display: 'first' }), row('B')]);
    assert.deepEqual(rows.edges, [
      [2, 1],
      [2, 3],
    ]);
    assert.deepEqual(rows.properties, [{ concept: 2, code: 'p', type: 'string', value: '1', system: undefined, display: undefined }]);
    assert.deepEqual(
      rows.designations.map((d) => d.value),
      ['d1'],
    );
  });

  test('children under a repeated code are attached to the one concept', () => {
    const cs = codeSystem([{ code: 'A', concept: [{ code: 'C' }] }, { code: 'B', concept: [{ code: 'C', concept: [{ code: 'D' }] }] }]);
    assert.deepEqual(edgesByCode(cs), ['C>A', 'C>B', 'D>C']);
  });

  test('concepts without a code are skipped', () => {
    const rows = codeSystemRows(codeSystem([{ code: '' }, { display: 'no code' } as CodeSystemConcept, { code: 'A' }]));
    assert.deepEqual(rows.concepts, [row('A')]);
  });

  test('a 50 000-deep nesting is walked without overflowing the stack', () => {
    const root: CodeSystemConcept = { code: 'c1' };
    let leaf = root;
    for (let i = 2; i <= 50_000; i++) {
      const next: CodeSystemConcept = { code: `c${i}` };
      leaf.concept = [next];
      leaf = next;
    }
    const rows = codeSystemRows(codeSystem([root]));
    assert.equal(rows.concepts.length, 50_000);
    assert.equal(rows.edges.length, 49_999);
    assert.deepEqual(rows.edges[49_998], [50_000, 49_999]);
  });
});

describe('codeSystemRows: parent / child properties', () => {
  test('parent by valueCode, valueCoding and valueString', () => {
    const cs = codeSystem([
      { code: 'P' },
      { code: 'X', property: [{ code: 'parent', valueCode: 'P' }] },
      { code: 'Y', property: [{ code: 'parent', valueCoding: { system: 'http://example.org/cs', code: 'P' } }] },
      { code: 'Z', property: [{ code: 'parent', valueString: 'P' }] },
    ]);
    assert.deepEqual(edgesByCode(cs), ['X>P', 'Y>P', 'Z>P']);
  });

  test('child states the edge from the other side', () => {
    const cs = codeSystem([{ code: 'P', property: [{ code: 'child', valueCode: 'X' }, { code: 'child', valueCode: 'Y' }] }, { code: 'X' }, { code: 'Y' }]);
    assert.deepEqual(edgesByCode(cs), ['X>P', 'Y>P']);
  });

  test('a parent declared before its target concept is resolved', () => {
    const cs = codeSystem([{ code: 'X', property: [{ code: 'parent', valueCode: 'P' }] }, { code: 'P' }]);
    assert.deepEqual(edgesByCode(cs), ['X>P']);
  });

  test('the same edge stated by nesting, parent and child is one edge', () => {
    const cs = codeSystem([
      { code: 'P', property: [{ code: 'child', valueCode: 'X' }], concept: [{ code: 'X', property: [{ code: 'parent', valueCode: 'P' }] }] },
    ]);
    assert.deepEqual(codeSystemRows(cs).edges, [[2, 1]]);
  });

  test('unknown targets and self references add no edge', () => {
    const cs = codeSystem([{ code: 'X', property: [{ code: 'parent', valueCode: 'missing' }, { code: 'parent', valueCode: 'X' }, { code: 'child', valueCode: 'X' }] }]);
    assert.deepEqual(codeSystemRows(cs).edges, []);
  });

  test('parent / child properties are hierarchy, not stored property rows', () => {
    const cs = codeSystem([{ code: 'P' }, { code: 'X', property: [{ code: 'parent', valueCode: 'P' }, { code: 'colour', valueCode: 'red' }] }]);
    assert.deepEqual(codeSystemRows(cs).properties, [{ concept: 2, code: 'colour', type: 'code', value: 'red', system: undefined, display: undefined }]);
  });

  test('a property declared with the concept-properties URI counts by its meaning, whatever its code', () => {
    const cs = codeSystem(
      [{ code: 'P' }, { code: 'X', property: [{ code: 'subsumedBy', valueCode: 'P' }] }, { code: 'Q', property: [{ code: 'narrower', valueCode: 'X' }] }],
      [
        { code: 'subsumedBy', uri: `${CONCEPT_PROPERTIES}#parent`, type: 'code' },
        { code: 'narrower', uri: `${CONCEPT_PROPERTIES}#child`, type: 'code' },
      ],
    );
    assert.deepEqual(edgesByCode(cs), ['X>P', 'X>Q']);
    assert.deepEqual(codeSystemRows(cs).properties, []);
  });

  test('a declaration by URI overrides the conventional code: `parent` declared as #child', () => {
    const cs = codeSystem([{ code: 'P', property: [{ code: 'parent', valueCode: 'X' }] }, { code: 'X' }], [{ code: 'parent', uri: `${CONCEPT_PROPERTIES}#child`, type: 'code' }]);
    assert.deepEqual(edgesByCode(cs), ['X>P']);
  });
});

describe('propertyKinds', () => {
  test('conventional codes stand for themselves', () => {
    assert.equal(conventional('parent'), 'parent');
    assert.equal(conventional('inactive'), 'inactive');
    assert.equal(conventional('whatever'), 'whatever');
    assert.equal(conventional(undefined), undefined);
  });

  test('subsumedBy and subsumes (the HL7 terminology\'s hierarchy properties) are parent and child', () => {
    assert.equal(conventional('subsumedBy'), 'parent');
    assert.equal(conventional('subsumes'), 'child');
    assert.equal(propertyKinds([{ code: 'broader', uri: `${CONCEPT_PROPERTIES}#subsumedBy`, type: 'code' }])('broader'), 'parent');
    // a code with two parents stated by subsumedBy, declared without a URI
    const cs = codeSystem(
      [{ code: 'C', property: [{ code: 'subsumedBy', valueCode: 'A' }, { code: 'subsumedBy', valueCode: 'B' }] }, { code: 'A' }, { code: 'B' }],
      [{ code: 'subsumedBy', type: 'code' }],
    );
    assert.deepEqual(edgesByCode(cs), ['C>A', 'C>B']);
    assert.deepEqual(codeSystemRows(cs).properties, []);
  });

  test('only concept-properties URIs are meanings; other URIs leave the code as is', () => {
    const kind = propertyKinds([
      { code: 'retired', uri: `${CONCEPT_PROPERTIES}#inactive`, type: 'boolean' },
      { code: 'broader', uri: 'http://example.org/props#parent', type: 'code' },
      { code: 'noUri', type: 'string' },
    ]);
    assert.equal(kind('retired'), 'inactive');
    assert.equal(kind('broader'), 'broader');
    assert.equal(kind('noUri'), 'noUri');
    assert.equal(kind('inactive'), 'inactive');
  });
});

describe('conceptRow: inactive, notSelectable, status', () => {
  const prop = (code: string, v: Partial<CodeSystemConceptProperty>): CodeSystemConceptProperty => ({ code, ...v });

  test('no properties: active, selectable, no status', () => {
    assert.deepEqual(conceptRow({ code: 'a', display: 'A' }, conventional), row('a', { display: 'A' }));
  });

  test('inactive = true makes it inactive; inactive = false does not', () => {
    assert.equal(conceptRow({ code: 'a', property: [prop('inactive', { valueBoolean: true })] }, conventional).inactive, true);
    assert.equal(conceptRow({ code: 'a', property: [prop('inactive', { valueBoolean: false })] }, conventional).inactive, false);
  });

  test('notSelectable = true makes it abstract; false does not', () => {
    assert.deepEqual(conceptRow({ code: 'a', property: [prop('notSelectable', { valueBoolean: true })] }, conventional), row('a', { abstract: true }));
    assert.equal(conceptRow({ code: 'a', property: [prop('notSelectable', { valueBoolean: false })] }, conventional).abstract, false);
  });

  test('status retired (code) or inactive (string) makes it inactive, and is kept', () => {
    assert.deepEqual(conceptRow({ code: 'a', property: [prop('status', { valueCode: 'retired' })] }, conventional), row('a', { inactive: true, status: 'retired' }));
    assert.deepEqual(conceptRow({ code: 'a', property: [prop('status', { valueString: 'inactive' })] }, conventional), row('a', { inactive: true, status: 'inactive' }));
  });

  test('other statuses (deprecated, active) leave it active', () => {
    assert.deepEqual(conceptRow({ code: 'a', property: [prop('status', { valueCode: 'deprecated' })] }, conventional), row('a', { status: 'deprecated' }));
    assert.deepEqual(conceptRow({ code: 'a', property: [prop('status', { valueCode: 'active' })] }, conventional), row('a', { status: 'active' }));
  });

  test('a deprecation or retirement date that has come gives the status, unless the concept states one', () => {
    const dated = (...p: Array<[string, string]>) => conceptRow({ code: 'a', property: p.map(([code, valueDateTime]) => prop(code, { valueDateTime })) }, conventional);
    assert.deepEqual(dated(['deprecationDate', '2020-02-01']), row('a', { status: 'deprecated' }));
    assert.deepEqual(dated(['deprecated', '2020']), row('a', { status: 'deprecated' })); // R4's name
    assert.deepEqual(dated(['retirementDate', '2021-01-01T10:00:00Z'], ['deprecationDate', '2020-02-01']), row('a', { inactive: true, status: 'retired' }));
    assert.deepEqual(dated(['deprecationDate', '2999-01-01']), row('a', {}));
    const stated = conceptRow({ code: 'a', property: [prop('status', { valueCode: 'active' }), prop('deprecationDate', { valueDateTime: '2020-02-01' })] }, conventional);
    assert.equal(stated.status, 'active');
  });

  test('an active status does not undo inactive = true', () => {
    const r = conceptRow({ code: 'a', property: [prop('inactive', { valueBoolean: true }), prop('status', { valueCode: 'active' })] }, conventional);
    assert.deepEqual(r, row('a', { inactive: true, status: 'active' }));
  });

  test('the last status wins', () => {
    const r = conceptRow({ code: 'a', property: [prop('status', { valueCode: 'retired' }), prop('status', { valueCode: 'active' })] }, conventional);
    assert.deepEqual(r, row('a', { status: 'active' }));
  });

  test('flags under declared codes are found by their URI', () => {
    const kind = propertyKinds([
      { code: 'deprecatedFlag', uri: `${CONCEPT_PROPERTIES}#inactive`, type: 'boolean' },
      { code: 'grouper', uri: `${CONCEPT_PROPERTIES}#notSelectable`, type: 'boolean' },
      { code: 'state', uri: `${CONCEPT_PROPERTIES}#status`, type: 'code' },
    ]);
    assert.deepEqual(
      conceptRow({ code: 'a', property: [prop('deprecatedFlag', { valueBoolean: true }), prop('grouper', { valueBoolean: true }), prop('state', { valueCode: 'experimental' })] }, kind),
      row('a', { inactive: true, abstract: true, status: 'experimental' }),
    );
    assert.deepEqual(conceptRow({ code: 'b', property: [prop('state', { valueCode: 'retired' })] }, kind), row('b', { inactive: true, status: 'retired' }));
  });

  test('codeSystemRows applies the same detection', () => {
    const rows = codeSystemRows(
      codeSystem([
        { code: 'a', property: [{ code: 'inactive', valueBoolean: true }] },
        { code: 'b', property: [{ code: 'notSelectable', valueBoolean: true }] },
        { code: 'c', property: [{ code: 'status', valueCode: 'retired' }] },
      ]),
    );
    assert.deepEqual(rows.concepts, [row('a', { inactive: true }), row('b', { abstract: true }), row('c', { inactive: true, status: 'retired' })]);
    // The flags are also kept as property rows (filters on any property read them).
    assert.deepEqual(
      rows.properties.map((p) => `${p.concept} ${p.code}=${p.value} (${p.type})`),
      ['1 inactive=true (boolean)', '2 notSelectable=true (boolean)', '3 status=retired (code)'],
    );
  });
});

describe('propertyRow: one row per typed value', () => {
  const plain = (code: string, type: string, value: string): PropertyRow => ({ concept: 4, code, type, value, system: undefined, display: undefined });

  test('code', () => {
    assert.deepEqual(propertyRow(4, { code: 'colour', valueCode: 'red' }), plain('colour', 'code', 'red'));
  });

  test('Coding: its code as the value, with system and display', () => {
    assert.deepEqual(propertyRow(4, { code: 'method', valueCoding: { system: 'http://loinc.org', code: 'LA1-2', display: 'Manual' } }), {
      concept: 4,
      code: 'method',
      type: 'Coding',
      value: 'LA1-2',
      system: 'http://loinc.org',
      display: 'Manual',
    });
  });

  test('a Coding without a code gives no row', () => {
    assert.equal(propertyRow(4, { code: 'method', valueCoding: { system: 'http://loinc.org', display: 'Manual' } }), undefined);
  });

  test('string', () => {
    assert.deepEqual(propertyRow(4, { code: 'note', valueString: 'hello' }), plain('note', 'string', 'hello'));
  });

  test('integer, including 0', () => {
    assert.deepEqual(propertyRow(4, { code: 'rank', valueInteger: 42 }), plain('rank', 'integer', '42'));
    assert.deepEqual(propertyRow(4, { code: 'rank', valueInteger: 0 }), plain('rank', 'integer', '0'));
    assert.deepEqual(propertyRow(4, { code: 'rank', valueInteger: -3 }), plain('rank', 'integer', '-3'));
  });

  test('boolean, including false', () => {
    assert.deepEqual(propertyRow(4, { code: 'flag', valueBoolean: true }), plain('flag', 'boolean', 'true'));
    assert.deepEqual(propertyRow(4, { code: 'flag', valueBoolean: false }), plain('flag', 'boolean', 'false'));
  });

  test('dateTime, as written', () => {
    assert.deepEqual(propertyRow(4, { code: 'added', valueDateTime: '2024-02-29T12:00:00+01:00' }), plain('added', 'dateTime', '2024-02-29T12:00:00+01:00'));
    assert.deepEqual(propertyRow(4, { code: 'added', valueDateTime: '2024' }), plain('added', 'dateTime', '2024'));
  });

  test('decimal', () => {
    assert.deepEqual(propertyRow(4, { code: 'weight', valueDecimal: 1.25 }), plain('weight', 'decimal', '1.25'));
    assert.deepEqual(propertyRow(4, { code: 'weight', valueDecimal: 0 }), plain('weight', 'decimal', '0'));
  });

  test('no code or no value: no row', () => {
    assert.equal(propertyRow(4, { valueString: 'x' } as CodeSystemConceptProperty), undefined);
    assert.equal(propertyRow(4, { code: 'empty' }), undefined);
    assert.equal(propertyRow(4, { code: 'nulled', valueString: null } as unknown as CodeSystemConceptProperty), undefined);
  });

  test('an empty string is a value', () => {
    assert.deepEqual(propertyRow(4, { code: 'note', valueString: '' }), plain('note', 'string', ''));
  });

  test('with several value[x] (invalid), the first in code, Coding, string, … order wins', () => {
    assert.deepEqual(propertyRow(4, { code: 'x', valueString: 's', valueCode: 'c' }), plain('x', 'code', 'c'));
    assert.deepEqual(propertyRow(4, { code: 'x', valueInteger: 1, valueString: 's' }), plain('x', 'string', 's'));
  });

  test('codeSystemRows stores each concept’s properties in order, with the concept’s id', () => {
    const rows = codeSystemRows(
      codeSystem([
        { code: 'a', property: [{ code: 'rank', valueInteger: 1 }, { code: 'colour', valueCoding: { code: 'red' } }] },
        { code: 'b', property: [{ code: 'weight', valueDecimal: 2.5 }, { code: 'bad', valueCoding: { display: 'no code' } }] },
      ]),
    );
    assert.deepEqual(rows.properties, [
      { concept: 1, code: 'rank', type: 'integer', value: '1', system: undefined, display: undefined },
      { concept: 1, code: 'colour', type: 'Coding', value: 'red', system: undefined, display: undefined },
      { concept: 2, code: 'weight', type: 'decimal', value: '2.5', system: undefined, display: undefined },
    ]);
  });
});

describe('codeSystemRows: designations', () => {
  test('language, use and the standard extensions are kept; a designation without a value is dropped', () => {
    const rows = codeSystemRows(
      codeSystem([
        { code: 'x' },
        {
          code: 'y',
          designation: [
            { language: 'de', use: { system: 'http://snomed.info/sct', code: '900000000000013009', display: 'Synonym' }, value: 'Herzinfarkt' },
            { value: 'plain' },
            { language: 'fr' } as unknown as { value: string },
            { language: 'nl', use: { code: 'short' }, value: 'kort' },
            {
              value: 'with extensions',
              extension: [
                { url: 'http://hl7.org/fhir/StructureDefinition/coding-sctdescid', valueId: '12345' },
                { url: 'http://example.org/not-kept', valueString: 'x' },
              ],
            },
          ],
        },
      ]),
    );
    const expected: DesignationRow[] = [
      { concept: 2, language: 'de', useSystem: 'http://snomed.info/sct', useCode: '900000000000013009', useDisplay: 'Synonym', value: 'Herzinfarkt', extension: undefined },
      { concept: 2, language: undefined, useSystem: undefined, useCode: undefined, useDisplay: undefined, value: 'plain', extension: undefined },
      { concept: 2, language: 'nl', useSystem: undefined, useCode: 'short', useDisplay: undefined, value: 'kort', extension: undefined },
      {
        concept: 2, language: undefined, useSystem: undefined, useCode: undefined, useDisplay: undefined, value: 'with extensions',
        extension: JSON.stringify([{ url: 'http://hl7.org/fhir/StructureDefinition/coding-sctdescid', valueId: '12345' }]),
      },
    ];
    assert.deepEqual(rows.designations, expected);
  });
});

describe('column lists', () => {
  test('PROPERTY_COLUMNS map a row to the tx_concept_property columns in order', () => {
    const r: PropertyRow = { concept: 3, code: 'method', type: 'Coding', value: 'm1', system: 'http://s', display: 'M' };
    assert.deepEqual(
      PROPERTY_COLUMNS.map((c) => [c.name, c.type, c.value(r, 0)]),
      [
        ['concept', 'int', 3],
        ['code', 'text', 'method'],
        ['type', 'text', 'Coding'],
        ['value', 'text', 'm1'],
        ['system', 'text', 'http://s'],
        ['display', 'text', 'M'],
      ],
    );
  });

  test('DESIGNATION_COLUMNS map a row to the tx_designation columns in order', () => {
    const r: DesignationRow = { concept: 5, language: 'de', useSystem: 'http://u', useCode: 'syn', useDisplay: 'Synonym', value: 'Wert', extension: '[{"url":"http://e"}]' };
    assert.deepEqual(
      DESIGNATION_COLUMNS.map((c) => [c.name, c.type, c.value(r, 0)]),
      [
        ['concept', 'int', 5],
        ['language', 'text', 'de'],
        ['use_system', 'text', 'http://u'],
        ['use_code', 'text', 'syn'],
        ['use_display', 'text', 'Synonym'],
        ['value', 'text', 'Wert'],
        ['extension', 'text', '[{"url":"http://e"}]'],
      ],
    );
  });
});
