import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createProject, drivers, ooText, startServer, type TestProject, type TestServer } from './harness.js';

/** Required bindings (docs/rest.md#validation) and `$validate` (docs/rest.md#validate). */
for (const driver of drivers) {
  describe(`required bindings and $validate (${driver})`, () => {
    let server: TestServer;
    let other: TestProject;
    before(async () => {
      server = await startServer(driver);
      other = await createProject(server, 'Validate other');
    });
    after(() => server.stop());

    test('a code outside its required value set → 400 with the element as expression; nothing stored', async () => {
      const res = await server.fhir('POST', '/Patient', { body: { resourceType: 'Patient', gender: 'bogus', name: [{ family: 'Bound' }] } });
      assert.equal(res.status, 400, res.text);
      assert.deepEqual(res.body.issue, [
        {
          severity: 'error',
          code: 'value',
          details: { text: "Value 'bogus' is not in the required value set http://hl7.org/fhir/ValueSet/administrative-gender|4.0.1" },
          expression: ['Patient.gender'],
        },
      ]);
      const search = await server.fhir('GET', '/Patient?family=Bound');
      assert.equal(search.body.total, 0);
    });

    test('valid codes pass; nested, repeated and Coding-typed bindings are checked too', async () => {
      const ok = await server.fhir('POST', '/Patient', {
        body: { resourceType: 'Patient', gender: 'female', name: [{ use: 'official', family: 'Ok' }], telecom: [{ system: 'phone', value: '1' }] },
      });
      assert.equal(ok.status, 201, ok.text);
      const nested = await server.fhir('POST', '/Patient', {
        body: { resourceType: 'Patient', name: [{ use: 'official' }, { use: 'nickname-ish' }], telecom: [{ system: 'pigeon', value: '1' }] },
      });
      assert.equal(nested.status, 400, nested.text);
      assert.deepEqual(nested.body.issue.map((i: { expression: string[] }) => i.expression[0]), ['Patient.name[1].use', 'Patient.telecom[0].system']);
      // Observation.status (code) and a contained resource's binding (the contained Patient is referenced: dom-3).
      const obs = await server.fhir('POST', '/Observation', {
        body: { resourceType: 'Observation', status: 'finalish', code: { text: 'x' }, contained: [{ resourceType: 'Patient', id: 'p', gender: 'x' }], subject: { reference: '#p' } },
      });
      assert.equal(obs.status, 400, obs.text);
      assert.deepEqual(obs.body.issue.map((i: { expression: string[] }) => i.expression[0]).sort(), ['Observation.contained[0].gender', 'Observation.status']);
    });

    test('update and PATCH check bindings as create does', async () => {
      const created = await server.fhir('POST', '/Patient', { body: { resourceType: 'Patient', gender: 'male' } });
      const put = await server.fhir('PUT', `/Patient/${created.body.id}`, { body: { ...created.body, gender: 'nope' } });
      assert.equal(put.status, 400, put.text);
      assert.deepEqual(put.body.issue[0].expression, ['Patient.gender']);
      const patch = await server.fhir('PATCH', `/Patient/${created.body.id}`, {
        raw: JSON.stringify([{ op: 'replace', path: '/gender', value: 'nope' }]),
        contentType: 'application/json-patch+json',
      });
      assert.equal(patch.status, 400, patch.text);
      assert.equal(ooText(patch.body), "Value 'nope' is not in the required value set http://hl7.org/fhir/ValueSet/administrative-gender|4.0.1");
    });

    test('a binding to a value set the server cannot expand is not an error', async () => {
      // Attachment.contentType is bound (required) to mimetypes, whose code system (urn:ietf:bcp:13) has no concepts here.
      const res = await server.fhir('POST', '/DocumentReference', {
        body: { resourceType: 'DocumentReference', status: 'current', content: [{ attachment: { contentType: 'application/x-made-up' } }] },
      });
      assert.equal(res.status, 201, res.text);
    });

    test('a changed value set is seen by the next validation (the cache follows the stored ValueSet)', async () => {
      const withLink = (type: string) => ({ resourceType: 'Patient', link: [{ other: { reference: 'Patient/x' }, type }] });
      assert.equal((await server.fhir('POST', '/Patient', { body: withLink('replaces') })).status, 201);
      const found = await server.fhir('GET', '/ValueSet?url=http://hl7.org/fhir/ValueSet/link-type', { token: server.adminToken });
      const linkType = found.body.entry[0].resource;
      const { meta: _meta, ...changed } = { ...linkType, compose: { include: [{ system: 'http://hl7.org/fhir/link-type', concept: [{ code: 'seealso' }] }] } };
      const put = await server.fhir('PUT', `/ValueSet/${linkType.id}`, { token: server.adminToken, body: changed });
      assert.equal(put.status, 200, put.text);
      const refused = await server.fhir('POST', '/Patient', { body: withLink('replaces') });
      assert.equal(refused.status, 400, refused.text);
      assert.equal(ooText(refused.body), "Value 'replaces' is not in the required value set http://hl7.org/fhir/ValueSet/link-type|4.0.1");
      assert.equal((await server.fhir('POST', '/Patient', { body: withLink('seealso') })).status, 201);
    });

    test('$validate at type level: 200 OperationOutcome, valid or not; nothing stored', async () => {
      const ok = await server.fhir('POST', '/Patient/$validate', { body: { resourceType: 'Parameters', parameter: [{ name: 'resource', resource: { resourceType: 'Patient', gender: 'male', name: [{ family: 'Validated' }] } }] } });
      assert.equal(ok.status, 200, ok.text);
      assert.deepEqual(ok.body, { resourceType: 'OperationOutcome', issue: [{ severity: 'information', code: 'informational', details: { text: 'All OK' } }] });
      const bare = await server.fhir('POST', '/Patient/$validate', { body: { resourceType: 'Patient', gender: 'bogus', birthDate: '1980-13-01', name: [{ family: 'Validated' }] } });
      assert.equal(bare.status, 200, bare.text);
      assert.deepEqual(bare.body.issue.map((i: { expression: string[] }) => i.expression[0]), ['Patient.birthDate']);
      const binding = await server.fhir('POST', '/Patient/$validate', { body: { resourceType: 'Patient', gender: 'bogus' } });
      assert.equal(ooText(binding.body), "Value 'bogus' is not in the required value set http://hl7.org/fhir/ValueSet/administrative-gender|4.0.1");
      const inParameters = await server.fhir('POST', '/Patient/$validate', { body: { resourceType: 'Parameters', parameter: [{ name: 'resource', resource: { resourceType: 'Patient', foo: 1 } }] } });
      assert.equal(inParameters.status, 200, inParameters.text);
      assert.equal(ooText(inParameters.body), "Unknown element 'foo' in Patient");
      const wrongType = await server.fhir('POST', '/Patient/$validate', { body: { resourceType: 'Observation', status: 'final', code: { text: 'x' } } });
      assert.equal(wrongType.status, 200);
      assert.equal(ooText(wrongType.body), "Resource type 'Observation' does not match URL type 'Patient'");
      assert.equal((await server.fhir('GET', '/Patient?family=Validated')).body.total, 0);
    });

    test('$validate input errors → 400', async () => {
      const none = await server.fhir('POST', '/Patient/$validate', { body: { resourceType: 'Parameters' } });
      assert.equal(none.status, 400);
      assert.equal(ooText(none.body), "Parameter 'resource' is required unless mode is delete");
      const mode = await server.fhir('POST', '/Patient/$validate', { body: { resourceType: 'Parameters', parameter: [{ name: 'mode', valueCode: 'sideways' }, { name: 'resource', resource: { resourceType: 'Patient' } }] } });
      assert.equal(mode.status, 400);
      assert.equal(ooText(mode.body), "Invalid mode 'sideways': expected create, update or delete");
      const update = await server.fhir('POST', '/Patient/$validate', { body: { resourceType: 'Parameters', parameter: [{ name: 'mode', valueCode: 'update' }, { name: 'resource', resource: { resourceType: 'Patient' } }] } });
      assert.equal(update.status, 400);
      assert.equal(ooText(update.body), 'Mode update needs an instance: [base]/Patient/<id>/$validate');
      const notResource = await server.fhir('POST', '/Patient/$validate', { body: { resourceType: 'Parameters', parameter: [{ name: 'resource', valueString: 'x' }] } });
      assert.equal(notResource.status, 400);
      assert.equal(ooText(notResource.body), "Parameter 'resource' must be a resource");
      assert.equal((await server.fhir('GET', '/Patient/$validate')).status, 400);
    });

    test('$validate never answers All OK for a profile it cannot check or a parameter it does not know', async () => {
      const patient = { resourceType: 'Patient', gender: 'male' };
      const usCore = 'http://hl7.org/fhir/us-core/StructureDefinition/us-core-patient';
      const withProfile = await server.fhir('POST', '/Patient/$validate', { body: { resourceType: 'Parameters', parameter: [{ name: 'resource', resource: patient }, { name: 'profile', valueUri: usCore }] } });
      assert.equal(withProfile.status, 200, withProfile.text);
      assert.deepEqual(withProfile.body.issue, [
        {
          severity: 'error',
          code: 'not-supported',
          details: { coding: [{ system: 'http://hl7.org/fhir/java-core-messageId', code: 'Validation_VAL_Profile_Unknown' }], text: `Profile '${usCore}' is not known to this server: the resource was not checked against it` },
          expression: ['Patient'],
        },
      ]);
      // A StructureDefinition the project holds without a snapshot gets one from its differential, and is checked.
      const sd = { resourceType: 'StructureDefinition', url: 'http://clinic.example/StructureDefinition/clinic-patient', name: 'ClinicPatient', status: 'active', kind: 'resource', abstract: false, type: 'Patient', baseDefinition: 'http://hl7.org/fhir/StructureDefinition/Patient', derivation: 'constraint', differential: { element: [{ id: 'Patient.birthDate', path: 'Patient.birthDate', min: 1 }] } };
      assert.equal((await server.fhir('POST', '/StructureDefinition', { body: sd })).status, 201);
      const heldPost = await server.fhir('POST', '/Patient/$validate', { body: { resourceType: 'Parameters', parameter: [{ name: 'resource', resource: patient }, { name: 'profile', valueUri: sd.url }] } });
      assert.deepEqual(heldPost.body.issue, [
        {
          severity: 'error',
          code: 'required',
          details: { coding: [{ system: 'http://hl7.org/fhir/java-core-messageId', code: 'Validation_VAL_Profile_Minimum' }], text: 'birthDate: minimum required = 1, but only found 0' },
          expression: ['Patient.birthDate'],
        },
      ]);
      // The base definition of the type is what is checked: no issue.
      const base = await server.fhir('POST', '/Patient/$validate', { body: { resourceType: 'Parameters', parameter: [{ name: 'resource', resource: patient }, { name: 'profile', valueUri: 'http://hl7.org/fhir/StructureDefinition/Patient' }] } });
      assert.equal(ooText(base.body), 'All OK');
      // meta.profile is a claim the resource carries: an unknown one is a warning (a create in a project
      // without Project.validateProfilesOnWrite would still succeed and store it unchecked).
      const claimed = await server.fhir('POST', '/Patient/$validate', { body: { ...patient, meta: { profile: [usCore] } } });
      assert.deepEqual(claimed.body.issue, [
        {
          severity: 'warning',
          code: 'not-supported',
          details: { coding: [{ system: 'http://hl7.org/fhir/java-core-messageId', code: 'Validation_VAL_Profile_Unknown' }], text: `Profile '${usCore}' is not known to this server: the resource was not checked against it` },
          expression: ['Patient.meta.profile[0]'],
        },
      ]);
      // Unknown parameters, in a body or a query (not the general `_` ones), are errors, named.
      const typo = await server.fhir('POST', '/Patient/$validate', { body: { resourceType: 'Parameters', parameter: [{ name: 'resource', resource: patient }, { name: 'mdoe', valueCode: 'create' }] } });
      assert.deepEqual(typo.body.issue, [
        { severity: 'error', code: 'not-supported', details: { text: "Unknown parameter 'mdoe': $validate takes resource, mode and profile; nothing was checked for it" } },
      ]);
      const created = (await server.fhir('POST', '/Patient', { body: patient })).body;
      const query = await server.fhir('GET', `/Patient/${created.id}/$validate?mode=delete&strict=true&_format=json`);
      assert.equal(query.status, 200, query.text);
      assert.equal(ooText(query.body), "Unknown parameter 'strict': $validate takes resource, mode and profile; nothing was checked for it");
    });

    test('$validate modes create, update and delete at instance level', async () => {
      const created = (await server.fhir('POST', '/Patient', { body: { resourceType: 'Patient', gender: 'male' } })).body;
      const asCreate = await server.fhir('POST', '/Patient/$validate', { body: { resourceType: 'Parameters', parameter: [{ name: 'mode', valueCode: 'create' }, { name: 'resource', resource: { resourceType: 'Patient', id: 'anything' } }] } });
      assert.equal(ooText(asCreate.body), 'All OK');
      const asUpdate = await server.fhir('POST', `/Patient/${created.id}/$validate`, { body: { resourceType: 'Parameters', parameter: [{ name: 'mode', valueCode: 'update' }, { name: 'resource', resource: { ...created, gender: 'female' } }] } });
      assert.equal(ooText(asUpdate.body), 'All OK');
      const otherId = await server.fhir('POST', `/Patient/${created.id}/$validate`, { body: { resourceType: 'Parameters', parameter: [{ name: 'mode', valueCode: 'update' }, { name: 'resource', resource: { resourceType: 'Patient', id: 'other' } }] } });
      assert.equal(otherId.status, 200);
      assert.equal(ooText(otherId.body), 'Resource ID does not match URL');
      const asDelete = await server.fhir('POST', `/Patient/${created.id}/$validate`, { body: { resourceType: 'Parameters', parameter: [{ name: 'mode', valueCode: 'delete' }] } });
      assert.equal(ooText(asDelete.body), 'All OK');
      const deleteByGet = await server.fhir('GET', `/Patient/${created.id}/$validate?mode=delete`);
      assert.equal(ooText(deleteByGet.body), 'All OK');
      // Shared content cannot be deleted by a project member: the answer says so (200, forbidden issue).
      const vs = (await server.fhir('GET', '/ValueSet?url=http://hl7.org/fhir/ValueSet/administrative-gender')).body.entry[0].resource;
      const shared = await server.fhir('POST', `/ValueSet/${vs.id}/$validate`, { body: { resourceType: 'Parameters', parameter: [{ name: 'mode', valueCode: 'delete' }] } });
      assert.equal(shared.status, 200);
      assert.equal(shared.body.issue[0].code, 'forbidden');
      // Nothing changed, and another project's instance does not exist for the caller.
      assert.equal((await server.fhir('GET', `/Patient/${created.id}`)).body.gender, 'male');
      assert.equal((await server.fhir('POST', `/Patient/${created.id}/$validate`, { token: other.adminToken, body: { resourceType: 'Parameters', parameter: [{ name: 'mode', valueCode: 'delete' }] } })).status, 404);
    });
  });
}
