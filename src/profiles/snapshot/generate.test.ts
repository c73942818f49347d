import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { ElementDefinition, StructureDefinition } from '@medplum/fhirtypes';
import { readDefinitionBundle } from '../../fhir/definitions.js';
import { FhirError } from '../../fhir/outcome.js';
import { generateSnapshot } from './generate.js';

/** Snapshot generation (docs/profiles.md#snapshots) with profiles written here, and the published R4 ones. */

const EX = 'http://example.org/fhir/StructureDefinition/';

/** A US-Core-like Patient profile: identifier sliced by system, birthDate required, a race extension, gender bound. */
const PATIENT: StructureDefinition = {
  resourceType: 'StructureDefinition',
  url: `${EX}clinic-patient`,
  name: 'ClinicPatient',
  status: 'active',
  kind: 'resource',
  abstract: false,
  type: 'Patient',
  baseDefinition: 'http://hl7.org/fhir/StructureDefinition/Patient',
  derivation: 'constraint',
  differential: {
    element: [
      { id: 'Patient', path: 'Patient' },
      { id: 'Patient.extension:race', path: 'Patient.extension', sliceName: 'race', min: 0, max: '1', type: [{ code: 'Extension', profile: [`${EX}race`] }] },
      {
        id: 'Patient.identifier',
        path: 'Patient.identifier',
        slicing: { discriminator: [{ type: 'value', path: 'system' }], rules: 'open' },
        min: 1,
      },
      { id: 'Patient.identifier:mrn', path: 'Patient.identifier', sliceName: 'mrn', min: 1, max: '1' },
      { id: 'Patient.identifier:mrn.system', path: 'Patient.identifier.system', min: 1, fixedUri: 'http://hospital.example.org/mrn' },
      { id: 'Patient.identifier:mrn.value', path: 'Patient.identifier.value', min: 1, maxLength: 20 },
      { id: 'Patient.gender', path: 'Patient.gender', min: 1, binding: { strength: 'required', valueSet: 'http://hl7.org/fhir/ValueSet/administrative-gender|4.0.1' } },
      { id: 'Patient.birthDate', path: 'Patient.birthDate', min: 1, mustSupport: true, short: '... (required by the clinic)' },
    ],
  },
};

/** A simple extension definition without a snapshot (it gets one when the Patient profile needs it). */
const RACE: StructureDefinition = {
  resourceType: 'StructureDefinition',
  url: `${EX}race`,
  name: 'Race',
  status: 'active',
  kind: 'complex-type',
  abstract: false,
  type: 'Extension',
  context: [{ type: 'element', expression: 'Patient' }],
  baseDefinition: 'http://hl7.org/fhir/StructureDefinition/Extension',
  derivation: 'constraint',
  differential: {
    element: [
      { id: 'Extension', path: 'Extension', short: 'Race (clinic categories)', definition: 'The race of the patient.', max: '1' },
      { id: 'Extension.extension', path: 'Extension.extension', max: '0' },
      { id: 'Extension.url', path: 'Extension.url', fixedUri: `${EX}race` },
      { id: 'Extension.value[x]', path: 'Extension.value[x]', min: 1, type: [{ code: 'Coding' }] },
    ],
  },
};

const held = new Map<string, StructureDefinition>();
const fetch = (canonical: string) => held.get(canonical.split('|')[0]);
held.set(RACE.url, RACE);
held.set(PATIENT.url, PATIENT);

const ids = (sd: StructureDefinition, prefix: string) => elements(sd).filter((e) => e.id?.startsWith(prefix)).map((e) => e.id);
const elements = (sd: StructureDefinition): ElementDefinition[] => sd.snapshot?.element ?? [];
const element = (sd: StructureDefinition, id: string): ElementDefinition => {
  const found = elements(sd).find((e) => e.id === id);
  assert.ok(found, `no element ${id}`);
  return found;
};
const card = (e: ElementDefinition) => `${e.min}..${e.max}`;

function rejects(fn: () => unknown, status: number, text: string): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof FhirError, String(err));
    assert.equal(err.status, status);
    assert.equal(err.outcome.issue?.[0]?.details?.text, text);
    return true;
  });
}

