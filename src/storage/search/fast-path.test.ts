import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fhirpath from 'fhirpath';
import r4 from 'fhirpath/fhir-context/r4';
import type { Resource } from '@medplum/fhirtypes';
import { searchParametersFor } from '../../fhir/definitions.js';
import { typedValue } from './fhir-values.js';
import { compileFast } from './fast-path.js';
import { COLUMN_PARAMETERS, compositeComponents, expressionFor, indexedComposites, splitTopLevelUnion, tableFor } from './parameters.js';

/**
 * The direct evaluator of plain search expressions (fast-path.ts) gives exactly what the FHIRPath
 * engine gives — the same values with the same FHIR types — for every branch of every R4 search
 * parameter of the sample resources' types, and composites give the same items.
 */
const quantity = { value: 68, unit: '/min', system: 'http://unitsofmeasure.org', code: '/min' };
const concept = { coding: [{ system: 'http://loinc.org', code: '8867-4', display: 'Heart rate' }], text: 'Heart rate' };
const samples: Resource[] = [
  {
    resourceType: 'Patient',
    id: 'p1',
    meta: { tag: [{ system: 'urn:t', code: 'x' }], profile: ['http://example.org/p'] },
    identifier: [{ system: 'urn:mrn', value: '1', type: { coding: [{ code: 'MR' }], text: 'MRN' } }],
    active: true,
    name: [{ family: 'Smith', given: ['Ann', 'B'], prefix: ['Dr'] }, { text: 'Nan' }],
    telecom: [
      { system: 'email', value: 'a@example.org' },
      { system: 'phone', value: '555', use: 'home' },
      { value: 'no-system' },
    ],
    gender: 'female',
    birthDate: '1970-01-02',
    deceasedDateTime: '2020-01-01T10:00:00Z',
    address: [{ line: ['1 Main St'], city: 'Springfield', postalCode: '01101', country: 'US', use: 'home' }],
    generalPractitioner: [{ reference: 'Practitioner/x' }, { reference: 'Organization/o' }],
    managingOrganization: { reference: 'https://other.example/fhir/Organization/o/_history/2' },
    link: [{ other: { reference: 'Patient/p2' }, type: 'seealso' }],
    communication: [{ language: { coding: [{ system: 'urn:ietf:bcp:47', code: 'en' }] } }],
  },
  { resourceType: 'Patient', id: 'p2', deceasedBoolean: false, birthDate: '1970', _birthDate: { extension: [{ url: 'urn:x', valueString: 'y' }] } } as Resource,
  { resourceType: 'Patient', id: 'p3', name: [{ given: ['A'], _given: [{ id: 'g' }] }] } as unknown as Resource,
  {
    resourceType: 'Observation',
    id: 'o1',
    status: 'final',
    category: [{ coding: [{ system: 'http://terminology.hl7.org/CodeSystem/observation-category', code: 'vital-signs' }] }],
    code: concept,
    subject: { reference: 'Patient/p1' },
    encounter: { reference: 'Encounter/e1' },
    effectiveDateTime: '2015-02-03T09:00:00Z',
    valueQuantity: quantity,
    performer: [{ reference: 'Practitioner/x' }, { display: 'someone' }],
    component: [
      { code: concept, valueQuantity: quantity },
      { code: concept, valueQuantity: quantity },
      { code: { text: 'mood' }, valueCodeableConcept: { coding: [{ system: 'urn:m', code: 'ok' }] } },
      { code: { text: 'note' }, valueString: 'fine' },
    ],
  },
  { resourceType: 'Observation', id: 'o2', status: 'final', code: { text: 'x' }, valueString: 'text', effectivePeriod: { start: '2015-01-01', end: '2015-02-01' }, subject: { reference: 'Group/g' } },
  { resourceType: 'Observation', id: 'o3', status: 'final', code: concept, valueCodeableConcept: concept, effectiveInstant: '2015-01-01T00:00:00Z', valueDateTime: '2019' },
  {
    resourceType: 'Encounter',
    id: 'e1',
    status: 'finished',
    class: { system: 'http://terminology.hl7.org/CodeSystem/v3-ActCode', code: 'AMB' },
    type: [{ coding: [{ system: 'http://snomed.info/sct', code: '185349003' }] }],
    subject: { reference: 'Patient/p1' },
    participant: [{ individual: { reference: 'Practitioner/x' } }, { individual: { reference: 'RelatedPerson/r' } }],
    period: { start: '2015-01-01T09:00:00Z', end: '2015-01-01T09:30:00Z' },
    length: { value: 30, unit: 'min', system: 'http://unitsofmeasure.org', code: 'min' },
    location: [{ location: { reference: 'Location/l' } }],
  },
  { resourceType: 'Condition', id: 'c1', clinicalStatus: { coding: [{ code: 'active' }] }, code: concept, subject: { reference: 'Patient/p1' }, onsetAge: { value: 40, unit: 'a', system: 'http://unitsofmeasure.org', code: 'a' }, abatementString: 'gone' },
  { resourceType: 'Condition', id: 'c2', code: concept, subject: { reference: 'Patient/p1' }, onsetPeriod: { start: '2010' }, abatementDateTime: '2011-05', recordedDate: '2010-01-01' },
  { resourceType: 'RiskAssessment', id: 'r1', status: 'final', subject: { reference: 'Patient/p1' }, prediction: [{ probabilityDecimal: 0.25 }, { probabilityRange: { low: { value: 1 } } }] },
  {
    resourceType: 'Bundle',
    id: 'b1',
    type: 'document',
    identifier: { system: 'urn:b', value: '1' },
    entry: [{ resource: { resourceType: 'Composition', id: 'c', status: 'final', type: concept, date: '2020', author: [{ reference: 'Practitioner/x' }], title: 'T' } }],
  },
  {
    resourceType: 'MedicationRequest',
    id: 'm1',
    status: 'active',
    intent: 'order',
    medicationCodeableConcept: concept,
    subject: { reference: 'Patient/p1' },
    contained: [{ resourceType: 'Medication', id: 'med', code: concept }],
    authoredOn: '2020-01-01',
  },
];

