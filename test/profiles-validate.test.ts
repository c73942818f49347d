import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { OperationOutcomeIssue } from '@medplum/fhirtypes';
import { createProject, drivers, startServer, type TestProject, type TestServer } from './harness.js';
import { makeProfile } from './support/profiles.js';

/** Validation against profiles (docs/rest.md#validate): each kind of check, one failing and one passing instance. */
const P = 'http://example.org/fhir/StructureDefinition/';
const LOINC = 'http://loinc.org';

type Issue = OperationOutcomeIssue;
const errors = (issues: Issue[]) => issues.filter((i) => i.severity === 'error');
const brief = (issues: Issue[]) => issues.map((i) => `${i.severity} ${i.expression?.[0]}: ${i.details?.text}`);

for (const driver of drivers) {
  describe(`profile validation (${driver})`, () => {
    let server: TestServer;
    let project: TestProject;
    const validate = async (type: string, resource: unknown, profile?: string): Promise<Issue[]> => {
      const parameter: Array<Record<string, unknown>> = [{ name: 'resource', resource }];
      if (profile) parameter.push({ name: 'profile', valueUri: profile });
      const res = await server.fhir('POST', `/${type}/$validate`, { token: project.adminToken, body: { resourceType: 'Parameters', parameter } });
      assert.equal(res.status, 200, res.text);
      // dom-6 (a resource should have narrative) is a best-practice warning on every resource here without text.
      return (res.body.issue as Issue[]).filter((i) => i.severity !== 'information' && !i.details?.text?.startsWith('Constraint dom-6 '));
    };
    const hold = async (sd: unknown) => {
      const res = await server.fhir('POST', '/StructureDefinition', { token: project.adminToken, body: sd });
      assert.equal(res.status, 201, res.text);
      return res.body;
    };

    before(async () => {
      server = await startServer(driver, { env: { LATTICE_PROFILE_MAX_INVARIANTS: '300' } });
      project = await createProject(server, 'Profiles');
      await hold(makeProfile('Patient', `${P}needs-birthdate`, { constrain: { 'Patient.birthDate': { min: 1 }, 'Patient.name': { max: '1' } } }));
      await hold(
        makeProfile('Observation', `${P}fixed-obs`, {
          constrain: {
            'Observation.status': { fixedCode: 'final' },
            'Observation.code': { patternCodeableConcept: { coding: [{ system: LOINC, code: '8867-4' }] } },
            'Observation.subject': { type: [{ code: 'Reference', targetProfile: ['http://hl7.org/fhir/StructureDefinition/Patient'] }] },
            'Observation.value[x]': { type: [{ code: 'string' }], maxLength: 5 },
          },
        }),
      );
      await hold(
        makeProfile('Observation', `${P}ranged-obs`, {
          constrain: { 'Observation.value[x]': { type: [{ code: 'integer' }], minValueInteger: 0, maxValueInteger: 10 } },
        }),
      );
    });
    after(() => server.stop());

    test('cardinality: a missing min-1 element and a second item of a max-1 element are errors with their paths', async () => {
      const bad = await validate('Patient', { resourceType: 'Patient', name: [{ family: 'A' }, { family: 'B' }] }, `${P}needs-birthdate`);
      assert.deepEqual(brief(bad), [
        'error Patient.name: name: maximum allowed = 1, but found 2',
        'error Patient.birthDate: birthDate: minimum required = 1, but only found 0',
      ]);
      assert.equal(bad[1].code, 'required');
      assert.deepEqual(bad[1].details?.coding, [{ system: 'http://hl7.org/fhir/java-core-messageId', code: 'Validation_VAL_Profile_Minimum' }]);
      const good = await validate('Patient', { resourceType: 'Patient', birthDate: '2000-01-01', name: [{ family: 'A' }] }, `${P}needs-birthdate`);
      assert.deepEqual(good, []);
    });

    test('fixed (exact), pattern (subset), reference target type, allowed types and maxLength', async () => {
      const bad = await validate(
        'Observation',
        { resourceType: 'Observation', status: 'preliminary', code: { coding: [{ system: LOINC, code: '1234-5' }] }, subject: { reference: 'Group/1' }, valueString: 'too long' },
        `${P}fixed-obs`,
      );
      assert.deepEqual(brief(bad), [
        'error Observation.status: Value must be exactly "final" (fixed by the profile), got "preliminary"',
        'error Observation.code: Value must match the pattern {"coding":[{"system":"http://loinc.org","code":"8867-4"}]} of the profile, got {"coding":[{"system":"http://loinc.org","code":"1234-5"}]}',
        'error Observation.subject.reference: The reference points to a Group; this element allows Patient',
        'error Observation.valueString: Value is 8 characters long; the profile allows at most 5',
      ]);
      const wrongType = await validate('Observation', { resourceType: 'Observation', status: 'final', code: { text: 'x' }, valueInteger: 3 }, `${P}fixed-obs`);
      assert.deepEqual(brief(errors(wrongType)).slice(-1), ['error Observation.valueInteger: Type Integer is not allowed here by the profile: value[x] allows string']);
      const good = await validate(
        'Observation',
        {
          resourceType: 'Observation',
          status: 'final',
          code: { coding: [{ system: 'http://snomed.info/sct', code: '364075005' }, { system: LOINC, code: '8867-4', display: 'Heart rate' }], text: 'HR' },
          subject: { reference: '#p' },
          contained: [{ resourceType: 'Patient', id: 'p' }],
          valueString: 'fast',
        },
        `${P}fixed-obs`,
      );
      assert.deepEqual(good, []);
    });

    test('minValue/maxValue', async () => {
      const bad = await validate('Observation', { resourceType: 'Observation', status: 'final', code: { text: 'x' }, valueInteger: 11 }, `${P}ranged-obs`);
      assert.deepEqual(brief(bad), ['error Observation.valueInteger: Value 11 is above the maximum 10 of the profile']);
      assert.deepEqual(await validate('Observation', { resourceType: 'Observation', status: 'final', code: { text: 'x' }, valueInteger: 10 }, `${P}ranged-obs`), []);
    });

    test('a base invariant (obs-6) fails in $validate without any profile', async () => {
      const bad = await validate('Observation', { resourceType: 'Observation', status: 'final', code: { text: 'x' }, valueString: 'a', dataAbsentReason: { text: 'none' } });
      assert.deepEqual(brief(bad), ['error Observation: Constraint obs-6 is not met: dataAbsentReason SHALL only be present if Observation.value[x] is not present']);
      assert.equal(bad[0].code, 'invariant');
      assert.deepEqual(await validate('Observation', { resourceType: 'Observation', status: 'final', code: { text: 'x' }, valueString: 'a' }), []);
    });

    test('an unknown nominated profile is an error; an unknown meta.profile a warning', async () => {
      const issues = await validate('Patient', { resourceType: 'Patient', meta: { profile: [`${P}nowhere`] } }, `${P}unknown`);
      assert.deepEqual(brief(issues), [
        `error Patient: Profile '${P}unknown' is not known to this server: the resource was not checked against it`,
        `warning Patient.meta.profile[0]: Profile '${P}nowhere' is not known to this server: the resource was not checked against it`,
      ]);
    });

    test('meta.profile claims that are held are validated', async () => {
      const issues = await validate('Patient', { resourceType: 'Patient', meta: { profile: [`${P}needs-birthdate`] } });
      assert.deepEqual(brief(issues), ['error Patient.birthDate: birthDate: minimum required = 1, but only found 0']);
    });

    test('a held StructureDefinition without a snapshot: its snapshot is not available', async () => {
      const sd = makeProfile('Patient', `${P}no-snapshot`, {});
      delete sd.snapshot;
      sd.differential = { element: [{ id: 'Patient.birthDate', path: 'Patient.birthDate', min: 1 }] };
      await hold(sd);
      const issues = await validate('Patient', { resourceType: 'Patient' }, `${P}no-snapshot`);
      assert.deepEqual(brief(issues), [
        `error Patient: Profile '${P}no-snapshot' is held without a snapshot, and snapshot generation is not available: the resource was not checked against it`,
      ]);
    });
  });
}
