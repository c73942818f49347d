import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import smart from 'fhirclient';
import { chromium, type Browser, type Page } from 'playwright-core';
import { createMember, drivers, startServer, type TestServer } from './harness.js';
import { chromiumLaunch } from './support/chromium.js';
import { attachPolicy, createPatient, createPatientMember, createSmartClient, verifyIdToken } from './support/smart.js';

/**
 * The SMART on FHIR JS client (`fhirclient`) against the real server: its `authorize({ iss })`
 * discovers the OAuth endpoints from the FHIR base (docs/auth.md), a standalone patient launch
 * and an EHR launch run end to end through the real sign-in page in headless Chromium
 * (docs/auth.md#smart-launch), and its Client reads, creates, searches a patient's compartment
 * and pages through `Patient/$everything` (docs/rest.md).
 */

/** fhirclient's Client, as `ready()` resolves it. */
type Client = Awaited<ReturnType<ReturnType<typeof smart>['ready']>>;

/** fhirclient keeps its state in a storage of the app's choosing: a Map here (one per launch). */
function memoryStorage() {
  const data = new Map<string, unknown>();
  return {
    get: async (key: string) => data.get(key),
    set: async (key: string, value: unknown) => {
      data.set(key, value);
      return value;
    },
    unset: async (key: string) => data.delete(key),
  };
}

