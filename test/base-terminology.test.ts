import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createProject, drivers, startServer } from './harness.js';

// The base R4 terminologies are loaded into the shared content on first start
// (LATTICE_BASE_TERMINOLOGY=background, the default for persistent storage) and are then
// readable and searchable by every project; a restart does not load them again.
for (const driver of drivers) {
  describe(`base terminologies loaded on first start (${driver})`, () => {
    test('every base CodeSystem/ValueSet becomes searchable by a project member, once', async () => {
      const server = await startServer(driver, { env: { LATTICE_BASE_TERMINOLOGY: 'background' } });
      try {
        const db = server.app.db;
        const deadline = Date.now() + 300_000;
        while ((await db.query('SELECT 1 FROM tx_base_load')).rows.length === 0) {
          assert.ok(Date.now() < deadline, 'base terminologies were not loaded within 5 minutes');
          await new Promise((r) => setTimeout(r, 500));
        }
        const member = await createProject(server, 'Terminology readers');
        const found = await server.fhir('GET', '/ValueSet?url=http://hl7.org/fhir/ValueSet/administrative-gender', { token: member.adminToken });
        assert.equal(found.status, 200);
        assert.equal(found.body.total, 1);
        const codeSystems = await server.fhir('GET', '/CodeSystem?_summary=count', { token: member.adminToken });
        assert.ok(codeSystems.body.total > 900, `only ${codeSystems.body.total} CodeSystems`);
        const lookup = await server.fhir('GET', '/CodeSystem/$lookup?system=http://terminology.hl7.org/CodeSystem/v3-ActCode&code=AMB', {
          token: member.adminToken,
        });
        assert.equal(lookup.status, 200, lookup.text);
        const shared = await server.fhir('PUT', `/ValueSet/${found.body.entry[0].resource.id}`, {
          body: found.body.entry[0].resource,
          token: member.adminToken,
        });
        assert.equal(shared.status, 403, 'shared content is not writable by a project admin');
      } finally {
        await server.stop();
      }
    });
  });
}
