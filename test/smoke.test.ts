import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { drivers, startServer, type TestServer } from './harness.js';

for (const driver of drivers) {
  describe(`smoke (${driver})`, () => {
    let server: TestServer;
    before(async () => {
      server = await startServer(driver);
    });
    after(() => server.stop());

    test('create then read', async () => {
      const created = await server.fhir('POST', '/Patient', { body: { resourceType: 'Patient', name: [{ family: 'Smith' }] } });
      assert.equal(created.status, 201, created.text);
      const read = await server.fhir('GET', `/Patient/${created.body.id}`);
      assert.equal(read.status, 200);
      assert.equal(read.body.name[0].family, 'Smith');
    });
  });
}
