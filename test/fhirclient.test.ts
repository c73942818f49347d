import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import smart from 'fhirclient';
import { drivers, startServer, type TestServer } from './harness.js';

/**
 * The SMART on FHIR JS client (`fhirclient`) against the real server: its `authorize({ iss })`
 * discovers the OAuth endpoints from the FHIR base (docs/auth.md), and its Client reads, creates,
 * searches a patient's compartment and pages through `Patient/$everything` (docs/rest.md).
 */

/** fhirclient keeps its state in a storage of the app's choosing: a Map here. */
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
    let app: Server;
    let appUrl: string;
    before(async () => {
      server = await startServer(driver);
      // A tiny SMART app: its /launch route asks fhirclient to authorize against the server.
      app = createServer((req: IncomingMessage, res: ServerResponse) => {
        smart(req, res, memoryStorage())
          .authorize({ iss: server.fhirUrl, clientId: 'my-app', redirectUri: '/callback', scope: 'openid patient/*.read' })
          .catch((err: Error) => {
            res.writeHead(500);
            res.end(err.message);
          });
      });
      await new Promise<void>((resolve) => app.listen(0, '127.0.0.1', resolve));
      appUrl = `http://127.0.0.1:${(app.address() as AddressInfo).port}`;
    });
    after(async () => {
      await new Promise((resolve) => app?.close(resolve));
      await server?.stop();
    });

    test('authorize({ iss }) discovers the authorize endpoint from the FHIR base and redirects there', async () => {
      const res = await fetch(`${appUrl}/launch`, { redirect: 'manual' });
      assert.equal(res.status, 302, await res.text());
      const location = new URL(res.headers.get('location')!);
      assert.equal(`${location.origin}${location.pathname}`, `${server.baseUrl}/oauth2/authorize`);
      assert.equal(location.searchParams.get('response_type'), 'code');
      assert.equal(location.searchParams.get('client_id'), 'my-app');
      assert.equal(location.searchParams.get('aud'), server.fhirUrl);
      assert.equal(location.searchParams.get('redirect_uri'), `${appUrl}/callback`);
      // The server advertises PKCE S256, so the client uses it.
      assert.equal(location.searchParams.get('code_challenge_method'), 'S256');
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
