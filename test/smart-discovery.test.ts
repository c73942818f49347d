import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Client } from 'fhir-kit-client';
import { drivers, startServer, type TestServer } from './harness.js';

/**
 * SMART discovery from the FHIR base (docs/auth.md#discovery): clients that are given only the
 * FHIR base find the authorize and token endpoints — at `[base]/.well-known/smart-configuration`
 * (public) and in the CapabilityStatement's `rest.security` (`oauth-uris`).
 */
const OAUTH_URIS = 'http://fhir-registry.smarthealthit.org/StructureDefinition/oauth-uris';

for (const driver of drivers) {
  describe(`SMART discovery (${driver})`, () => {
    let server: TestServer;
    before(async () => {
      server = await startServer(driver);
    });
    after(() => server.stop());

    test('[base]/.well-known/smart-configuration answers without a token', async () => {
      const res = await server.fhir('GET', '/.well-known/smart-configuration', { token: null });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.authorization_endpoint, `${server.baseUrl}/oauth2/authorize`);
      assert.equal(res.body.token_endpoint, `${server.baseUrl}/oauth2/token`);
      assert.deepEqual(res.body.code_challenge_methods_supported, ['S256']);
    });

    test('the CapabilityStatement names the OAuth endpoints (oauth-uris)', async () => {
      const res = await server.fhir('GET', '/metadata', { token: null });
      const security = res.body.rest[0].security;
      assert.equal(security.service[0].coding[0].code, 'SMART-on-FHIR');
      const uris = (security.extension as Array<{ url: string; extension: Array<{ url: string; valueUri: string }> }>).find((e) => e.url === OAUTH_URIS);
      assert.deepEqual(
        uris?.extension.map((e) => [e.url, e.valueUri]),
        [
          ['authorize', `${server.baseUrl}/oauth2/authorize`],
          ['token', `${server.baseUrl}/oauth2/token`],
        ],
      );
    });

    test('fhir-kit-client smartAuthMetadata() finds the endpoints from the FHIR base', async () => {
      const client = new Client({ baseUrl: server.fhirUrl });
      const meta = await client.smartAuthMetadata();
      assert.equal(meta.authorizeUrl?.toString(), `${server.baseUrl}/oauth2/authorize`);
      assert.equal(meta.tokenUrl?.toString(), `${server.baseUrl}/oauth2/token`);
    });
  });
}
