import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { Bundle, Resource } from '@medplum/fhirtypes';
import { createMember, createProject, drivers, loginTokens, ooText, pkcePair, startServer, tokenRequest, type TestProject, type TestServer } from './harness.js';

/**
 * SMART scopes and access policies (docs/auth.md#scopes, docs/auth.md#access-policies): what a
 * token's scopes and a membership's AccessPolicy leave of the membership's rights — 403
 * `Forbidden` for an excluded type or interaction, rows outside criteria or compartment absent
 * (404, not in search), and a Patient-profile member confined to its own compartment on every
 * route (read, vread, search, includes, chains, history, $everything, batch, transaction,
 * terminology).
 */

const OUTSIDE = 'Resource is outside the compartment or criteria of your access';

/** A login over HTTP asking for `scope` (what is granted is in the token's `scope` claim). */
async function tokenWithScope(server: TestServer, email: string, password: string, projectId: string, scope: string): Promise<string> {
  return (await loginTokens(server, email, password, { projectId, scope })).access_token;
}

/** Invites a user into the project with a password; returns its e-mail, password and membership. */
async function invite(server: TestServer, p: TestProject, resourceType: string, membership: Record<string, unknown> = {}) {
  const email = `inv-${randomBytes(5).toString('hex')}@example.org`;
  const password = `pw-${randomBytes(9).toString('base64url')}`;
  const res = await server.request('POST', `/admin/projects/${p.projectId}/invite`, {
    body: { resourceType, firstName: 'Own', lastName: 'Person', email, password, membership },
    contentType: 'application/json',
    token: p.adminToken,
  });
  return { res, email, password };
}

const ids = (bundle: Bundle | undefined): string[] => (bundle?.entry ?? []).map((e) => `${e.resource?.resourceType}/${e.resource?.id}`).sort();

