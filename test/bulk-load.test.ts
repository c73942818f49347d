import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { projectRoot } from '../src/paths.js';
import { createMember, createProject, drivers, ooText, startServer, sharedStorage, type TestServer } from './harness.js';
import { importAsync, latticeArgs } from './support/cli.js';

/**
 * `lattice import` of clinical resources (docs/rest.md#bulk-load): NDJSON and Bundles are
 * stored with their search index, references are checked, a broken line is named, and a
 * killed import leaves each batch whole or absent.
 */

const patient = (i: number) => ({ resourceType: 'Patient', id: `bulk-p${i}`, name: [{ family: `Bulkfamily${i}`, given: ['Ann'] }], birthDate: '1980-02-03' });
const encounter = (i: number, p: number) => ({
  resourceType: 'Encounter',
  id: `bulk-e${i}`,
  status: 'finished',
  class: { system: 'http://terminology.hl7.org/CodeSystem/v3-ActCode', code: 'AMB' },
  subject: { reference: `Patient/bulk-p${p}` },
});
const observation = (i: number, p: number, e: number) => ({
  resourceType: 'Observation',
  id: `bulk-o${i}`,
  status: 'final',
  code: { coding: [{ system: 'http://loinc.org', code: '8302-2' }] },
  subject: { reference: `Patient/bulk-p${p}` },
  encounter: { reference: `Encounter/bulk-e${e}` },
  valueQuantity: { value: 170 + (i % 10), unit: 'cm', system: 'http://unitsofmeasure.org', code: 'cm' },
});

const ndjson = (resources: unknown[]) => resources.map((r) => JSON.stringify(r)).join('\n') + '\n';