describe('generateSnapshot: a Patient profile', () => {
  const sd = generateSnapshot(PATIENT, fetch);

  test('the identifier slice follows its sliced element, with the Identifier children it dives into', () => {
    assert.deepEqual(ids(sd, 'Patient.identifier'), [
      'Patient.identifier',
      'Patient.identifier:mrn',
      'Patient.identifier:mrn.id',
      'Patient.identifier:mrn.extension',
      'Patient.identifier:mrn.use',
      'Patient.identifier:mrn.type',
      'Patient.identifier:mrn.system',
      'Patient.identifier:mrn.value',
      'Patient.identifier:mrn.period',
      'Patient.identifier:mrn.assigner',
    ]);
    const root = element(sd, 'Patient.identifier');
    assert.equal(card(root), '1..*');
    assert.deepEqual(root.slicing, { discriminator: [{ type: 'value', path: 'system' }], rules: 'open' });
    const mrn = element(sd, 'Patient.identifier:mrn');
    assert.equal(mrn.path, 'Patient.identifier');
    assert.equal(mrn.sliceName, 'mrn');
    assert.equal(card(mrn), '1..1');
    assert.equal(mrn.slicing, undefined);
    const system = element(sd, 'Patient.identifier:mrn.system');
    assert.equal(system.path, 'Patient.identifier.system');
    assert.equal(card(system), '1..1');
    assert.equal(system.fixedUri, 'http://hospital.example.org/mrn');
    assert.deepEqual(system.base, { path: 'Identifier.system', min: 0, max: '1' });
    assert.equal(element(sd, 'Patient.identifier:mrn.value').maxLength, 20);
    assert.equal(card(element(sd, 'Patient.identifier:mrn.period')), '0..1');
  });

  test('the extension slice takes its definition\'s texts; its cardinality is the differential\'s', () => {
    assert.deepEqual(ids(sd, 'Patient.extension'), ['Patient.extension', 'Patient.extension:race']);
    const race = element(sd, 'Patient.extension:race');
    assert.equal(race.path, 'Patient.extension');
    assert.equal(card(race), '0..1');
    assert.equal(race.short, 'Race (clinic categories)');
    assert.deepEqual(race.type, [{ code: 'Extension', profile: [`${EX}race`] }]);
    assert.ok(elements(sd).findIndex((e) => e.id === 'Patient.extension:race') < elements(sd).findIndex((e) => e.id === 'Patient.modifierExtension'));
  });

  test('birthDate and gender are narrowed; texts starting with ... continue the base text', () => {
    const birthDate = element(sd, 'Patient.birthDate');
    assert.equal(card(birthDate), '1..1');
    assert.equal(birthDate.mustSupport, true);
    assert.equal(birthDate.short, 'The date of birth for the individual\r\n(required by the clinic)');
    assert.deepEqual(birthDate.base, { path: 'Patient.birthDate', min: 0, max: '1' });
    const gender = element(sd, 'Patient.gender');
    assert.equal(card(gender), '1..1');
    assert.equal(gender.binding?.strength, 'required');
    assert.equal(gender.binding?.valueSet, 'http://hl7.org/fhir/ValueSet/administrative-gender|4.0.1');
    assert.ok(gender.binding?.description, 'the base binding\'s description stays');
  });

  test('everything else is the base snapshot\'s, in its order; the input is not changed', () => {
    const base = (readDefinitionBundle('profiles-resources.json') as StructureDefinition[]).find((r) => r.url === 'http://hl7.org/fhir/StructureDefinition/Patient');
    const added = ['Patient.extension:race', ...ids(sd, 'Patient.identifier:mrn')];
    assert.deepEqual(
      elements(sd).map((e) => e.id).filter((id) => !added.includes(id)),
      base?.snapshot?.element.map((e) => e.id),
    );
    assert.equal(PATIENT.snapshot, undefined);
    assert.deepEqual(sd.differential, PATIENT.differential);
  });

  test('the extension definition without a snapshot gets one: url fixed, value[x] narrowed to Coding', () => {
    const race = generateSnapshot(RACE, fetch);
    assert.equal(element(race, 'Extension.url').fixedUri, `${EX}race`);
    assert.deepEqual(element(race, 'Extension.value[x]').type, [{ code: 'Coding' }]);
    assert.equal(card(element(race, 'Extension.value[x]')), '1..1');
    assert.equal(card(element(race, 'Extension')), '0..1');
    assert.equal(card(element(race, 'Extension.extension')), '0..0');
  });
});

