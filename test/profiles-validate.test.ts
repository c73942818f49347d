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
      return (res.body.issue as Issue[]).filter((i) => i.severity !== 'information');
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

    test("invariants inside a Bundle: an entry's '#' reference is resolved in that entry (its own %rootResource)", async () => {
      const entry = (id: string, ref: string) => ({
        fullUrl: `http://example.org/fhir/Observation/${id}`,
        resource: { resourceType: 'Observation', id, status: 'final', code: { text: 'x' }, subject: { reference: ref }, contained: [{ resourceType: 'Patient', id: 'p' }] },
      });
      assert.deepEqual(await validate('Bundle', { resourceType: 'Bundle', type: 'collection', entry: [entry('a', '#p')] }), []);
      const bad = await validate('Bundle', { resourceType: 'Bundle', type: 'collection', entry: [entry('b', '#q')] });
      // The base rules (src/fhir/validation/contained-rules.ts) report these two before the
      // invariants run, which then are not evaluated again (one issue per problem).
      assert.deepEqual(
        bad.map((i) => `${i.severity} ${i.expression?.[0]}: ${i.details?.text?.split(':')[0]}`),
        ['error Bundle.entry[0].resource.subject.reference: ref-1', 'error Bundle.entry[0].resource.contained[0]: dom-3'],
      );
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

    test('required binding to a value set the project holds: a code outside → error, inside → OK; extensible → warning; unknown value set → warning', async () => {
      const cs = { resourceType: 'CodeSystem', url: 'http://clinic.example/cs/tests', status: 'active', content: 'complete', concept: [{ code: 'a1' }, { code: 'b2' }] };
      const vs = { resourceType: 'ValueSet', url: 'http://clinic.example/vs/tests', status: 'active', compose: { include: [{ system: cs.url }] } };
      for (const r of [cs, vs]) assert.equal((await server.fhir('POST', `/${r.resourceType}`, { token: project.adminToken, body: r })).status, 201);
      const bound = (strength: string, valueSet: string) => ({ 'Observation.code': { binding: { strength: strength as 'required', valueSet } } });
      await hold(makeProfile('Observation', `${P}bound-required`, { constrain: bound('required', vs.url) }));
      await hold(makeProfile('Observation', `${P}bound-extensible`, { constrain: bound('extensible', vs.url) }));
      await hold(makeProfile('Observation', `${P}bound-unknown`, { constrain: bound('required', 'http://clinic.example/vs/missing') }));
      const obs = (code: string) => ({ resourceType: 'Observation', status: 'final', code: { coding: [{ system: cs.url, code }] } });
      const bad = await validate('Observation', obs('zz'), `${P}bound-required`);
      assert.deepEqual(brief(bad), [`error Observation.code: '${cs.url}#zz' is not in the value set ${vs.url} (required binding)`]);
      assert.equal(bad[0].code, 'code-invalid');
      assert.deepEqual(await validate('Observation', obs('b2'), `${P}bound-required`), []);
      assert.deepEqual(brief(await validate('Observation', obs('zz'), `${P}bound-extensible`)), [`warning Observation.code: '${cs.url}#zz' is not in the value set ${vs.url} (extensible binding)`]);
      assert.deepEqual(brief(await validate('Observation', obs('a1'), `${P}bound-unknown`)), [
        'warning Observation.code: The value set http://clinic.example/vs/missing of this required binding could not be resolved or expanded: the code was not checked',
      ]);
    });

    test('slicing by pattern: a missing required slice, a second systolic, and an item in no slice of a closed slicing are errors', async () => {
      const code = (c: string) => ({ coding: [{ system: LOINC, code: c }] });
      await hold(
        makeProfile('Observation', `${P}bp`, {
          constrain: { 'Observation.component': { slicing: { discriminator: [{ type: 'pattern', path: 'code' }], rules: 'closed', ordered: true } } },
          add: [
            { after: 'Observation.component', element: { id: 'Observation.component:systolic', path: 'Observation.component', sliceName: 'systolic', min: 1, max: '1', base: { path: 'Observation.component', min: 0, max: '*' } } },
            { after: 'Observation.component:systolic', element: { id: 'Observation.component:systolic.code', path: 'Observation.component.code', min: 1, max: '1', patternCodeableConcept: code('8480-6'), base: { path: 'Observation.component.code', min: 1, max: '1' } } },
            { after: 'Observation.component:systolic', element: { id: 'Observation.component:diastolic', path: 'Observation.component', sliceName: 'diastolic', min: 0, max: '1', base: { path: 'Observation.component', min: 0, max: '*' } } },
            { after: 'Observation.component:diastolic', element: { id: 'Observation.component:diastolic.code', path: 'Observation.component.code', min: 1, max: '1', patternCodeableConcept: code('8462-4'), base: { path: 'Observation.component.code', min: 1, max: '1' } } },
          ],
        }),
      );
      const bp = (...codes: string[]) => ({ resourceType: 'Observation', status: 'final', code: { text: 'BP' }, component: codes.map((c) => ({ code: code(c), valueQuantity: { value: 1 } })) });
      assert.deepEqual(brief(await validate('Observation', bp('8462-4'), `${P}bp`)), ['error Observation.component: Slice component:systolic: minimum required = 1, but only found 0']);
      assert.deepEqual(brief(await validate('Observation', bp('8480-6', '8480-6'), `${P}bp`)), ['error Observation.component: Slice component:systolic: maximum allowed = 1, but found 2']);
      assert.deepEqual(brief(await validate('Observation', bp('8480-6', '9999-9'), `${P}bp`)), [
        'error Observation.component[1]: This element does not match any slice of component and the slicing is closed',
      ]);
      assert.deepEqual(brief(await validate('Observation', bp('8462-4', '8480-6'), `${P}bp`)), [
        'error Observation.component[1]: Slice systolic is out of order: the slices of component are ordered',
      ]);
      assert.deepEqual(await validate('Observation', bp('8480-6', '8462-4'), `${P}bp`), []);
    });

    test('extensions: a slice by url requires birthPlace; its definition checks the value type; unknown and misplaced ones are reported', async () => {
      const birthPlace = 'http://hl7.org/fhir/StructureDefinition/patient-birthPlace';
      await hold(
        makeProfile('Patient', `${P}born`, {
          constrain: { 'Patient.extension': { slicing: { discriminator: [{ type: 'value', path: 'url' }], rules: 'open' } } },
          add: [{ after: 'Patient.extension', element: { id: 'Patient.extension:birthPlace', path: 'Patient.extension', sliceName: 'birthPlace', min: 1, max: '1', type: [{ code: 'Extension', profile: [birthPlace] }], base: { path: 'Patient.extension', min: 0, max: '*' } } }],
        }),
      );
      assert.deepEqual(brief(await validate('Patient', { resourceType: 'Patient' }, `${P}born`)), ['error Patient.extension: Slice extension:birthPlace: minimum required = 1, but only found 0']);
      assert.deepEqual(await validate('Patient', { resourceType: 'Patient', extension: [{ url: birthPlace, valueAddress: { city: 'Lyon' } }] }, `${P}born`), []);
      // Without a profile: the extension's own definition (value[x] is an Address) and its context (Patient).
      assert.deepEqual(brief(await validate('Patient', { resourceType: 'Patient', extension: [{ url: birthPlace, valueString: 'Lyon' }] })), [
        'error Patient.extension[0].valueString: Type String is not allowed here by the profile: value[x] allows Address',
      ]);
      assert.deepEqual(brief(await validate('Observation', { resourceType: 'Observation', status: 'final', code: { text: 'x' }, extension: [{ url: birthPlace, valueAddress: { city: 'Lyon' } }] })), [
        `error Observation.extension[0].url: Extension ${birthPlace} is not allowed on Observation: its context is Patient`,
      ]);
      assert.deepEqual(brief(await validate('Patient', { resourceType: 'Patient', extension: [{ url: 'http://hl7.org/fhir/StructureDefinition/no-such-thing', valueString: 'x' }] })), [
        'error Patient.extension[0].url: Unknown extension http://hl7.org/fhir/StructureDefinition/no-such-thing: it is not allowed here',
      ]);
      assert.deepEqual(brief(await validate('Patient', { resourceType: 'Patient', modifierExtension: [{ url: 'http://clinic.example/ext/mod', valueString: 'x' }] })), [
        'error Patient.modifierExtension[0].url: Unknown modifier extension http://clinic.example/ext/mod: it is not allowed here',
      ]);
      // A primitive's extensions (`_birthDate`) are checked as the element's.
      const birthTime = 'http://hl7.org/fhir/StructureDefinition/patient-birthTime';
      assert.deepEqual(await validate('Patient', { resourceType: 'Patient', birthDate: '2000-01-01', _birthDate: { extension: [{ url: birthTime, valueDateTime: '2000-01-01T08:30:00Z' }] } }), []);
      assert.deepEqual(brief(await validate('Patient', { resourceType: 'Patient', birthDate: '2000-01-01', _birthDate: { extension: [{ url: `${birthTime}-typo`, valueDateTime: '2000-01-01T08:30:00Z' }] } })), [
        `error Patient._birthDate.extension[0].url: Unknown extension ${birthTime}-typo: it is not allowed here`,
      ]);
      // An unknown extension of another domain (an implementation guide's too) is a warning: the resource is still valid.
      const usCore = await validate('Patient', { resourceType: 'Patient', extension: [{ url: 'http://hl7.org/fhir/us/core/StructureDefinition/us-core-birthsex', valueCode: 'F' }] });
      assert.deepEqual(usCore.map((i) => i.severity), ['warning']);
      const other = await validate('Patient', { resourceType: 'Patient', extension: [{ url: 'http://clinic.example/ext/colour', valueString: 'blue' }] });
      assert.deepEqual(brief(other), ['warning Patient.extension[0].url: Unknown extension http://clinic.example/ext/colour: its content was not checked']);
    });

    test('FHIRPath invariants of a profile: error and warning severities; an expression that throws is a warning naming its key', async () => {
      const source = `${P}invariant-patient`;
      await hold(
        makeProfile('Patient', source, {
          constrain: {
            Patient: {
              constraint: [
                { key: 'tst-1', severity: 'error', human: 'A patient needs a name', expression: 'name.exists()', source },
                { key: 'tst-2', severity: 'warning', human: 'A patient should have a telecom', expression: 'telecom.exists()', source },
                { key: 'tst-3', severity: 'error', human: 'Broken', expression: "name.where(family = 'x'", source },
              ],
            },
          },
        }),
      );
      const bad = await validate('Patient', { resourceType: 'Patient' }, source);
      assert.deepEqual(
        bad.map((i) => `${i.severity} ${i.code} ${i.details?.text?.split(':')[0]}`),
        ['error invariant Constraint tst-1 is not met', 'warning invariant Constraint tst-2 is not met', 'warning invariant Constraint tst-3 could not be evaluated'],
      );
      const good = await validate('Patient', { resourceType: 'Patient', name: [{ family: 'A' }], telecom: [{ system: 'phone', value: '1' }] }, source);
      assert.deepEqual(brief(good), [brief(bad)[2]]);
    });

    test('a pathological profile (hundreds of invariants) stops at LATTICE_PROFILE_MAX_INVARIANTS with an issue naming it', async () => {
      const source = `${P}heavy`;
      const constraint = Array.from({ length: 400 }, (_, i) => ({ key: `hv-${i}`, severity: 'error' as const, human: 'heavy', expression: 'true', source }));
      await hold(makeProfile('Patient', source, { constrain: { Patient: { constraint } } }));
      const issues = await validate('Patient', { resourceType: 'Patient' }, source);
      assert.deepEqual(brief(issues), ['error Patient: Validation stopped: it needed more than 300 invariant evaluations (LATTICE_PROFILE_MAX_INVARIANTS); the resource was not fully checked']);
      assert.equal(issues[0].code, 'too-costly');
    });

    test("a held profile's invariant that runs past LATTICE_FHIRPATH_TIMEOUT is stopped (an error naming it) while the server answers others", async () => {
      const source = `${P}slow-invariant`;
      // 240 characters, about a minute of work in one thread: evaluated in the FHIRPath thread, stopped at its limit.
      let nested = '1';
      for (let level = 0; level < 12; level++) nested = `(1|2|3|4).select(${nested})`;
      await hold(makeProfile('Patient', source, { constrain: { Patient: { constraint: [{ key: 'slow-1', severity: 'error', human: 'slow', expression: `${nested}.count() > 0`, source }] } } }));
      const order: string[] = [];
      const slow = validate('Patient', { resourceType: 'Patient', name: [{ family: 'Slow' }] }, source).then((issues) => {
        order.push('validate');
        return issues;
      });
      // Sent once the validation is under way: before, the evaluation held the HTTP thread for the minute.
      await new Promise((resolve) => setTimeout(resolve, 300));
      const metadata = await server.fhir('GET', '/metadata');
      order.push('metadata');
      assert.equal(metadata.status, 200);
      const issues = await slow;
      assert.deepEqual(order, ['metadata', 'validate']);
      assert.deepEqual(brief(issues), ['error Patient: Constraint slow-1 was not evaluated: it ran longer than 1000 ms (LATTICE_FHIRPATH_TIMEOUT)']);
      assert.equal(issues[0].code, 'too-costly');
    });

    test('a held StructureDefinition without a snapshot: checked with the snapshot generated from its differential', async () => {
      const sd = makeProfile('Patient', `${P}no-snapshot`, {});
      delete sd.snapshot;
      sd.differential = { element: [{ id: 'Patient.birthDate', path: 'Patient.birthDate', min: 1 }] };
      await hold(sd);
      const issues = await validate('Patient', { resourceType: 'Patient' }, `${P}no-snapshot`);
      assert.deepEqual(brief(issues), [
        'error Patient.birthDate: birthDate: minimum required = 1, but only found 0',
      ]);
    });
  });
}
