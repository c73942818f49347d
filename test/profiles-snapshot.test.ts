import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { ElementDefinition, StructureDefinition } from '@medplum/fhirtypes';
import { drivers, ooText, startServer, type TestServer } from './harness.js';

/** `StructureDefinition/$snapshot` over HTTP (docs/profiles.md#snapshot). */

const EX = 'http://example.org/fhir/StructureDefinition/';

const profile = (name: string, base: string, element: ElementDefinition[], version?: string): StructureDefinition => ({
  resourceType: 'StructureDefinition',
  url: `${EX}${name}`,
  ...(version ? { version } : {}),
  name: name.replace(/-/g, ''),
  status: 'active',
  kind: 'resource',
  abstract: false,
  type: 'Patient',
  baseDefinition: base,
  derivation: 'constraint',
  differential: { element: [{ id: 'Patient', path: 'Patient' }, ...element] },
});

const BIRTH_DATE = profile('with-birth-date', 'http://hl7.org/fhir/StructureDefinition/Patient', [{ id: 'Patient.birthDate', path: 'Patient.birthDate', min: 1 }]);
const card = (sd: StructureDefinition, id: string) => {
  const e = sd.snapshot?.element.find((x) => x.id === id);
  return e ? `${e.min}..${e.max}` : undefined;
};