const OBSERVATION: StructureDefinition = {
  resourceType: 'StructureDefinition',
  url: `${EX}glucose`,
  name: 'Glucose',
  status: 'active',
  kind: 'resource',
  abstract: false,
  type: 'Observation',
  baseDefinition: 'http://hl7.org/fhir/StructureDefinition/Observation',
  derivation: 'constraint',
  differential: {
    element: [
      { id: 'Observation.code', path: 'Observation.code', patternCodeableConcept: { coding: [{ system: 'http://loinc.org', code: '2339-0' }] } },
      { id: 'Observation.valueQuantity', path: 'Observation.valueQuantity', min: 1, type: [{ code: 'Quantity' }] },
      { id: 'Observation.valueQuantity.system', path: 'Observation.valueQuantity.system', min: 1, fixedUri: 'http://unitsofmeasure.org' },
      { id: 'Observation.valueQuantity.code', path: 'Observation.valueQuantity.code', min: 1 },
      {
        id: 'Observation.component.value[x]',
        path: 'Observation.component.value[x]',
        type: [{ code: 'CodeableConcept' }],
        constraint: [{ key: 'glu-1', severity: 'error', human: 'coded', expression: 'coding.exists()' }],
      },
      { id: 'Observation.component.value[x].text', path: 'Observation.component.value[x].text', max: '0' },
    ],
  },
};

describe('generateSnapshot: choice types', () => {
  const sd = generateSnapshot(OBSERVATION, fetch);

  test('valueQuantity becomes the type slice value[x]:valueQuantity, with Quantity\'s children', () => {
    assert.deepEqual(ids(sd, 'Observation.value[x]'), [
      'Observation.value[x]',
      'Observation.value[x]:valueQuantity',
      'Observation.value[x]:valueQuantity.id',
      'Observation.value[x]:valueQuantity.extension',
      'Observation.value[x]:valueQuantity.value',
      'Observation.value[x]:valueQuantity.comparator',
      'Observation.value[x]:valueQuantity.unit',
      'Observation.value[x]:valueQuantity.system',
      'Observation.value[x]:valueQuantity.code',
    ]);
    assert.deepEqual(element(sd, 'Observation.value[x]').slicing, { discriminator: [{ type: 'type', path: '$this' }], ordered: false, rules: 'closed' });
    const quantity = element(sd, 'Observation.value[x]:valueQuantity');
    assert.equal(quantity.path, 'Observation.value[x]');
    assert.equal(quantity.sliceName, 'valueQuantity');
    assert.equal(card(quantity), '1..1');
    assert.deepEqual(quantity.type, [{ code: 'Quantity' }]);
    const system = element(sd, 'Observation.value[x]:valueQuantity.system');
    assert.equal(system.path, 'Observation.value[x].system');
    assert.equal(card(system), '1..1');
    assert.equal(system.fixedUri, 'http://unitsofmeasure.org');
  });

  test('the pattern on code is set; a value[x] constrained to one type keeps its name and is dived into', () => {
    assert.deepEqual(element(sd, 'Observation.code').patternCodeableConcept, { coding: [{ system: 'http://loinc.org', code: '2339-0' }] });
    const value = element(sd, 'Observation.component.value[x]');
    assert.deepEqual(value.type, [{ code: 'CodeableConcept' }]);
    assert.deepEqual(value.constraint?.map((c) => c.key), ['ele-1', 'glu-1']);
    assert.equal(value.constraint?.[1].source, `${EX}glucose`);
    assert.equal(card(element(sd, 'Observation.component.value[x].text')), '0..0');
    assert.equal(element(sd, 'Observation.component.value[x].text').path, 'Observation.component.value[x].text');
  });
});