for (const driver of drivers) {
  describe(`lattice import of clinical resources (${driver})`, () => {
    let dir: string;
    let storage: { databaseUrl?: string; dataDir?: string };
    let env: NodeJS.ProcessEnv;
    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'lattice-bulk-'));
      ({ storage, env } = await sharedStorage(driver, dir));
    });
    after(() => rmSync(dir, { recursive: true, force: true }));

    // These loads are shared content on purpose (`--shared`); a clinic's data names its project (below).
    const run = (args: string[], extra: NodeJS.ProcessEnv = {}) =>
      spawnSync(process.execPath, latticeArgs('import', ...args), { cwd: projectRoot, env: { ...env, ...extra }, encoding: 'utf8' });
    const cli = (file: string, extra: NodeJS.ProcessEnv = {}) => run([file, '--shared'], extra);

    test('clinical data without --project is refused, naming --project and --shared; with --project it is that project’s', async () => {
      const file = join(dir, 'clinic.ndjson');
      writeFileSync(file, ndjson([patient(51), encounter(51, 51)]));
      const refused = run([file]);
      assert.equal(refused.status, 1, refused.stdout);
      assert.match(
        refused.stderr,
        /clinic\.ndjson: line 1: Patient is clinical data and would be shared with every project: name its project with --project <id>, or pass --shared to store it as shared content/,
      );
      const both = run([file, '--project', 'x', '--shared']);
      assert.equal(both.status, 2);
      assert.match(both.stderr, /Usage:/);

      let server = await startServer(driver, storage);
      let clinic: Awaited<ReturnType<typeof createProject>>;
      try {
        assert.equal((await server.fhir('GET', '/Patient/bulk-p51', { token: server.adminToken })).status, 404, 'nothing stored');
        clinic = await createProject(server, 'Bulk clinic');
      } finally {
        await server.stop();
      }
      const loaded = run([file, '--project', clinic.projectId]);
      assert.equal(loaded.status, 0, loaded.stderr);
      server = await startServer(driver, storage);
      try {
        const read = await server.fhir('GET', '/Patient/bulk-p51', { token: server.adminToken });
        assert.equal(read.body.meta.project, clinic.projectId);
        const other = await createProject(server, 'Bulk neighbour');
        assert.equal((await server.fhir('GET', '/Patient/bulk-p51', { token: other.adminToken })).status, 404);
      } finally {
        await server.stop();
      }
    });

    test('NDJSON and a transaction Bundle load in batches; search then finds them', async () => {
      const file = join(dir, 'clinical.ndjson');
      const resources = [patient(1), patient(2), encounter(1, 1), observation(1, 1, 1), observation(2, 2, 1)];
      writeFileSync(file, ndjson(resources));
      const run = cli(file, { LATTICE_IMPORT_BATCH: '2' });
      assert.equal(run.status, 0, run.stderr);
      assert.match(run.stdout, /imported 5 resources \(0 CodeSystems, 0 ValueSets, 0 concepts, 5 others; 0 skipped\)/);

      // A Bundle with urn:uuid full URLs: the UUID becomes the id, references are rewritten.
      const uuid = (n: number) => `9a1c2f0e-0000-4000-8000-00000000000${n}`;
      const bundle = {
        resourceType: 'Bundle',
        type: 'transaction',
        entry: [
          { fullUrl: `urn:uuid:${uuid(1)}`, resource: { resourceType: 'Patient', name: [{ family: 'Bundlefamily' }] }, request: { method: 'POST', url: 'Patient' } },
          {
            fullUrl: `urn:uuid:${uuid(2)}`,
            resource: { resourceType: 'Condition', subject: { reference: `urn:uuid:${uuid(1)}` }, code: { text: 'asthma' } },
            request: { method: 'POST', url: 'Condition' },
          },
        ],
      };
      const bundleFile = join(dir, 'bundle.json');
      writeFileSync(bundleFile, JSON.stringify(bundle));
      const second = cli(bundleFile);
      assert.equal(second.status, 0, second.stderr);
      assert.match(second.stdout, /imported 2 resources \(0 CodeSystems, 0 ValueSets, 0 concepts, 2 others; 0 skipped\)/);

      const server = await startServer(driver, storage);
      try {
        const byPatient = await server.fhir('GET', '/Observation?subject=Patient/bulk-p1', { token: server.adminToken });
        assert.equal(byPatient.status, 200, byPatient.text);
        assert.deepEqual(byPatient.body.entry.map((e: { resource: { id: string } }) => e.resource.id), ['bulk-o1']);
        const byName = await server.fhir('GET', '/Patient?family=bulkfamily2', { token: server.adminToken });
        assert.deepEqual(byName.body.entry.map((e: { resource: { id: string } }) => e.resource.id), ['bulk-p2']);
        const byEncounter = await server.fhir('GET', '/Observation?encounter=Encounter/bulk-e1&_sort=_id', { token: server.adminToken });
        assert.deepEqual(byEncounter.body.entry.map((e: { resource: { id: string } }) => e.resource.id), ['bulk-o1', 'bulk-o2']);
        const condition = await server.fhir('GET', `/Condition/${uuid(2)}`, { token: server.adminToken });
        assert.equal(condition.status, 200, condition.text);
        assert.equal(condition.body.subject.reference, `Patient/${uuid(1)}`);
        assert.equal(condition.body.meta.versionId, '1');
        const bySubject = await server.fhir('GET', `/Condition?subject=Patient/${uuid(1)}`, { token: server.adminToken });
        assert.equal(bySubject.body.entry.length, 1);
      } finally {
        await server.stop();
      }

      // Loading the same file again writes a new version of each resource (no duplicate).
      const rerun = cli(file);
      assert.equal(rerun.status, 0, rerun.stderr);
      const again = await startServer(driver, storage);
      try {
        const read = await again.fhir('GET', '/Patient/bulk-p1', { token: again.adminToken });
        assert.equal(read.body.meta.versionId, '1'); // identical content: no new version
        const all = await again.fhir('GET', '/Observation?_summary=count', { token: again.adminToken });
        assert.equal(all.body.total, 2);
      } finally {
        await again.stop();
      }
    });

    test('a broken line, an invalid resource and a dangling reference are refused with their line', () => {
      const broken = join(dir, 'broken.ndjson');
      writeFileSync(broken, `${JSON.stringify(patient(10))}\n{"resourceType": "Patient", "id": "x",}\n`);
      const a = cli(broken);
      assert.equal(a.status, 1);
      assert.match(a.stderr, /broken\.ndjson: line 2: /);

      const invalid = join(dir, 'invalid.ndjson');
      writeFileSync(invalid, ndjson([patient(11), { resourceType: 'Patient', id: 'bulk-bad', birthDate: 'yesterday' }]));
      const b = cli(invalid);
      assert.equal(b.status, 1);
      assert.match(b.stderr, /invalid\.ndjson: line 2: .*birthDate/);

      const dangling = join(dir, 'dangling.ndjson');
      writeFileSync(dangling, ndjson([patient(12), encounter(12, 12), observation(12, 12, 404)]));
      const c = cli(dangling);
      assert.equal(c.status, 1);
      assert.match(
        c.stderr,
        /dangling\.ndjson: line 3: reference Encounter\/bulk-e404 is to a resource neither in the database nor in the load \(0 resources of earlier batches are stored\)/,
      );
    });

    test('a killed import leaves each batch whole or absent, index rows included', async () => {
      const file = join(dir, 'large.ndjson');
      const lines: unknown[] = [];
      for (let p = 0; p < 400; p++) {
        lines.push(patient(1000 + p), encounter(1000 + p, 1000 + p));
        for (let o = 0; o < 3; o++) lines.push(observation(1000 + p * 3 + o, 1000 + p, 1000 + p));
      }
      writeFileSync(file, ndjson(lines));
      const child = spawn(process.execPath, latticeArgs('import', file, '--shared'), { cwd: projectRoot, env: { ...env, LATTICE_IMPORT_BATCH: '100' } });
      // Killed once the progress shows 30% of the file read: several batches are stored by then.
      await new Promise<void>((resolve, reject) => {
        let err = '';
        child.stderr.on('data', (chunk: Buffer) => {
          err += chunk.toString();
          if (/\] [3-9]\d%/.test(err)) {
            child.kill('SIGKILL');
            resolve();
          }
        });
        child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`import ended with ${code}: ${err}`))));
      });
      await new Promise((resolve) => child.once('close', resolve));
      const server = await startServer(driver, storage);
      try {
        const count = async (sql: string) => (await server.app.db.query<{ n: number }>(sql)).rows[0]?.n ?? -1;
        const stored = await count(`SELECT count(*)::int AS n FROM resource WHERE id ~ '^bulk-[peo][12][0-9]{3}$'`);
        assert.ok(stored >= 100, `stored ${stored}`);
        assert.equal(stored % 100, 0, `stored ${stored}: not whole batches`);
        const history = await count(`SELECT count(*)::int AS n FROM resource_history WHERE id ~ '^bulk-[peo][12][0-9]{3}$'`);
        assert.equal(history, stored);
        // Every stored Encounter and Observation has its subject in the reference index.
        const indexed = await count(
          `SELECT count(DISTINCT id)::int AS n FROM search_reference WHERE param = 'subject' AND id ~ '^bulk-[eo][12][0-9]{3}$'`,
        );
        const clinical = await count(`SELECT count(*)::int AS n FROM resource WHERE id ~ '^bulk-[eo][12][0-9]{3}$'`);
        assert.equal(indexed, clinical);
      } finally {
        await server.stop();
      }
    });
  });
}

