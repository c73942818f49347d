import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Encounter } from '@medplum/fhirtypes';
import { decodeJwt } from 'jose';
import {
  clientCredentialsToken,
  createMember,
  createProject,
  drivers,
  ooText,
  pkcePair,
  startServer,
  tokenRequest,
  type ApiResponse,
  type TestProject,
  type TestServer,
} from './harness.js';
import { attachPolicy, createPatient, createPatientMember, createSmartClient, verifyIdToken } from './support/smart.js';

/**
 * SMART launch, OpenID Connect and granted scopes over HTTP (docs/auth.md#smart-launch,
 * #openid-connect, #granted-scopes). The browser flow through fhirclient is in fhirclient.test.ts.
 */
for (const driver of drivers) {
  describe(`SMART launch and OpenID Connect (${driver})`, () => {
    let server: TestServer;
    let clinic: TestProject;
    let app: { clientId: string; secret: string };
    let patients: string[];
    before(async () => {
      server = await startServer(driver);
      clinic = await createProject(server, 'Launch clinic');
      patients = [await createPatient(server, clinic.projectId, 'Zeta'), await createPatient(server, clinic.projectId, 'Alpha')];
      app = await createSmartClient(server, clinic.projectId);
    });
    after(() => server.stop());

    const json = (path: string, body: unknown, token: string | null = null) =>
      server.request('POST', path, { body, contentType: 'application/json', token });

    /** `/auth/login` as the sign-in page sends it, with PKCE; returns the answer and the verifier. */
    async function login(email: string, password: string, extra: Record<string, unknown>) {
      const pkce = pkcePair();
      const res = await json('/auth/login', { email, password, clientId: app.clientId, codeChallenge: pkce.challenge, codeChallengeMethod: 'S256', ...extra });
      return { res, verifier: pkce.verifier };
    }
    const exchange = (code: string, verifier: string) =>
      tokenRequest(server, { grant_type: 'authorization_code', code, code_verifier: verifier, client_id: app.clientId, client_secret: app.secret });

    function assertOAuthError(res: ApiResponse, error: string, description: string) {
      assert.equal(res.status, 400, res.text);
      assert.deepEqual(res.body, { error, error_description: description });
    }

    test('standalone launch/patient: a practitioner chooses among the project’s patients; the token carries patient, fhirUser and an id_token', async () => {
      const member = await createMember(server, clinic.projectId);
      const scope = 'openid fhirUser launch/patient patient/*.read';
      const { res, verifier } = await login(member.email, member.password, { scope, nonce: 'n-123' });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.code, undefined);
      // Sorted by name: Alpha before Zeta.
      assert.deepEqual(res.body.patients, [
        { reference: `Patient/${patients[1]}`, display: 'Pat Alpha' },
        { reference: `Patient/${patients[0]}`, display: 'Pat Zeta' },
      ]);
      const chosen = await json('/auth/patient', { login: res.body.login, patient: `Patient/${patients[0]}` });
      assert.equal(chosen.status, 200, chosen.text);
      const tokens = await exchange(chosen.body.code, verifier);
      assert.equal(tokens.status, 200, tokens.text);
      assert.equal(tokens.body.patient, patients[0]);
      assert.equal(tokens.body.scope, scope);
      const fhirUser = `${server.fhirUrl}/${member.profile}`;
      assert.equal(tokens.body.fhirUser, fhirUser);
      const claims = decodeJwt(tokens.body.access_token);
      assert.equal(claims.patient, patients[0]);
      assert.equal(claims.fhirUser, fhirUser);
      assert.equal(claims.scope, scope);
      const idToken = await verifyIdToken(server, tokens.body.id_token, app.clientId);
      assert.equal(idToken.sub, member.userId);
      assert.equal(idToken.nonce, 'n-123');
      assert.equal(idToken.fhirUser, fhirUser);
      // An ID token is not an access token.
      assert.equal((await server.fhir('GET', '/Patient', { token: tokens.body.id_token })).status, 401);
    });

    test('/auth/patient refuses a patient of another project, an unknown login and a missing field', async () => {
      const other = await createProject(server, 'Other clinic');
      const stranger = await createPatient(server, other.projectId, 'Stranger');
      const member = await createMember(server, clinic.projectId);
      const { res } = await login(member.email, member.password, { scope: 'openid launch/patient patient/*.read' });
      const refused = await json('/auth/patient', { login: res.body.login, patient: `Patient/${stranger}` });
      assert.equal(refused.status, 400);
      assert.equal(ooText(refused.body), 'Invalid patient');
      assert.deepEqual(refused.body.issue[0].expression, ['patient']);
      const unknown = await json('/auth/patient', { login: 'no-such-login', patient: `Patient/${patients[0]}` });
      assert.equal(unknown.status, 400);
      assert.equal(ooText(unknown.body), 'Invalid login');
      const missing = await json('/auth/patient', { login: res.body.login });
      assert.equal(missing.status, 400);
      assert.equal(ooText(missing.body), 'Missing login or patient');
    });

    test('the patient picker offers and accepts only the patients the member’s access policy and scopes let it read', async () => {
      const picker = await createProject(server, 'Picker clinic');
      const pickerApp = await createSmartClient(server, picker.projectId);
      const one = await createPatient(server, picker.projectId, 'Visible-One');
      const two = await createPatient(server, picker.projectId, 'Visible-Two');
      const hidden = await createPatient(server, picker.projectId, 'Hidden');
      const signIn = (member: { email: string; password: string }, scope: string) =>
        json('/auth/login', { email: member.email, password: member.password, clientId: pickerApp.clientId, scope });

      // A policy that lets the member read the Visible patients only.
      const limited = await createMember(server, picker.projectId);
      await attachPolicy(server, picker.projectId, limited.membershipId, { resource: [{ resourceType: 'Patient', criteria: 'Patient?family=Visible' }] });
      const res = await signIn(limited, 'openid launch/patient patient/*.read');
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.body.patients, [
        { reference: `Patient/${one}`, display: 'Pat Visible-One' },
        { reference: `Patient/${two}`, display: 'Pat Visible-Two' },
      ]);
      const refused = await json('/auth/patient', { login: res.body.login, patient: `Patient/${hidden}` });
      assert.equal(refused.status, 400, refused.text);
      assert.equal(ooText(refused.body), 'Invalid patient');
      const chosen = await json('/auth/patient', { login: res.body.login, patient: `Patient/${two}` });
      assert.equal(chosen.status, 200, chosen.text);

      // A policy without Patient: nothing to choose; the code comes without a patient.
      const noPatients = await createMember(server, picker.projectId);
      await attachPolicy(server, picker.projectId, noPatients.membershipId, { resource: [{ resourceType: 'Observation' }] });
      const none = await signIn(noPatients, 'openid launch/patient patient/*.read');
      assert.equal(none.status, 200, none.text);
      assert.equal(none.body.patients, undefined);
      assert.equal(typeof none.body.code, 'string');

      // The scopes asked for narrow the choice as they narrow the token: one patient → taken without asking.
      const plain = await createMember(server, picker.projectId);
      const scoped = await signIn(plain, 'openid launch/patient patient/Patient.rs?family=Visible-One');
      assert.equal(scoped.status, 200, scoped.text);
      assert.equal(scoped.body.patients, undefined);
      const scopedTokens = await tokenRequest(server, { grant_type: 'authorization_code', code: scoped.body.code, client_id: pickerApp.clientId, client_secret: pickerApp.secret });
      assert.equal(scopedTokens.status, 200, scopedTokens.text);
      assert.equal(scopedTokens.body.patient, one);
      const scopedLogin = await json('/auth/login', { email: plain.email, password: plain.password, clientId: pickerApp.clientId, scope: 'openid launch/patient patient/Patient.rs?family=Visible' });
      assert.deepEqual(scopedLogin.body.patients.map((p: { reference: string }) => p.reference), [`Patient/${one}`, `Patient/${two}`]);
      const outside = await json('/auth/patient', { login: scopedLogin.body.login, patient: `Patient/${hidden}` });
      assert.equal(outside.status, 400, outside.text);
      assert.equal(ooText(outside.body), 'Invalid patient');
    });

    test('a Patient-profile user gets its own patient without a choice', async () => {
      const person = await createPatientMember(server, clinic.projectId);
      const { res, verifier } = await login(person.email, person.password, { scope: 'openid launch/patient patient/*.read' });
      assert.equal(res.status, 200, res.text);
      assert.equal(typeof res.body.code, 'string');
      const tokens = await exchange(res.body.code, verifier);
      assert.equal(tokens.status, 200, tokens.text);
      assert.equal(tokens.body.patient, person.patientId);
      assert.equal(tokens.body.fhirUser, `${server.fhirUrl}/Patient/${person.patientId}`);
      assert.equal(decodeJwt(tokens.body.access_token).patient, person.patientId);
    });

    test('EHR launch: a launch id binds patient and encounter; the token response carries both', async () => {
      const encounter = await server.app.system.create<Encounter>({
        resourceType: 'Encounter',
        status: 'in-progress',
        class: { code: 'AMB' },
        subject: { reference: `Patient/${patients[0]}` },
        meta: { project: clinic.projectId },
      });
      const created = await json('/auth/launch', { patient: `Patient/${patients[0]}`, encounter: `Encounter/${encounter.id}` }, clinic.adminToken);
      assert.equal(created.status, 201, created.text);
      assert.equal(typeof created.body.launch, 'string');
      assert.deepEqual({ ...created.body, launch: 'x' }, { launch: 'x', patient: patients[0], encounter: encounter.id, expires_in: 300 });

      const page = await server.request(
        'GET',
        `/oauth2/authorize?response_type=code&client_id=${app.clientId}&redirect_uri=${encodeURIComponent('https://app.example/callback')}&launch=${created.body.launch}&scope=launch%20openid`,
        { token: null },
      );
      assert.equal(page.status, 200, page.text);

      const member = await createMember(server, clinic.projectId);
      const scope = 'launch openid fhirUser offline_access patient/*.read';
      const { res, verifier } = await login(member.email, member.password, { scope, launch: created.body.launch });
      assert.equal(res.status, 200, res.text);
      const tokens = await exchange(res.body.code, verifier);
      assert.equal(tokens.status, 200, tokens.text);
      assert.equal(tokens.body.scope, scope);
      assert.equal(tokens.body.patient, patients[0]);
      assert.equal(tokens.body.encounter, encounter.id);

      // A refresh keeps the launch context and the granted scope.
      const refreshed = await tokenRequest(server, { grant_type: 'refresh_token', refresh_token: tokens.body.refresh_token, client_id: app.clientId, client_secret: app.secret });
      assert.equal(refreshed.status, 200, refreshed.text);
      assert.equal(refreshed.body.scope, scope);
      assert.equal(refreshed.body.patient, patients[0]);
      assert.equal(refreshed.body.encounter, encounter.id);
      assert.equal(decodeJwt(refreshed.body.access_token).patient, patients[0]);
    });

    test('EHR launch errors: missing or foreign patient (400), no token (401), unknown launch id, another project’s launch', async () => {
      const missing = await json('/auth/launch', {}, clinic.adminToken);
      assert.equal(missing.status, 400);
      assert.equal(ooText(missing.body), 'Missing patient');
      const other = await createProject(server, 'Launch elsewhere');
      const foreign = await createPatient(server, other.projectId, 'Foreign');
      const refused = await json('/auth/launch', { patient: foreign }, clinic.adminToken);
      assert.equal(refused.status, 400);
      assert.equal(ooText(refused.body), `Unknown patient: ${foreign}`);
      assert.equal((await json('/auth/launch', { patient: patients[0] }, null)).status, 401);

      const page = await server.request(
        'GET',
        `/oauth2/authorize?response_type=code&client_id=${app.clientId}&redirect_uri=${encodeURIComponent('https://app.example/callback')}&launch=nope`,
        { token: null },
      );
      assert.equal(page.status, 400);
      assert.equal(ooText(page.body), 'Invalid or expired launch');
      const member = await createMember(server, clinic.projectId);
      const bad = await login(member.email, member.password, { scope: 'launch openid', launch: 'nope' });
      assert.equal(bad.res.status, 400);
      assert.equal(ooText(bad.res.body), 'Invalid or expired launch');

      // A launch is usable only in its own project.
      const elsewhere = await json('/auth/launch', { patient: foreign }, other.adminToken);
      assert.equal(elsewhere.status, 201, elsewhere.text);
      const notMember = await login(member.email, member.password, { scope: 'launch openid', launch: elsewhere.body.launch });
      assert.equal(notMember.res.status, 400);
      assert.equal(ooText(notMember.res.body), 'User is not a member of this project');
    });

    test('the authorize page refuses an aud that is not this FHIR server', async () => {
      const res = await server.request(
        'GET',
        `/oauth2/authorize?response_type=code&client_id=${app.clientId}&redirect_uri=${encodeURIComponent('https://app.example/callback')}&aud=${encodeURIComponent('https://other.example/fhir')}`,
        { token: null },
      );
      assert.equal(res.status, 400);
      assert.equal(ooText(res.body), `aud is not this server's FHIR base (${server.fhirUrl})`);
    });

    test('userinfo: sub, fhirUser, name and e-mail for a token granted openid', async () => {
      const member = await createMember(server, clinic.projectId, { firstName: 'Grace', lastName: 'Hopper' });
      const { res, verifier } = await login(member.email, member.password, { scope: 'openid fhirUser' });
      const tokens = await exchange(res.body.code, verifier);
      const info = await server.request('GET', '/oauth2/userinfo', { token: tokens.body.access_token });
      assert.equal(info.status, 200, info.text);
      assert.deepEqual(info.body, {
        sub: member.userId,
        fhirUser: `${server.fhirUrl}/${member.profile}`,
        name: 'Grace Hopper',
        given_name: 'Grace',
        family_name: 'Hopper',
        email: member.email,
      });
    });

    test('userinfo: 401 without a token, 403 insufficient_scope without openid', async () => {
      const none = await server.request('GET', '/oauth2/userinfo', { token: null });
      assert.equal(none.status, 401);
      const machine = await clientCredentialsToken(server, app.clientId, app.secret);
      const refused = await server.request('GET', '/oauth2/userinfo', { token: machine.access_token });
      assert.equal(refused.status, 403);
      assert.deepEqual(refused.body, { error: 'insufficient_scope', error_description: 'The access token was not granted openid' });
      assert.match(refused.headers.get('www-authenticate') ?? '', /insufficient_scope/);
    });

    test('granted scopes: unknown syntax and what the membership cannot have are left out', async () => {
      const member = await createMember(server, clinic.projectId);
      const { res, verifier } = await login(member.email, member.password, { scope: 'openid bogus/scope system/*.read user/Observation.rs patient/*.read' });
      const tokens = await exchange(res.body.code, verifier);
      assert.equal(tokens.status, 200, tokens.text);
      assert.equal(tokens.body.scope, 'openid user/Observation.rs');
      assert.equal(tokens.body.patient, undefined);
      assert.equal(decodeJwt(tokens.body.access_token).scope, 'openid user/Observation.rs');
    });

    test('granted scopes: asking for more than the client is registered for is left out', async () => {
      const narrow = await createSmartClient(server, clinic.projectId, { scope: 'openid offline_access user/Patient.rs' });
      const member = await createMember(server, clinic.projectId);
      const pkce = pkcePair();
      const res = await json('/auth/login', {
        email: member.email,
        password: member.password,
        clientId: narrow.clientId,
        scope: 'openid fhirUser offline_access user/*.cruds',
        codeChallenge: pkce.challenge,
        codeChallengeMethod: 'S256',
      });
      const credentials = { client_id: narrow.clientId, client_secret: narrow.secret };
      const tokens = await tokenRequest(server, { grant_type: 'authorization_code', code: res.body.code, code_verifier: pkce.verifier, ...credentials });
      assert.equal(tokens.status, 200, tokens.text);
      assert.equal(tokens.body.scope, 'openid offline_access user/Patient.rs');
      // A refresh may narrow the grant, never widen it.
      const narrowed = await tokenRequest(server, { grant_type: 'refresh_token', refresh_token: tokens.body.refresh_token, scope: 'user/Patient.r user/Observation.rs', ...credentials });
      assert.equal(narrowed.status, 200, narrowed.text);
      assert.equal(narrowed.body.scope, 'user/Patient.r');
    });

    test('granted scopes: nothing grantable → 400 invalid_scope', async () => {
      const member = await createMember(server, clinic.projectId);
      const unknown = await login(member.email, member.password, { scope: 'bogus' });
      assertOAuthError(await exchange(unknown.res.body.code, unknown.verifier), 'invalid_scope', 'None of the requested scopes can be granted');
      // patient/ scopes without a patient context: no resource scope would remain.
      const noPatient = await login(member.email, member.password, { scope: 'openid patient/*.read' });
      assertOAuthError(await exchange(noPatient.res.body.code, noPatient.verifier), 'invalid_scope', 'None of the requested resource scopes can be granted');
    });

    test('granted scopes for client credentials: system/ scopes within the registration; others left out', async () => {
      const machine = await createSmartClient(server, clinic.projectId, { scope: 'system/Patient.rs system/Observation.rs' });
      const granted = await tokenRequest(server, {
        grant_type: 'client_credentials',
        client_id: machine.clientId,
        client_secret: machine.secret,
        scope: 'system/*.read user/*.read openid patient/*.read',
      });
      assert.equal(granted.status, 200, granted.text);
      assert.equal(granted.body.scope, 'system/Patient.rs system/Observation.rs');
      assert.equal(granted.body.id_token, undefined);
      const defaulted = await tokenRequest(server, { grant_type: 'client_credentials', client_id: machine.clientId, client_secret: machine.secret });
      assert.equal(defaulted.body.scope, 'system/Patient.rs system/Observation.rs');
      const refused = await tokenRequest(server, { grant_type: 'client_credentials', client_id: machine.clientId, client_secret: machine.secret, scope: 'system/Encounter.rs' });
      assertOAuthError(refused, 'invalid_scope', 'None of the requested scopes can be granted');
      // Wrong credentials are still invalid_client, whatever the scope.
      const wrong = await tokenRequest(server, { grant_type: 'client_credentials', client_id: machine.clientId, client_secret: 'nope', scope: 'bogus' });
      assert.equal(wrong.status, 401, wrong.text);
      assert.deepEqual(wrong.body, { error: 'invalid_client', error_description: 'Invalid client credentials' });
    });

    test('discovery lists the launch and OpenID capabilities and the userinfo endpoint', async () => {
      const smart = await server.request('GET', '/.well-known/smart-configuration', { token: null });
      for (const capability of ['launch-standalone', 'launch-ehr', 'context-standalone-patient', 'context-ehr-patient', 'sso-openid-connect', 'permission-v2']) {
        assert.ok(smart.body.capabilities.includes(capability), capability);
      }
      assert.equal(smart.body.userinfo_endpoint, `${server.baseUrl}/oauth2/userinfo`);
      const oidc = await server.request('GET', '/.well-known/openid-configuration', { token: null });
      assert.equal(oidc.body.userinfo_endpoint, `${server.baseUrl}/oauth2/userinfo`);
      assert.deepEqual(oidc.body.id_token_signing_alg_values_supported, ['ES256']);
      assert.ok(oidc.body.claims_supported.includes('fhirUser'));
    });
  });
}