/** A profile on the Patient profile above, which has no snapshot: it gets one first. */
const CHILD: StructureDefinition = {
  ...PATIENT,
  url: `${EX}clinic-patient-strict`,
  name: 'ClinicPatientStrict',
  baseDefinition: `${EX}clinic-patient|1.0.0`,
  differential: {
    element: [
      { id: 'Patient.identifier:mrn.assigner', path: 'Patient.identifier.assigner', min: 1 },
      { id: 'Patient.identifier:mrn/local', path: 'Patient.identifier', sliceName: 'mrn/local', max: '1' },
      { id: 'Patient.identifier:ssn', path: 'Patient.identifier', sliceName: 'ssn', max: '1' },
      { id: 'Patient.identifier:ssn.system', path: 'Patient.identifier.system', fixedUri: 'http://hl7.org/fhir/sid/us-ssn' },
      { id: 'Patient.name', path: 'Patient.name', min: 1 },
    ],
  },
};

describe('generateSnapshot: a profile on a profile', () => {
  const sd = generateSnapshot(CHILD, fetch);

  test('inherits the base profile\'s slices and constraints, and adds its own after them', () => {
    const group = ids(sd, 'Patient.identifier');
    assert.deepEqual(group.slice(0, 2), ['Patient.identifier', 'Patient.identifier:mrn']);
    assert.deepEqual(
      group.filter((id) => !id?.includes('.', 'Patient.identifier'.length)),
      ['Patient.identifier', 'Patient.identifier:mrn', 'Patient.identifier:mrn/local', 'Patient.identifier:ssn'],
    );
    assert.equal(group.indexOf('Patient.identifier:mrn/local'), group.indexOf('Patient.identifier:mrn.assigner') + 1);
    assert.equal(card(element(sd, 'Patient.identifier:mrn.assigner')), '1..1');
    assert.equal(element(sd, 'Patient.identifier:mrn.system').fixedUri, 'http://hospital.example.org/mrn');
    assert.equal(card(element(sd, 'Patient.birthDate')), '1..1');
    assert.equal(card(element(sd, 'Patient.name')), '1..*');
  });

  test('a re-slice copies its slice (children too); a new slice starts at min 0', () => {
    const local = element(sd, 'Patient.identifier:mrn/local');
    assert.equal(local.sliceName, 'mrn/local');
    assert.equal(card(local), '0..1');
    assert.equal(element(sd, 'Patient.identifier:mrn/local.system').fixedUri, 'http://hospital.example.org/mrn');
    assert.equal(card(element(sd, 'Patient.identifier:ssn')), '0..1');
    assert.equal(element(sd, 'Patient.identifier:ssn.system').fixedUri, 'http://hl7.org/fhir/sid/us-ssn');
    assert.equal(element(sd, 'Patient.identifier:ssn.system').path, 'Patient.identifier.system');
  });

  test('differential elements without ids are placed by path, inside the slice named before them', () => {
    const noIds = { ...PATIENT, differential: { element: (PATIENT.differential?.element ?? []).map(({ id: _id, ...e }) => e as ElementDefinition) } };
    const withIds = generateSnapshot(PATIENT, fetch);
    const again = generateSnapshot(noIds, fetch);
    assert.deepEqual(elements(again).map((e) => `${e.id} ${card(e)}`), elements(withIds).map((e) => `${e.id} ${card(e)}`));
    assert.ok(elements(again).some((e) => e.id === 'Patient.identifier:mrn.system' && e.fixedUri));
  });
});

