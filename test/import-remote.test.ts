import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { generateSnomedLike, SNOMED_LIKE_URL, writeNdjson, type SnomedLike } from '../bench/snomed-like.js';
import { createClient, createMember, createProject, createTestDatabase, drivers, startServer, type TestProject, type TestServer } from './harness.js';
import { importAsync, type ImportRun } from './support/cli.js';

/**
 * `lattice import --url` (docs/terminology.md#import-into-a-running-server): the CLI streams a
 * file to a running server, which imports it like the direct mode. Run as the least privileged
 * caller that may import — a project admin — into its own project; plain members and client
 * applications are refused; and with PGlite the direct mode is refused while the server owns
 * the data folder.
 */

const cli = (args: string[], env: NodeJS.ProcessEnv = process.env): Promise<ImportRun> => importAsync(args, env);

for (const driver of drivers) {
  describe(`lattice import --url (${driver})`, () => {
    let server: TestServer;
    let project: TestProject;
    let dir: string;
    let model: SnomedLike;
    let file: string;

    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'lattice-remote-'));
      const storage = driver === 'pg' ? { databaseUrl: await createTestDatabase() } : { dataDir: join(dir, 'data') };
      // The first request builds the in-memory index; on a busy test machine that may exceed the
      // default request time limit (docs/errors.md#database-limits).
      server = await startServer(driver, { ...storage, env: { LATTICE_DB_STATEMENT_TIMEOUT: '0' } });
      project = await createProject(server, 'Remote import');
      model = generateSnomedLike(22_000); // above the staged-import threshold
      file = join(dir, 'snomed-like.ndjson');
      await writeNdjson(model, file);
    });
    after(async () => {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    });

    test('a project admin imports a large code system into its project, with progress; its members then use it', async () => {
      const run = await cli([file, '--url', server.baseUrl, '--token', project.adminToken]);
      assert.equal(run.code, 0, run.stderr);
      assert.match(run.stdout, /imported 3 resources \(1 CodeSystems, 2 ValueSets, 22000 concepts; 0 skipped\)/);
      assert.match(run.stderr, /100% [\d,]+\/[\d,]+ bytes sent/);

      const member = await createMember(server, project.projectId);
      const code = model.codes[model.size - 1];
      const lookup = await server.fhir('GET', `/CodeSystem/$lookup?system=${SNOMED_LIKE_URL}&code=${code}`, { token: member.token });
      assert.equal(lookup.status, 200, lookup.text);
      assert.equal(lookup.body.parameter.find((p: { name: string }) => p.name === 'display').valueString, model.displays[model.size - 1]);
      const vs = await server.fhir('POST', '/ValueSet/$validate-code', {
        token: member.token,
        body: {
          resourceType: 'Parameters',
          parameter: [
            { name: 'url', valueUri: `${SNOMED_LIKE_URL}/ValueSet/isa` },
            { name: 'coding', valueCoding: { system: SNOMED_LIKE_URL, code: model.codes[model.focus] } },
          ],
        },
      });
      assert.equal(vs.body.parameter[0].valueBoolean, true, vs.text);
      // Stored in the importer's project: another project does not see it.
      const other = await createProject(server, 'Other project');
      const hidden = await server.fhir('GET', `/CodeSystem/$lookup?system=${SNOMED_LIKE_URL}&code=${code}`, { token: other.adminToken });
      assert.equal(hidden.status, 404, hidden.text);
    });

    test('a plain member is refused (403), and so is a client application (client credentials)', async () => {
      const small = join(dir, 'small.json');
      writeFileSync(small, JSON.stringify({ resourceType: 'CodeSystem', url: 'http://example.org/remote-small', status: 'active', content: 'complete', concept: [{ code: 'a' }] }));
      const member = await createMember(server, project.projectId);
      const byMember = await cli([small, '--url', server.baseUrl, '--token', member.token]);
      assert.equal(byMember.code, 1);
      assert.match(byMember.stderr, /refused the import \(403\): Forbidden/);
      const client = await createClient(server, project.projectId);
      const byClient = await cli([small, '--url', server.baseUrl, '--client-id', client.clientId], { ...process.env, LATTICE_CLIENT_SECRET: client.secret });
      assert.equal(byClient.code, 1);
      assert.match(byClient.stderr, /refused the import \(403\): Forbidden/);
      const bad = await cli([small, '--url', server.baseUrl, '--client-id', client.clientId, '--client-secret', 'wrong']);
      assert.equal(bad.code, 1);
      assert.match(bad.stderr, /refused the client credentials \(40\d\)/);
    });

    if (driver === 'pglite') {
      test('the direct mode is refused while the server owns the data folder, naming its PID', async () => {
        const run = await cli([file], { ...process.env, LOG_LEVEL: 'warn', LATTICE_DATA_DIR: server.config.dataDir });
        assert.equal(run.code, 1);
        assert.match(run.stderr, new RegExp(`in use by process ${process.pid}`));
      });
    }
  });
}
