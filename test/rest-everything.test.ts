import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { drivers, loginTokens, ooText, startServer, type ApiResponse, type TestServer } from './harness.js';

/**
 * Every R4 compartment and `$everything` on Patient and Encounter (docs/rest.md#compartment-search,
 * docs/rest.md#everything): members, referenced resources, paging, GET and POST with or without a
 * body, and a Patient-profile member confined to its own record.
 */
const ids = (res: ApiResponse, mode?: string): string[] =>
  (res.body.entry ?? [])
    .filter((e: { search: { mode: string } }) => mode === undefined || e.search.mode === mode)
    .map((e: { resource: { resourceType: string; id: string } }) => `${e.resource.resourceType}/${e.resource.id}`)
    .sort();

for (const driver of drivers) {
  describe(`compartments and $everything (${driver})`, () => {
    let server: TestServer;
    const r: Record<string, string> = {};
    let patientToken: string;
    const create = async (key: string, body: Record<string, unknown>) => {
      const res = await server.fhir('POST', `/${body.resourceType as string}`, { body });
      assert.equal(res.status, 201, res.text);
      r[key] = `${body.resourceType as string}/${res.body.id as string}`;
      return r[key];
    };

    before(async () => {
      server = await startServer(driver);
      // A Patient-profile member of the default project (docs/auth.md#access-policies): its own record only.
      const email = `pt-${randomBytes(4).toString('hex')}@example.org`;
      const password = `pw-${randomBytes(9).toString('base64url')}`;
      const invite = await server.request('POST', `/admin/projects/${server.projectId}/invite`, {
        body: { resourceType: 'Patient', firstName: 'Own', lastName: 'Record', email, password },
        contentType: 'application/json',
        token: server.adminToken,
      });
      assert.equal(invite.status, 200, invite.text);
      r.patient = invite.body.profile.reference;
      patientToken = (await loginTokens(server, email, password, { projectId: server.projectId, scope: 'openid' })).access_token;
      await create('other', { resourceType: 'Patient', name: [{ family: 'Other' }] });
      await create('org', { resourceType: 'Organization', name: 'Clinic' });
      await create('location', { resourceType: 'Location', name: 'Room 1' });
      await create('doc', { resourceType: 'Practitioner', name: [{ family: 'Doc' }] });
      await create('device', { resourceType: 'Device', deviceName: [{ name: 'Scale', type: 'user-friendly-name' }] });
      await create('related', { resourceType: 'RelatedPerson', patient: { reference: r.patient } });
      await create('encounter', {
        resourceType: 'Encounter', status: 'finished', class: { code: 'AMB' }, subject: { reference: r.patient },
        participant: [{ individual: { reference: r.doc } }], location: [{ location: { reference: r.location } }], serviceProvider: { reference: r.org },
      });
      await create('obs', { resourceType: 'Observation', status: 'final', code: { text: 'weight' }, subject: { reference: r.patient }, encounter: { reference: r.encounter }, performer: [{ reference: r.doc }], device: { reference: r.device } });
      await create('obs2', { resourceType: 'Observation', status: 'final', code: { text: 'height' }, subject: { reference: r.patient }, encounter: { reference: r.encounter }, performer: [{ reference: r.related }] });
      await create('condition', { resourceType: 'Condition', subject: { reference: r.patient }, encounter: { reference: r.encounter }, asserter: { reference: r.doc } });
      await create('otherEncounter', { resourceType: 'Encounter', status: 'finished', class: { code: 'AMB' }, subject: { reference: r.other }, participant: [{ individual: { reference: r.doc } }] });
      await create('otherObs', { resourceType: 'Observation', status: 'final', code: { text: 'theirs' }, subject: { reference: r.other }, encounter: { reference: r.otherEncounter }, performer: [{ reference: r.doc }] });
    });
    after(() => server.stop());

    test('Encounter, Practitioner, RelatedPerson and Device compartments list their members', async () => {
      const enc = await server.fhir('GET', `/${r.encounter}/Observation`);
      assert.equal(enc.status, 200, enc.text);
      assert.deepEqual(ids(enc), [r.obs, r.obs2].sort());
      assert.deepEqual(ids(await server.fhir('GET', `/${r.encounter}/*`)), [r.encounter, r.obs, r.obs2, r.condition].sort());
      assert.deepEqual(ids(await server.fhir('GET', `/${r.doc}/*?_type=Observation,Encounter,Condition`)), [r.obs, r.encounter, r.condition, r.otherEncounter, r.otherObs].sort());
      assert.deepEqual(ids(await server.fhir('GET', `/${r.related}/Observation`)), [r.obs2]);
      assert.deepEqual(ids(await server.fhir('GET', `/${r.device}/Observation`)), [r.obs]);
      const outside = await server.fhir('GET', `/${r.encounter}/Patient`);
      assert.equal(outside.status, 400);
      assert.equal(ooText(outside.body), 'Resource type Patient is not in the Encounter compartment');
      const unknown = await server.fhir('GET', '/Encounter/nope/Observation');
      assert.equal(unknown.status, 404);
      assert.equal(ooText(unknown.body), 'Not found');
      assert.equal((await server.fhir('GET', `/${r.org}/Observation`)).status, 404); // Organization is no compartment
    });

    test('Encounter/$everything: the encounter, its compartment and what they reference; GET, POST with and without a body', async () => {
      const expectedMatches = [r.encounter, r.obs, r.obs2, r.condition].sort();
      const expectedIncluded = [r.patient, r.doc, r.location, r.org, r.device, r.related].sort();
      const get = await server.fhir('GET', `/${r.encounter}/$everything`);
      assert.equal(get.status, 200, get.text);
      assert.equal(get.body.total, 4);
      assert.deepEqual(ids(get, 'match'), expectedMatches);
      assert.deepEqual(ids(get, 'include'), expectedIncluded);
      const bare = await server.fhir('POST', `/${r.encounter}/$everything`);
      assert.equal(bare.status, 200, bare.text);
      assert.deepEqual(ids(bare), ids(get));
      const posted = await server.fhir('POST', `/${r.encounter}/$everything`, { body: { resourceType: 'Parameters', parameter: [{ name: '_type', valueCode: 'Condition' }] } });
      assert.deepEqual(ids(posted, 'match'), [r.condition]);
      assert.deepEqual(ids(posted, 'include'), [r.patient, r.doc, r.encounter].sort());
      const queried = await server.fhir('POST', `/${r.encounter}/$everything?_type=Observation&_count=1`);
      assert.equal(queried.status, 200, queried.text);
      assert.equal(queried.body.total, 2);
      assert.equal(ids(queried, 'match').length, 1);
      assert.equal(queried.body.link.find((l: { relation: string }) => l.relation === 'next').url, `${server.fhirUrl}/${r.encounter}/$everything?_type=Observation&_count=1&_offset=1`);
    });

    test('Patient/$everything adds the practitioners, organizations and locations the record references', async () => {
      const res = await server.fhir('POST', `/${r.patient}/$everything`);
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(ids(res, 'match'), [r.patient, r.encounter, r.obs, r.obs2, r.condition, r.related].sort());
      assert.deepEqual(ids(res, 'include'), [r.doc, r.location, r.org, r.device].sort());
    });

    test('a Patient-profile member: its own everything; other compartments only as far as its own record reaches', async () => {
      const own = await server.fhir('GET', `/${r.patient}/$everything`, { token: patientToken });
      assert.equal(own.status, 200, own.text);
      // Its own compartment; referenced resources outside it (practitioner, organization, …) are not visible to it.
      assert.deepEqual(ids(own, 'match'), [r.patient, r.encounter, r.obs, r.obs2, r.condition, r.related].sort());
      assert.deepEqual(ids(own, 'include'), []);
      for (const path of [`/${r.other}/$everything`, `/${r.otherEncounter}/$everything`, `/${r.other}/*`, `/${r.otherEncounter}/Observation`]) {
        const res = await server.fhir('GET', path, { token: patientToken });
        assert.equal(res.status, 404, `${path}: ${res.text}`);
        assert.equal(ooText(res.body), 'Not found');
      }
      // The practitioner is outside its compartment: as if absent.
      const doc = await server.fhir('GET', `/${r.doc}/Observation`, { token: patientToken });
      assert.equal(doc.status, 404, doc.text);
      const enc = await server.fhir('POST', `/${r.encounter}/$everything`, { token: patientToken });
      assert.equal(enc.status, 200, enc.text);
      assert.deepEqual(ids(enc, 'match'), [r.encounter, r.obs, r.obs2, r.condition].sort());
      assert.deepEqual(ids(enc, 'include'), [r.patient, r.related].sort());
    });
  });
}