describe('generateSnapshot: errors', () => {
  const profile = (url: string, base: string, element: ElementDefinition[] = []): StructureDefinition => ({
    ...PATIENT,
    url: `${EX}${url}`,
    baseDefinition: base,
    differential: { element },
  });

  test('a differential path the base does not have: 422 naming profile and element', () => {
    rejects(
      () => generateSnapshot(profile('bad', 'http://hl7.org/fhir/StructureDefinition/Patient', [{ id: 'Patient.shoeSize', path: 'Patient.shoeSize' }]), fetch),
      422,
      `Profile ${EX}bad: differential element Patient.shoeSize is not in the base definition http://hl7.org/fhir/StructureDefinition/Patient`,
    );
    rejects(
      () => generateSnapshot(profile('bad', 'http://hl7.org/fhir/StructureDefinition/Patient', [{ id: 'Patient.identifier.colour', path: 'Patient.identifier.colour' }]), fetch),
      422,
      `Profile ${EX}bad: differential element Patient.identifier.colour is not in the base definition http://hl7.org/fhir/StructureDefinition/Patient`,
    );
  });

  test('diving into a choice of several types without naming one', () => {
    const obs = { ...OBSERVATION, url: `${EX}obs`, differential: { element: [{ id: 'Observation.value[x].unit', path: 'Observation.value[x].unit' }] } };
    rejects(
      () => generateSnapshot(obs, fetch),
      422,
      `Profile ${EX}obs: differential element Observation.value[x].unit is not in the base definition http://hl7.org/fhir/StructureDefinition/Observation ` +
        '(Observation.value[x] has several types: Quantity, CodeableConcept, string, boolean, integer, Range, Ratio, SampledData, time, dateTime, Period; name one, e.g. Observation.valueQuantity)',
    );
  });

  test('a base definition that is not found', () => {
    rejects(() => generateSnapshot(profile('orphan', `${EX}nowhere`), fetch), 422, `Profile ${EX}orphan: base definition ${EX}nowhere not found`);
  });

  test('base definitions that form a cycle', () => {
    held.set(`${EX}a`, profile('a', `${EX}b`));
    held.set(`${EX}b`, profile('b', `${EX}a`));
    rejects(() => generateSnapshot(profile('c', `${EX}a`), fetch), 422, `Profile ${EX}c: its base definitions form a cycle: ${EX}c → ${EX}a → ${EX}b → ${EX}a`);
  });

  test('more elements than the bound: 400 too-costly naming the setting', () => {
    assert.throws(() => generateSnapshot(PATIENT, fetch, { maxElements: 55 }), (err: unknown) => {
      assert.ok(err instanceof FhirError);
      assert.equal(err.status, 400);
      assert.equal(err.outcome.issue?.[0]?.code, 'too-costly');
      assert.equal(err.message, `Profile ${EX}clinic-patient: its snapshot needs more than 55 elements (LATTICE_PROFILE_MAX_ELEMENTS)`);
      return true;
    });
  });
});

describe('generateSnapshot: the published R4 profiles', () => {
  /**
   * The R4 profiles whose published snapshot the rules reproduce (ids, paths, cardinality).
   * Left out, where the published snapshot is not what the rules give: familymemberhistory-genetic
   * (its snapshot lacks 14 base elements), catalog (lacks Composition.date), elementdefinition-de
   * (expands two extension slices, clinicaldocument expands none), bp (renamed choices inside
   * slices kept as value[x], outside them made type slices), picoelement (its base in the package
   * is a later EvidenceVariable).
   */
  const others = readDefinitionBundle('profiles-others.json') as StructureDefinition[];
  const byUrl = new Map(others.map((sd) => [sd.url, sd]));
  const skipped = new Set(['familymemberhistory-genetic', 'catalog', 'elementdefinition-de', 'bp', 'picoelement']);
  const summary = (sd: StructureDefinition) => elements(sd).map((e) => `${e.id} ${e.path} ${card(e)}`);

  test('39 profiles: the generated snapshot has the published elements, in order', () => {
    const checked = others.filter((sd) => !skipped.has(sd.id ?? ''));
    assert.equal(checked.length, 39);
    for (const published of checked) {
      const { snapshot: _snapshot, ...differentialOnly } = published;
      const generated = generateSnapshot(differentialOnly, (c) => byUrl.get(c.split('|')[0]));
      assert.deepEqual(summary(generated), summary(published), published.id);
    }
  });
});