const OPTIONS = { resolveInternalTypes: false } as const;

/** The (type, data) pairs of result items, as the index sees them. */
function values(items: unknown[]): unknown[] {
  return items.map((item) => {
    const v = typedValue(item);
    return v && { type: v.type, data: v.data };
  });
}

describe('plain search expressions evaluated directly', () => {
  test('every branch that compiles gives what the FHIRPath engine gives, on every sample', () => {
    let compared = 0;
    for (const resource of samples) {
      for (const [code, sp] of searchParametersFor(resource.resourceType)) {
        if (!tableFor(sp) || !sp.expression || COLUMN_PARAMETERS.has(code)) continue;
        for (const branch of splitTopLevelUnion(expressionFor(resource.resourceType, sp.expression))) {
          const fast = compileFast(branch);
          if (!fast) continue;
          const direct = fast(resource);
          if (direct === undefined) continue; // left to the engine
          const engine = fhirpath.evaluate(resource, branch, undefined, r4, OPTIONS) as unknown[];
          assert.deepEqual(values(direct), values(engine), `${resource.resourceType}/${resource.id} ${code}: ${branch}`);
          compared++;
        }
      }
    }
    assert.ok(compared > 150, `only ${compared} branches compared`);
  });

  test('a primitive with extension data is left to the engine', () => {
    const fast = compileFast('Patient.birthDate');
    assert.ok(fast);
    assert.equal(fast(samples[1]), undefined);
    assert.deepEqual(values(fast(samples[0]) ?? []), [{ type: 'date', data: '1970-01-02' }]);
    assert.equal(compileFast('Patient.deceased.exists() and Patient.deceased != false'), undefined);
    assert.equal(compileFast('Observation.value as Quantity'), undefined);
  });

  test("a Patient's branches are all plain but its deceased flag", () => {
    const notPlain: string[] = [];
    for (const [code, sp] of searchParametersFor('Patient')) {
      if (!tableFor(sp) || !sp.expression || COLUMN_PARAMETERS.has(code)) continue;
      for (const branch of splitTopLevelUnion(expressionFor('Patient', sp.expression))) if (!compileFast(branch)) notPlain.push(code);
    }
    assert.deepEqual(notPlain, ['deceased']);
  });

  test('composites give the items and components the engine gives', () => {
    let compared = 0;
    for (const resource of samples) {
      for (const composite of indexedComposites(resource.resourceType)) {
        const sp = searchParametersFor(resource.resourceType).get(composite.code);
        const components = sp && compositeComponents(sp);
        assert.ok(components);
        const base = expressionFor(resource.resourceType, sp.expression as string);
        const count = (fhirpath.evaluate(resource, `(${base}).count()`, undefined, r4, OPTIONS) as number[])[0];
        assert.equal(composite.count(resource), count, `${resource.id} ${composite.code}`);
        for (let i = 0; i < count; i++) {
          components.forEach((c, k) => {
            const engine = fhirpath.evaluate(resource, `(${base})[%i].select(${c.expression})`, { i }, r4, OPTIONS) as unknown[];
            assert.deepEqual(values(composite.evaluate(resource, i, k)), values(engine), `${resource.id} ${composite.code} item ${i} component ${k}`);
            compared++;
          });
        }
      }
    }
    assert.ok(compared > 20, `only ${compared} components compared`);
  });
});