for (const driver of drivers) {
  describe(`access: scopes and policies (${driver})`, () => {
    let server: TestServer;
    let a: TestProject;
    let member: { email: string; password: string };
    /** The Patient-profile member, its own Patient, and another patient of the project. */
    let patientUser: { email: string; password: string; token: string; own: string };
    let other: string;
    const created: Record<string, Resource> = {};

    const post = async (path: string, body: Record<string, unknown>, token = a.adminToken): Promise<Resource> => {
      const res = await server.fhir('POST', path, { token, body });
      assert.equal(res.status, 201, res.text);
      return res.body as Resource;
    };

    before(async () => {
      server = await startServer(driver);
      a = await createProject(server, 'Access A');
      const m = await createMember(server, a.projectId);
      member = { email: m.email, password: m.password };
      const inv = await invite(server, a, 'Patient');
      assert.equal(inv.res.status, 200, inv.res.text);
      const own = (inv.res.body.profile.reference as string).split('/')[1];
      await server.fhir('PUT', `/Patient/${own}`, { token: a.adminToken, body: { resourceType: 'Patient', id: own, name: [{ family: 'Ownfamily' }] } });
      const otherPatient = await post('/Patient', { resourceType: 'Patient', name: [{ family: 'Otherfamily' }] });
      other = otherPatient.id as string;
      for (const [who, pid] of [['own', own], ['other', other]] as const) {
        created[`${who}Lab`] = await post('/Observation', {
          resourceType: 'Observation', status: 'final', code: { text: 'lab' }, subject: { reference: `Patient/${pid}` },
          category: [{ coding: [{ system: 'http://terminology.hl7.org/CodeSystem/observation-category', code: 'laboratory' }] }],
        });
        created[`${who}Vital`] = await post('/Observation', {
          resourceType: 'Observation', status: 'final', code: { text: 'vital' }, subject: { reference: `Patient/${pid}` },
          category: [{ coding: [{ system: 'http://terminology.hl7.org/CodeSystem/observation-category', code: 'vital-signs' }] }],
        });
        created[`${who}Encounter`] = await post('/Encounter', { resourceType: 'Encounter', status: 'finished', class: { code: 'AMB' }, subject: { reference: `Patient/${pid}` } });
      }
      // Updated once, so instance history has two versions.
      const vital = created.otherVital;
      assert.equal((await server.fhir('PUT', `/Observation/${vital.id}`, { token: a.adminToken, body: { ...vital, status: 'amended' } })).status, 200);
      created.practitioner = await post('/Practitioner', { resourceType: 'Practitioner', name: [{ family: 'Doc' }] });
      patientUser = { email: inv.email, password: inv.password, own, token: await tokenWithScope(server, inv.email, inv.password, a.projectId, 'openid') };
    });
    after(() => server.stop());

    describe('a Patient-profile member sees only its own compartment', () => {
      const get = (path: string) => server.fhir('GET', path, { token: patientUser.token });

      test('read and vread: its own Patient and data 200; another patient and its data 404 Not found', async () => {
        assert.equal((await get(`/Patient/${patientUser.own}`)).status, 200);
        assert.equal((await get(`/Observation/${created.ownLab.id}`)).status, 200);
        for (const path of [`/Patient/${other}`, `/Patient/${other}/_history/1`, `/Observation/${created.otherLab.id}`, `/Observation/${created.otherVital.id}/_history/2`, `/Encounter/${created.otherEncounter.id}`]) {
          const res = await get(path);
          assert.equal(res.status, 404, `${path}: ${res.text}`);
          assert.equal(ooText(res.body), 'Not found');
        }
      });

      test('a deleted resource of another patient is 404 Not found, not 410: a restricted caller cannot tell that it existed', async () => {
        const gone = await post('/Observation', { resourceType: 'Observation', status: 'final', code: { text: 'deleted' }, subject: { reference: `Patient/${other}` } });
        assert.equal((await server.fhir('DELETE', `/Observation/${gone.id}`, { token: a.adminToken })).status, 200);
        assert.equal((await server.fhir('GET', `/Observation/${gone.id}`, { token: a.adminToken })).status, 410); // unrestricted: deleted
        for (const path of [`/Observation/${gone.id}`, `/Observation/${gone.id}/_history/2`]) {
          const res = await get(path);
          assert.equal(res.status, 404, `${path}: ${res.text}`);
          assert.equal(ooText(res.body), 'Not found');
        }
      });

      test('search: only its own rows, counted in SQL (total), and types outside the compartment are empty', async () => {
        const obs = await get('/Observation?_count=1');
        assert.equal(obs.status, 200, obs.text);
        assert.equal(obs.body.total, 2);
        assert.deepEqual(ids((await get('/Patient')).body), [`Patient/${patientUser.own}`]);
        assert.deepEqual(ids((await get(`/Observation?subject=Patient/${other}`)).body), []);
        assert.deepEqual(ids((await get('/Practitioner')).body), []);
      });

      test('_include, _revinclude, chains and _has never reach another patient', async () => {
        const inc = await get('/Observation?_include=Observation:subject');
        assert.deepEqual(ids(inc.body), [`Observation/${created.ownLab.id}`, `Observation/${created.ownVital.id}`, `Patient/${patientUser.own}`].sort());
        const rev = await get('/Patient?_revinclude=Observation:subject&_revinclude=Encounter:subject');
        assert.deepEqual(ids(rev.body), [`Patient/${patientUser.own}`, `Observation/${created.ownLab.id}`, `Observation/${created.ownVital.id}`, `Encounter/${created.ownEncounter.id}`].sort());
        assert.deepEqual(ids((await get('/Observation?subject:Patient.name=Otherfamily')).body), []);
        assert.equal(ids((await get('/Observation?subject:Patient.name=Ownfamily')).body).length, 2);
        // _has looks at the referencing resources through the same access rights: only its own.
        const has = await get(`/Patient?_has:Observation:subject:status=final`);
        assert.equal(has.status, 200, has.text);
        assert.deepEqual(ids(has.body), [`Patient/${patientUser.own}`]);
        const hasOther = await get(`/Encounter?_has:Observation:encounter:subject=Patient/${other}`);
        assert.deepEqual(ids(hasOther.body), []);
      });

      test('history: instance 404, type and system history only its compartment', async () => {
        assert.equal((await get(`/Observation/${created.otherVital.id}/_history`)).status, 404);
        const type = await get('/Observation/_history');
        assert.equal(type.status, 200, type.text);
        assert.deepEqual([...new Set(ids(type.body))], [`Observation/${created.ownLab.id}`, `Observation/${created.ownVital.id}`].sort());
        const system = await get('/_history?_count=1000');
        assert.equal(system.status, 200, system.text);
        const seen = new Set(ids(system.body));
        for (const key of [`Patient/${other}`, `Observation/${created.otherLab.id}`, `Observation/${created.otherVital.id}`, `Encounter/${created.otherEncounter.id}`, `Practitioner/${created.practitioner.id}`]) {
          assert.ok(!seen.has(key), `${key} in system history`);
        }
        assert.ok(seen.has(`Patient/${patientUser.own}`));
      });

      test('Patient/$everything and compartment search: its own only; another patient 404', async () => {
        assert.equal((await get(`/Patient/${other}/$everything`)).status, 404);
        assert.equal((await get(`/Patient/${other}/Observation`)).status, 404);
        const all = await get(`/Patient/${patientUser.own}/$everything`);
        assert.equal(all.status, 200, all.text);
        assert.deepEqual(ids(all.body), [`Patient/${patientUser.own}`, `Observation/${created.ownLab.id}`, `Observation/${created.ownVital.id}`, `Encounter/${created.ownEncounter.id}`].sort());
      });

      test('batch and transaction: entries about another patient are 404, a transaction touching one fails whole', async () => {
        const batch = await server.fhir('POST', '', {
          token: patientUser.token,
          body: { resourceType: 'Bundle', type: 'batch', entry: [
            { request: { method: 'GET', url: `Patient/${other}` } },
            { request: { method: 'GET', url: 'Observation?category=laboratory' } },
          ] },
        });
        assert.equal(batch.status, 200, batch.text);
        assert.match(batch.body.entry[0].response.status, /^404/);
        assert.deepEqual(ids(batch.body.entry[1].resource), [`Observation/${created.ownLab.id}`]);
        const tx = await server.fhir('POST', '', {
          token: patientUser.token,
          body: { resourceType: 'Bundle', type: 'transaction', entry: [
            { request: { method: 'PUT', url: `Observation/${created.otherLab.id}` }, resource: { ...created.otherLab, status: 'cancelled' } },
          ] },
        });
        assert.equal(tx.status, 404, tx.text);
        const after = await server.fhir('GET', `/Observation/${created.otherLab.id}`, { token: a.adminToken });
        assert.equal(after.body.status, 'final');
      });

      test('writes: into its compartment 201; about another patient 403 (create) or 404 (update, delete)', async () => {
        const own = await server.fhir('POST', '/Observation', { token: patientUser.token, body: { resourceType: 'Observation', status: 'preliminary', code: { text: 'self' }, subject: { reference: `Patient/${patientUser.own}` } } });
        assert.equal(own.status, 201, own.text);
        const foreign = await server.fhir('POST', '/Observation', { token: patientUser.token, body: { resourceType: 'Observation', status: 'preliminary', code: { text: 'x' }, subject: { reference: `Patient/${other}` } } });
        assert.equal(foreign.status, 403, foreign.text);
        assert.equal(ooText(foreign.body), OUTSIDE);
        const moved = await server.fhir('PUT', `/Observation/${own.body.id}`, { token: patientUser.token, body: { ...own.body, subject: { reference: `Patient/${other}` } } });
        assert.equal(moved.status, 403, moved.text);
        assert.equal(ooText(moved.body), OUTSIDE);
        assert.equal((await server.fhir('PUT', `/Observation/${created.otherLab.id}`, { token: patientUser.token, body: created.otherLab })).status, 404);
        assert.equal((await server.fhir('DELETE', `/Observation/${created.otherLab.id}`, { token: patientUser.token })).status, 404);
        assert.equal((await server.fhir('GET', `/Observation/${created.otherLab.id}`, { token: a.adminToken })).status, 200);
      });

      test('terminology calls and definitions stay available (public types)', async () => {
        const lookup = await get('/CodeSystem/$lookup?system=http://hl7.org/fhir/administrative-gender&code=female');
        assert.equal(lookup.status, 200, lookup.text);
        const expand = await get('/ValueSet/$expand?url=http://hl7.org/fhir/ValueSet/administrative-gender');
        assert.equal(expand.status, 200, expand.text);
        assert.equal((await get('/OperationDefinition?_count=1')).status, 200);
      });
    });

    describe('SMART scopes', () => {
      const as = (scope: string) => tokenWithScope(server, member.email, member.password, a.projectId, scope);

      test('v1 user/Observation.read: reads and searches Observation; other types and writes 403 Forbidden', async () => {
        const token = await as('openid user/Observation.read');
        assert.equal((await server.fhir('GET', `/Observation/${created.otherLab.id}`, { token })).status, 200);
        const all = (await server.fhir('GET', '/Observation', { token: a.adminToken })).body.total as number;
        assert.equal((await server.fhir('GET', '/Observation', { token })).body.total, all);
        for (const res of [
          await server.fhir('GET', `/Patient/${other}`, { token }),
          await server.fhir('GET', '/Encounter', { token }),
          await server.fhir('POST', '/Observation', { token, body: { resourceType: 'Observation', status: 'final', code: { text: 'x' } } }),
          await server.fhir('DELETE', `/Observation/${created.otherLab.id}`, { token }),
        ]) {
          assert.equal(res.status, 403, res.text);
          assert.equal(ooText(res.body), 'Forbidden');
        }
      });

      test('v1 .write and .*, v2 letters: exactly the interactions named', async () => {
        const write = await as('user/Observation.write');
        assert.equal((await server.fhir('POST', '/Observation', { token: write, body: { resourceType: 'Observation', status: 'final', code: { text: 'w' } } })).status, 201);
        assert.equal((await server.fhir('GET', '/Observation', { token: write })).status, 403);
        const star = await as('user/Observation.*');
        assert.equal((await server.fhir('GET', '/Observation', { token: star })).status, 200);
        const cr = await as('user/Observation.cr');
        const made = await server.fhir('POST', '/Observation', { token: cr, body: { resourceType: 'Observation', status: 'final', code: { text: 'cr' } } });
        assert.equal(made.status, 201, made.text);
        assert.equal((await server.fhir('GET', `/Observation/${made.body.id}`, { token: cr })).status, 200);
        assert.equal((await server.fhir('GET', '/Observation', { token: cr })).status, 403); // no s
        assert.equal((await server.fhir('PUT', `/Observation/${made.body.id}`, { token: cr, body: { ...made.body, status: 'amended' } })).status, 403); // no u
        assert.equal((await server.fhir('DELETE', `/Observation/${made.body.id}`, { token: cr })).status, 403); // no d
        const d = await as('user/Observation.d');
        assert.equal((await server.fhir('DELETE', `/Observation/${made.body.id}`, { token: d })).status, 200);
        const all = await as('user/*.cruds');
        assert.equal((await server.fhir('GET', `/Patient/${other}`, { token: all })).status, 200);
      });

      test('v2 query: patient-less user/Observation.rs?category=laboratory sees lab rows only (404 for others, filtered in SQL)', async () => {
        const token = await as('user/Observation.rs?category=laboratory');
        assert.equal((await server.fhir('GET', `/Observation/${created.otherLab.id}`, { token })).status, 200);
        const vital = await server.fhir('GET', `/Observation/${created.otherVital.id}`, { token });
        assert.equal(vital.status, 404);
        assert.equal(ooText(vital.body), 'Not found');
        const page = await server.fhir('GET', '/Observation?_count=1', { token });
        assert.equal(page.body.total, 2);
      });

      test('patient/ scopes confine to the patient context; a Practitioner without one gets nothing', async () => {
        // A Patient-profile user's own Patient is its launch context (docs/auth.md#standalone-launch).
        const pt = await tokenWithScope(server, patientUser.email, patientUser.password, a.projectId, 'launch/patient patient/Observation.rs');
        const seen = await server.fhir('GET', '/Observation?_count=1000', { token: pt });
        assert.equal(seen.status, 200, seen.text);
        for (const o of (seen.body as Bundle).entry ?? []) assert.equal((o.resource as { subject?: { reference?: string } }).subject?.reference, `Patient/${patientUser.own}`);
        assert.ok(ids(seen.body).includes(`Observation/${created.ownLab.id}`));
        assert.equal((await server.fhir('GET', `/Observation/${created.otherLab.id}`, { token: pt })).status, 404);
        assert.equal((await server.fhir('GET', `/Patient/${patientUser.own}`, { token: pt })).status, 403);
        // A Practitioner with no patient context is not granted a patient/ scope at all.
        const pkce = pkcePair();
        const login = await server.request('POST', '/auth/login', {
          body: { email: member.email, password: member.password, projectId: a.projectId, scope: 'patient/Observation.rs', codeChallenge: pkce.challenge, codeChallengeMethod: 'S256' },
          contentType: 'application/json',
          token: null,
        });
        const refused = await tokenRequest(server, { grant_type: 'authorization_code', code: login.body.code, code_verifier: pkce.verifier });
        assert.equal(refused.status, 400, refused.text);
        assert.equal(refused.body.error, 'invalid_scope');
      });

      test('asking more than the membership has grants nothing more: a plain member with user/*.* still cannot write accounts or see others\' memberships', async () => {
        const token = await as('user/*.*');
        const project = await server.fhir('POST', '/Project', { token, body: { resourceType: 'Project', name: 'nope' } });
        assert.equal(project.status, 403);
        const memberships = await server.fhir('GET', '/ProjectMembership', { token });
        assert.equal(memberships.status, 200);
        assert.equal(memberships.body.total, 1);
      });

      test('a token without resource scopes (openid only) keeps the membership\'s rights', async () => {
        const token = await as('openid offline_access');
        const all = (await server.fhir('GET', '/Encounter', { token: a.adminToken })).body.total as number;
        assert.equal((await server.fhir('GET', '/Encounter', { token })).body.total, all);
      });

      test('an admin whose token is scoped administers nothing: invite 403', async () => {
        const token = await tokenWithScope(server, a.adminEmail, a.adminPassword, a.projectId, 'user/*.read');
        const res = await server.request('POST', `/admin/projects/${a.projectId}/invite`, {
          body: { resourceType: 'Practitioner', firstName: 'X', lastName: 'Y', email: `x-${randomBytes(4).toString('hex')}@example.org` },
          contentType: 'application/json',
          token,
        });
        assert.equal(res.status, 403, res.text);
      });
    });

    describe('access policies', () => {
      let labPolicy: string;
      before(async () => {
        labPolicy = (await post('/AccessPolicy', {
          resourceType: 'AccessPolicy', name: 'lab reader',
          resource: [{ resourceType: 'Observation', readonly: true, criteria: 'Observation?category=laboratory' }, { resourceType: 'Patient' }],
        })).id as string;
      });

      test('only admins write access policies: a plain member 403 Forbidden', async () => {
        const m = await createMember(server, a.projectId);
        const res = await server.fhir('POST', '/AccessPolicy', { token: m.token, body: { resourceType: 'AccessPolicy', resource: [{ resourceType: '*' }] } });
        assert.equal(res.status, 403);
        assert.equal(ooText(res.body), 'Forbidden');
      });

      test('invite with membership.accessPolicy: readonly, criteria and excluded types apply', async () => {
        const inv = await invite(server, a, 'Practitioner', { accessPolicy: { reference: `AccessPolicy/${labPolicy}` } });
        assert.equal(inv.res.status, 200, inv.res.text);
        assert.equal(inv.res.body.accessPolicy.reference, `AccessPolicy/${labPolicy}`);
        const token = await tokenWithScope(server, inv.email, inv.password, a.projectId, 'openid');
        assert.equal((await server.fhir('GET', `/Observation/${created.otherLab.id}`, { token })).status, 200);
        assert.equal((await server.fhir('GET', `/Observation/${created.otherVital.id}`, { token })).status, 404);
        assert.equal((await server.fhir('GET', '/Observation', { token })).body.total, 2);
        const write = await server.fhir('POST', '/Observation', { token, body: { ...created.otherLab, id: undefined, meta: undefined } });
        assert.equal(write.status, 403);
        assert.equal(ooText(write.body), 'Forbidden');
        const enc = await server.fhir('GET', '/Encounter', { token });
        assert.equal(enc.status, 403);
        assert.equal(ooText(enc.body), 'Forbidden');
        assert.equal((await server.fhir('POST', '/Patient', { token, body: { resourceType: 'Patient' } })).status, 201);
      });

      test('invite naming an access policy that is not the project\'s → 400', async () => {
        const inv = await invite(server, a, 'Practitioner', { accessPolicy: { reference: 'AccessPolicy/nope' } });
        assert.equal(inv.res.status, 400, inv.res.text);
        assert.equal(ooText(inv.res.body), 'Access policy does not belong to project');
        assert.deepEqual(inv.res.body.issue[0].expression, ['membership.accessPolicy']);
      });

      test('a policy grants a Patient member more with %patient; a changed policy applies on the next request', async () => {
        const policy = await post('/AccessPolicy', {
          resourceType: 'AccessPolicy',
          resource: [{ resourceType: 'Observation', readonly: true, criteria: 'Observation?subject=%patient' }, { resourceType: 'Practitioner', readonly: true }],
        });
        const inv = await invite(server, a, 'Patient', { accessPolicy: { reference: `AccessPolicy/${policy.id}` } });
        assert.equal(inv.res.status, 200, inv.res.text);
        const own = inv.res.body.profile.reference as string;
        const mine = await post('/Observation', { resourceType: 'Observation', status: 'final', code: { text: 'm' }, subject: { reference: own } });
        const token = await tokenWithScope(server, inv.email, inv.password, a.projectId, 'openid');
        assert.deepEqual(ids((await server.fhir('GET', '/Observation', { token })).body), [`Observation/${mine.id}`]);
        assert.equal((await server.fhir('GET', '/Practitioner', { token })).body.total >= 1, true);
        const changed = await server.fhir('PUT', `/AccessPolicy/${policy.id}`, { token: a.adminToken, body: { ...policy, resource: [{ resourceType: 'Practitioner', readonly: true }] } });
        assert.equal(changed.status, 200, changed.text);
        assert.equal((await server.fhir('GET', '/Observation', { token })).status, 403);
      });
    });
  });
}