const cliAsync = (args: string[]) => importAsync(args);

for (const driver of drivers) {
  describe(`lattice import --url of clinical resources (${driver})`, () => {
    let server: TestServer;
    let dir: string;
    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'lattice-bulk-url-'));
      server = await startServer(driver);
    });
    after(async () => {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    });

    test('a super admin’s token without --project is refused for clinical data (naming --project and --shared); --shared shares it', async () => {
      const file = join(dir, 'admin.ndjson');
      writeFileSync(file, ndjson([patient(61)]));
      const refused = await cliAsync([file, '--url', server.baseUrl, '--token', server.adminToken!]);
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /The server refused the import \(400\): line 1: Patient is clinical data and would be shared with every project: name its project with --project <id>, or pass --shared/);
      const project = await createProject(server, 'Bulk neighbour over HTTP');
      assert.equal((await server.fhir('GET', '/Patient/bulk-p61', { token: project.adminToken })).status, 404);
      const into = await cliAsync([file, '--url', server.baseUrl, '--token', server.adminToken!, '--project', project.projectId]);
      assert.equal(into.code, 0, into.stderr);
      assert.equal((await server.fhir('GET', '/Patient/bulk-p61', { token: project.adminToken })).body.meta.project, project.projectId);
      // A project admin cannot share.
      const notShared = await cliAsync([file, '--url', server.baseUrl, '--token', project.adminToken, '--shared']);
      assert.equal(notShared.code, 1);
      assert.match(notShared.stderr, /\(403\): Forbidden/);
      const shared = join(dir, 'shared.ndjson');
      writeFileSync(shared, ndjson([patient(62)]));
      const sharedRun = await cliAsync([shared, '--url', server.baseUrl, '--token', server.adminToken!, '--shared']);
      assert.equal(sharedRun.code, 0, sharedRun.stderr);
      const seen = await server.fhir('GET', '/Patient/bulk-p62', { token: project.adminToken });
      assert.equal(seen.status, 200, seen.text);
      assert.equal(seen.body.meta.project, undefined);
      // The route itself: a project and shared together are refused.
      const both = await server.request('POST', `/admin/terminology/import?project=${project.projectId}&shared=true`, {
        token: server.adminToken,
        raw: ndjson([patient(63)]),
        contentType: 'application/x-ndjson',
      });
      assert.equal(both.status, 400, both.text);
      assert.equal(ooText(both.body), 'project and shared exclude each other: name a project, or share');
    });

    test("a project admin loads NDJSON into its project through the server; a dangling reference is refused with its line", async () => {
      const project = await createProject(server, 'Bulk over HTTP');
      const file = join(dir, 'clinical.ndjson');
      writeFileSync(file, ndjson([patient(31), encounter(31, 31), observation(31, 31, 31)]));
      const run = await cliAsync([file, '--url', server.baseUrl, '--token', project.adminToken]);
      assert.equal(run.code, 0, run.stderr);
      assert.match(run.stdout, /imported 3 resources \(0 CodeSystems, 0 ValueSets, 0 concepts, 3 others; 0 skipped\)/);
      const member = await createMember(server, project.projectId);
      const found = await server.fhir('GET', '/Observation?subject=Patient/bulk-p31&code=http://loinc.org|8302-2', { token: member.token });
      assert.equal(found.status, 200, found.text);
      assert.deepEqual(found.body.entry.map((e: { resource: { id: string; meta: { project?: string } } }) => [e.resource.id, e.resource.meta.project]), [['bulk-o31', project.projectId]]);
      // Another project sees none of it.
      const other = await createProject(server, 'Bulk elsewhere');
      assert.equal((await server.fhir('GET', '/Patient/bulk-p31', { token: other.adminToken })).status, 404);
      // Its admin loading the same id is answered as a PUT of it would be: not found, nothing
      // said of the project that holds it, nothing overwritten.
      const foreign = join(dir, 'foreign.ndjson');
      writeFileSync(foreign, ndjson([{ ...patient(31), name: [{ family: 'Overwritten' }] }]));
      const taken = await cliAsync([foreign, '--url', server.baseUrl, '--token', other.adminToken]);
      assert.equal(taken.code, 1);
      assert.match(taken.stderr, /line 1: Patient\/bulk-p31 cannot be written: Not found \(0 resources of earlier batches are stored\)/);
      assert.doesNotMatch(taken.stderr, /project/);
      const kept = await server.fhir('GET', '/Patient/bulk-p31', { token: member.token });
      assert.equal(kept.body.name[0].family, 'Bulkfamily31');

      const dangling = join(dir, 'dangling.ndjson');
      writeFileSync(dangling, ndjson([patient(32), observation(32, 32, 404)]));
      const refused = await cliAsync([dangling, '--url', server.baseUrl, '--token', project.adminToken]);
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /line 2: reference Encounter\/bulk-e404 is to a resource neither in the database nor in the load \(0 resources of earlier batches are stored\)/);
      assert.equal((await server.fhir('GET', '/Patient/bulk-p32', { token: project.adminToken })).status, 404);
    });
  });
}