for (const driver of drivers) {
  describe(`StructureDefinition/$snapshot (${driver})`, () => {
    let server: TestServer;
    before(async () => {
      server = await startServer(driver);
    });
    after(() => server.stop());

    test('a definition given in Parameters comes back with its snapshot', async () => {
      const res = await server.fhir('POST', '/StructureDefinition/$snapshot', {
        body: { resourceType: 'Parameters', parameter: [{ name: 'definition', resource: BIRTH_DATE }] },
      });
      assert.equal(res.status, 200, res.text);
      const sd = res.body as StructureDefinition;
      assert.equal(sd.resourceType, 'StructureDefinition');
      assert.equal(sd.url, BIRTH_DATE.url);
      assert.equal(sd.snapshot?.element[0].id, 'Patient');
      assert.equal(card(sd, 'Patient.birthDate'), '1..1');
      assert.equal(card(sd, 'Patient.gender'), '0..1');
      assert.deepEqual(sd.differential, BIRTH_DATE.differential);
    });

    test('by url: the base is a stored profile without snapshot; url|version picks a version, a bare url the latest', async () => {
      const v1 = profile('clinic', 'http://hl7.org/fhir/StructureDefinition/Patient', [{ id: 'Patient.name', path: 'Patient.name', min: 1 }], '1.0.0');
      const v2 = profile('clinic', 'http://hl7.org/fhir/StructureDefinition/Patient', [{ id: 'Patient.name', path: 'Patient.name', min: 1, max: '2' }], '1.10.0');
      const v0 = profile('clinic', 'http://hl7.org/fhir/StructureDefinition/Patient', [{ id: 'Patient.name', path: 'Patient.name', max: '0' }], '1.9.0');
      const child = profile('clinic-strict', `${EX}clinic|1.0.0`, [{ id: 'Patient.gender', path: 'Patient.gender', min: 1 }]);
      for (const sd of [v1, v2, v0, child]) {
        const stored = await server.fhir('POST', '/StructureDefinition', { body: sd });
        assert.equal(stored.status, 201, stored.text);
      }
      const strict = await server.fhir('GET', `/StructureDefinition/$snapshot?url=${encodeURIComponent(`${EX}clinic-strict`)}`);
      assert.equal(strict.status, 200, strict.text);
      assert.equal(card(strict.body, 'Patient.gender'), '1..1');
      assert.equal(card(strict.body, 'Patient.name'), '1..*', 'the base named with |1.0.0');
      const latest = await server.fhir('GET', `/StructureDefinition/$snapshot?url=${encodeURIComponent(`${EX}clinic`)}`);
      assert.equal(latest.status, 200, latest.text);
      assert.equal(latest.body.version, '1.10.0');
      assert.equal(card(latest.body, 'Patient.name'), '1..2');
      const older = await server.fhir('GET', `/StructureDefinition/$snapshot?url=${encodeURIComponent(`${EX}clinic|1.9.0`)}`);
      assert.equal(card(older.body, 'Patient.name'), '0..0');
    });

    test('by url, not held: the R4 core profile, its snapshot generated from its differential', async () => {
      const res = await server.fhir('GET', `/StructureDefinition/$snapshot?url=${encodeURIComponent('http://hl7.org/fhir/StructureDefinition/bodyweight')}`);
      assert.equal(res.status, 200, res.text);
      assert.equal(card(res.body, 'Observation.value[x]:valueQuantity.value'), '1..1');
      assert.equal(res.body.snapshot.element.find((e: ElementDefinition) => e.id === 'Observation.code.coding:BodyWeightCode.code')?.fixedCode, '29463-7');
    });

    test('a base stored with its snapshot: the extension definition its slice names is fetched to dive into the slice', async () => {
      const colour = `${EX}eye-colour`;
      const extension: StructureDefinition = {
        ...profile('eye-colour', 'http://hl7.org/fhir/StructureDefinition/Extension', []),
        type: 'Extension',
        kind: 'complex-type',
        differential: { element: [{ id: 'Extension', path: 'Extension', short: 'Eye colour' }, { id: 'Extension.value[x]', path: 'Extension.value[x]', type: [{ code: 'code' }] }] },
      };
      const base = profile('with-eyes', 'http://hl7.org/fhir/StructureDefinition/Patient', [
        { id: 'Patient.extension:eyes', path: 'Patient.extension', sliceName: 'eyes', max: '1', type: [{ code: 'Extension', profile: [colour] }] },
      ]);
      const snap = await server.fhir('POST', '/StructureDefinition/$snapshot', { body: { resourceType: 'Parameters', parameter: [{ name: 'definition', resource: base }, ] } });
      assert.equal(snap.status, 422, 'the extension definition is not stored yet');
      for (const sd of [extension]) assert.equal((await server.fhir('POST', '/StructureDefinition', { body: sd })).status, 201);
      const withSnapshot = await server.fhir('POST', '/StructureDefinition/$snapshot', { body: { resourceType: 'Parameters', parameter: [{ name: 'definition', resource: base }] } });
      assert.equal(withSnapshot.status, 200, withSnapshot.text);
      assert.equal((await server.fhir('POST', '/StructureDefinition', { body: withSnapshot.body })).status, 201);
      const child = profile('with-blue-eyes', `${EX}with-eyes`, [{ id: 'Patient.extension:eyes.value[x]', path: 'Patient.extension.value[x]', min: 1, fixedCode: 'blue' }]);
      const res = await server.fhir('POST', '/StructureDefinition/$snapshot', { body: { resourceType: 'Parameters', parameter: [{ name: 'definition', resource: child }] } });
      assert.equal(res.status, 200, res.text);
      const value = res.body.snapshot.element.find((e: ElementDefinition) => e.id === 'Patient.extension:eyes.value[x]');
      assert.deepEqual([value.path, `${value.min}..${value.max}`, value.fixedCode, value.type], ['Patient.extension.value[x]', '1..1', 'blue', [{ code: 'code' }]]);
      const url = res.body.snapshot.element.find((e: ElementDefinition) => e.id === 'Patient.extension:eyes.url');
      assert.equal(url.fixedUri, colour);
    });

    test('on an instance: the stored StructureDefinition', async () => {
      const stored = await server.fhir('POST', '/StructureDefinition', { body: BIRTH_DATE });
      assert.equal(stored.status, 201, stored.text);
      const res = await server.fhir('GET', `/StructureDefinition/${stored.body.id}/$snapshot`);
      assert.equal(res.status, 200, res.text);
      assert.equal(card(res.body, 'Patient.birthDate'), '1..1');
      assert.equal(res.body.id, stored.body.id);
    });

    test('errors: nothing named, an unknown url, a differential element the base lacks, an unknown base', async () => {
      const none = await server.fhir('POST', '/StructureDefinition/$snapshot', { body: { resourceType: 'Parameters', parameter: [] } });
      assert.equal(none.status, 400);
      assert.equal(ooText(none.body), "Give the StructureDefinition as 'definition', or name it by 'url'");
      const unknown = await server.fhir('GET', `/StructureDefinition/$snapshot?url=${encodeURIComponent(`${EX}nothing`)}`);
      assert.equal(unknown.status, 404);
      assert.equal(ooText(unknown.body), `StructureDefinition ${EX}nothing not found`);
      const bad = profile('bad', 'http://hl7.org/fhir/StructureDefinition/Patient', [{ id: 'Patient.shoeSize', path: 'Patient.shoeSize', min: 1 }]);
      const res = await server.fhir('POST', '/StructureDefinition/$snapshot', { body: { resourceType: 'Parameters', parameter: [{ name: 'definition', resource: bad }] } });
      assert.equal(res.status, 422, res.text);
      assert.equal(ooText(res.body), `Profile ${EX}bad: differential element Patient.shoeSize is not in the base definition http://hl7.org/fhir/StructureDefinition/Patient`);
      assert.deepEqual(res.body.issue[0].expression, ['StructureDefinition.differential.element[1]']);
      const orphan = profile('orphan', `${EX}no-such-base`, []);
      const missing = await server.fhir('POST', '/StructureDefinition/$snapshot', { body: { resourceType: 'Parameters', parameter: [{ name: 'definition', resource: orphan }] } });
      assert.equal(missing.status, 422);
      assert.equal(ooText(missing.body), `Profile ${EX}orphan: base definition ${EX}no-such-base not found`);
    });
  });
}