for (const driver of drivers) {
  describe(`fhirclient (${driver})`, () => {
    let server: TestServer;
    let browser: Browser;
    let app: Server;
    let appUrl: string;
    let clientId: string;
    let clientSecret: string;
    /** The current launch: the app's storage, the nonce it sends, and where its callback reports. */
    let launch: { storage: ReturnType<typeof memoryStorage>; nonce: string; done: (client: Client | Error) => void };
    before(async () => {
      browser = await chromium.launch(await chromiumLaunch());
      server = await startServer(driver);
      // A tiny SMART app: /launch (standalone) and /ehr-launch?iss=…&launch=… ask fhirclient for
      // the authorize URL, add a nonce, and redirect there; /callback completes the code exchange.
      app = createServer((req: IncomingMessage, res: ServerResponse) => {
        const path = new URL(req.url ?? '/', 'http://app').pathname;
        const fail = (err: Error) => {
          launch?.done(err);
          res.writeHead(500);
          res.end(err.message);
        };
        if (path === '/callback') {
          smart(req, res, launch.storage)
            .ready()
            .then((client) => {
              launch.done(client);
              res.writeHead(200, { 'content-type': 'text/plain' });
              res.end('launched');
            }, fail);
          return;
        }
        const scope = path === '/ehr-launch' ? 'launch openid fhirUser patient/*.read' : 'openid fhirUser launch/patient patient/*.read';
        smart(req, res, launch?.storage ?? memoryStorage())
          // A confidential app (its server keeps the secret): fhirclient authenticates with HTTP Basic.
          .authorize({ iss: server.fhirUrl, clientId, clientSecret, redirectUri: '/callback', scope, noRedirect: true })
          .then((url) => {
            res.writeHead(302, { location: launch ? `${String(url)}&nonce=${encodeURIComponent(launch.nonce)}` : String(url) });
            res.end();
          }, fail);
      });
      await new Promise<void>((resolve) => app.listen(0, '127.0.0.1', resolve));
      appUrl = `http://127.0.0.1:${(app.address() as AddressInfo).port}`;
      ({ clientId, secret: clientSecret } = await createSmartClient(server, server.projectId!, { redirectUri: `${appUrl}/callback` }));
    });
    after(async () => {
      await new Promise((resolve) => app?.close(resolve));
      await browser?.close();
      await server?.stop();
    });

    /** Starts a launch in the app; resolves with fhirclient's Client once the callback completes. */
    function startLaunch(nonce: string): Promise<Client> {
      return new Promise<Client>((resolve, reject) => {
        launch = { storage: memoryStorage(), nonce, done: (result) => (result instanceof Error ? reject(result) : resolve(result)) };
      });
    }

    /** Signs in on the server's page in the browser. */
    async function signIn(page: Page, email: string, password: string) {
      await page.waitForSelector('text=Sign in');
      await page.fill('input[name=email]', email);
      await page.fill('input[name=password]', password);
      await page.click('button[type=submit]');
    }

    test('authorize({ iss }) discovers the authorize endpoint from the FHIR base and redirects there', async () => {
      const res = await fetch(`${appUrl}/launch`, { redirect: 'manual' });
      assert.equal(res.status, 302, await res.text());
      const location = new URL(res.headers.get('location')!);
      assert.equal(`${location.origin}${location.pathname}`, `${server.baseUrl}/oauth2/authorize`);
      assert.equal(location.searchParams.get('response_type'), 'code');
      assert.equal(location.searchParams.get('client_id'), clientId);
      assert.equal(location.searchParams.get('aud'), server.fhirUrl);
      assert.equal(location.searchParams.get('redirect_uri'), `${appUrl}/callback`);
      // The server advertises PKCE S256, so the client uses it.
      assert.equal(location.searchParams.get('code_challenge_method'), 'S256');
    });

    test('standalone patient launch in a browser: choose a patient, get patient, fhirUser and a verified id_token', async () => {
      const chosen = await createPatient(server, server.projectId!, 'Chosen');
      await createPatient(server, server.projectId!, 'Other');
      const member = server.member!;
      const done = startLaunch('nonce-standalone');
      const page = await browser.newPage();
      const errors: string[] = [];
      page.on('pageerror', (err) => errors.push(err.message));
      await page.goto(`${appUrl}/launch`);
      await signIn(page, member.email, member.password);
      await page.waitForSelector('text=Choose a patient:');
      await page.click('button:has-text("Pat Chosen")');
      const client = await done;
      await page.waitForSelector('text=launched');
      assert.deepEqual(errors, [], 'no script errors, no CSP violations');
      await page.close();

      const tokens = client.state.tokenResponse!;
      assert.equal(tokens.patient, chosen);
      assert.equal(client.getPatientId(), chosen);
      assert.equal(tokens.scope, 'openid fhirUser launch/patient patient/*.read');
      assert.equal(tokens.fhirUser, `${server.fhirUrl}/${member.profile}`);
      assert.equal(client.getFhirUser(), member.profile);
      const idToken = await verifyIdToken(server, tokens.id_token!, clientId);
      assert.equal(idToken.nonce, 'nonce-standalone');
      assert.equal(idToken.fhirUser, `${server.fhirUrl}/${member.profile}`);
      assert.equal(idToken.sub, member.userId);
      // The app reads its patient with the token it was given.
      const patient = await client.patient.read();
      assert.equal(patient.id, chosen);
      assert.equal(patient.name[0].family, 'Chosen');
      // …and its user: `fhirUser` granted lets it read the user's own resource under patient/ scopes.
      const user = await client.user.read();
      assert.equal(`${user.resourceType}/${user.id}`, member.profile);
    });

    test('the sign-in page offers only the patients the member’s access policy lets it read', async () => {
      const member = await createMember(server, server.projectId!);
      await attachPolicy(server, server.projectId!, member.membershipId, { resource: [{ resourceType: 'Patient', criteria: 'Patient?family=Policy' }] });
      const first = await createPatient(server, server.projectId!, 'Policy-First');
      await createPatient(server, server.projectId!, 'Policy-Second');
      await createPatient(server, server.projectId!, 'Unseen');
      const done = startLaunch('nonce-policy');
      const page = await browser.newPage();
      await page.goto(`${appUrl}/launch`);
      await signIn(page, member.email, member.password);
      await page.waitForSelector('text=Choose a patient:');
      const offered = await page.locator('#choices button').allTextContents();
      assert.deepEqual(offered, ['Pat Policy-First', 'Pat Policy-Second']);
      await page.click('button:has-text("Pat Policy-First")');
      const client = await done;
      await page.close();
      assert.equal(client.getPatientId(), first);
    });

    test('a Patient-profile user is launched with its own patient, without a choice', async () => {
      const person = await createPatientMember(server, server.projectId!);
      const done = startLaunch('nonce-self');
      const page = await browser.newPage();
      await page.goto(`${appUrl}/launch`);
      await signIn(page, person.email, person.password);
      const client = await done;
      await page.close();
      assert.equal(client.getPatientId(), person.patientId);
      assert.equal(client.getFhirUser(), `Patient/${person.patientId}`);
      const idToken = await verifyIdToken(server, client.state.tokenResponse!.id_token!, clientId);
      assert.equal(idToken.nonce, 'nonce-self');
    });

    test('EHR launch in a browser: the launch id an EHR created binds the patient', async () => {
      const patientId = await createPatient(server, server.projectId!, 'Ehr');
      const created = await server.request('POST', '/auth/launch', { body: { patient: `Patient/${patientId}` }, contentType: 'application/json' });
      assert.equal(created.status, 201, created.text);
      const done = startLaunch('nonce-ehr');
      const page = await browser.newPage();
      // What an EHR opens: the app's launch URL with iss and launch.
      await page.goto(`${appUrl}/ehr-launch?iss=${encodeURIComponent(server.fhirUrl)}&launch=${encodeURIComponent(created.body.launch)}`);
      await signIn(page, server.member!.email, server.member!.password);
      const client = await done;
      await page.close();
      assert.equal(client.getPatientId(), patientId);
      assert.equal(client.state.tokenResponse!.scope, 'launch openid fhirUser patient/*.read');
      const idToken = await verifyIdToken(server, client.state.tokenResponse!.id_token!, clientId);
      assert.equal(idToken.nonce, 'nonce-ehr');
    });

    test('the Client creates, reads, searches the compartment and pages through $everything', async () => {
      const client = smart({} as IncomingMessage, {} as ServerResponse, memoryStorage()).client({
        serverUrl: server.fhirUrl,
        tokenResponse: { access_token: server.memberToken! },
      });
      const patient = await client.create({ resourceType: 'Patient', gender: 'female', name: [{ family: 'Smart' }] });
      assert.equal(patient.resourceType, 'Patient');
      for (let i = 0; i < 3; i++) {
        await client.create({ resourceType: 'Observation', status: 'final', code: { text: `obs ${i}` }, subject: { reference: `Patient/${patient.id}` } });
      }
      const read = await client.request(`Patient/${patient.id}`);
      assert.equal(read.name[0].family, 'Smart');
      const compartment = await client.request(`Patient/${patient.id}/Observation`);
      assert.equal(compartment.total, 3);
      // pageLimit 0: fhirclient follows every `next` link and flattens the pages.
      const everything = await client.request({ url: `Patient/${patient.id}/$everything?_count=2` }, { pageLimit: 0, flat: true });
      assert.equal(everything.length, 4);
      assert.deepEqual(everything.map((r: { resourceType: string }) => r.resourceType).sort(), ['Observation', 'Observation', 'Observation', 'Patient']);
      const refused = await client.create({ resourceType: 'Patient', gender: 'bogus' }).catch((err: { status?: number }) => err);
      assert.equal(refused.status, 400);
    });
  });
}
