import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { MedplumClient } from '@medplum/core';
import { Client } from 'fhir-kit-client';
import { MAX_PATCH_COPIED } from '../src/rest/patch.js';
import { createProject, drivers, ooText, startServer, type TestProject, type TestServer } from './harness.js';

/** PATCH with JSON Patch and FHIRPath Patch (docs/rest.md#patch). */
for (const driver of drivers) {
  describe(`PATCH (${driver})`, () => {
    let server: TestServer;
    let project: TestProject;
    before(async () => {
      server = await startServer(driver);
      project = await createProject(server, 'Patching');
    });
    after(() => server.stop());

    const create = async (extra: Record<string, unknown> = {}) =>
      (await server.fhir('POST', '/Patient', { token: project.adminToken, body: { resourceType: 'Patient', name: [{ family: 'Patch', given: ['A', 'B'] }], ...extra } })).body;
    const jsonPatch = (path: string, ops: unknown[], headers: Record<string, string> = {}) =>
      server.fhir('PATCH', path, { token: project.adminToken, raw: JSON.stringify(ops), contentType: 'application/json-patch+json', headers });
    const fhirPathPatch = (path: string, operations: Array<Array<Record<string, unknown>>>) =>
      server.fhir('PATCH', path, {
        token: project.adminToken,
        body: { resourceType: 'Parameters', parameter: operations.map((part) => ({ name: 'operation', part })) },
      });

    test('JSON Patch add/remove/replace/move/copy/test → 200, a new version', async () => {
      const p = await create({ gender: 'male' });
      const res = await jsonPatch(`/Patient/${p.id}`, [
        { op: 'test', path: '/gender', value: 'male' },
        { op: 'replace', path: '/gender', value: 'female' },
        { op: 'add', path: '/birthDate', value: '1970-01-02' },
        { op: 'add', path: '/name/0/given/-', value: 'C' },
        { op: 'remove', path: '/name/0/given/0' },
        { op: 'move', from: '/name/0/given/1', path: '/name/0/given/0' },
        { op: 'copy', from: '/name/0', path: '/name/-' },
      ]);
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.meta.versionId, '2');
      assert.equal(res.headers.get('etag'), 'W/"2"');
      assert.equal(res.body.gender, 'female');
      assert.equal(res.body.birthDate, '1970-01-02');
      assert.deepEqual(res.body.name[0].given, ['C', 'B']);
      assert.equal(res.body.name.length, 2);
      assert.equal((await server.fhir('GET', `/Patient/${p.id}`, { token: project.adminToken })).body.gender, 'female');
    });

    test('JSON Patch errors: missing path 400 naming it, failing test 422, id/resourceType change 400, invalid result 400, If-Match 412', async () => {
      const p = await create();
      const missing = await jsonPatch(`/Patient/${p.id}`, [{ op: 'replace', path: '/telecom/0/value', value: 'x' }]);
      assert.equal(missing.status, 400);
      assert.equal(ooText(missing.body), "JSON Patch operation 0 (replace): path '/telecom/0/value' does not exist");
      const failed = await jsonPatch(`/Patient/${p.id}`, [{ op: 'test', path: '/name/0/family', value: 'Other' }]);
      assert.equal(failed.status, 422);
      assert.equal(failed.body.issue[0].code, 'processing');
      assert.equal(ooText(failed.body), "JSON Patch operation 0 (test) failed at '/name/0/family'");
      const id = await jsonPatch(`/Patient/${p.id}`, [{ op: 'replace', path: '/id', value: 'other' }]);
      assert.equal(id.status, 400);
      assert.equal(ooText(id.body), 'Patch must not change id');
      const type = await jsonPatch(`/Patient/${p.id}`, [{ op: 'replace', path: '/resourceType', value: 'Practitioner' }]);
      assert.equal(type.status, 400);
      assert.equal(ooText(type.body), 'Patch must not change resourceType');
      const invalid = await jsonPatch(`/Patient/${p.id}`, [{ op: 'add', path: '/birthDate', value: '1980-13-01' }]);
      assert.equal(invalid.status, 400);
      assert.deepEqual(invalid.body.issue[0].expression, ['Patient.birthDate']);
      const badOp = await jsonPatch(`/Patient/${p.id}`, [{ op: 'frobnicate', path: '/x' }]);
      assert.equal(badOp.status, 400);
      assert.equal(ooText(badOp.body), "JSON Patch operation 0: 'op' must be one of add, remove, replace, move, copy, test");
      const stale = await jsonPatch(`/Patient/${p.id}`, [{ op: 'add', path: '/gender', value: 'male' }], { 'if-match': 'W/"7"' });
      assert.equal(stale.status, 412);
      assert.equal(ooText(stale.body), 'Version mismatch');
      const ok = await jsonPatch(`/Patient/${p.id}`, [{ op: 'add', path: '/gender', value: 'male' }], { 'if-match': 'W/"1"' });
      assert.equal(ok.status, 200, ok.text);
      const current = (await server.fhir('GET', `/Patient/${p.id}`, { token: project.adminToken })).body;
      assert.equal(current.meta.versionId, '2');
      const gone = await jsonPatch('/Patient/no-such-patient', [{ op: 'add', path: '/gender', value: 'male' }]);
      assert.equal(gone.status, 404);
    });

    test('a JSON Patch content type is refused outside PATCH; PATCH with another body → 400', async () => {
      const res = await server.fhir('POST', '/Patient', { token: project.adminToken, raw: '[]', contentType: 'application/json-patch+json' });
      assert.equal(res.status, 415);
      assert.equal(ooText(res.body), 'Unsupported content type: application/json-patch+json');
      const p = await create();
      const wrong = await server.fhir('PATCH', `/Patient/${p.id}`, { token: project.adminToken, body: { resourceType: 'Patient' } });
      assert.equal(wrong.status, 400);
      assert.equal(ooText(wrong.body), 'PATCH body must be a JSON Patch array (application/json-patch+json) or a FHIRPath Patch Parameters resource');
    });

    test('FHIRPath Patch add, insert, replace, delete, move', async () => {
      const p = await create({ gender: 'male' });
      const res = await fhirPathPatch(`/Patient/${p.id}`, [
        [{ name: 'type', valueCode: 'replace' }, { name: 'path', valueString: 'Patient.gender' }, { name: 'value', valueCode: 'female' }],
        [{ name: 'type', valueCode: 'add' }, { name: 'path', valueString: 'Patient' }, { name: 'name', valueString: 'birthDate' }, { name: 'value', valueDate: '1990-05-06' }],
        [
          { name: 'type', valueCode: 'add' },
          { name: 'path', valueString: 'Patient' },
          { name: 'name', valueString: 'identifier' },
          { name: 'value', part: [{ name: 'system', valueUri: 'http://x' }, { name: 'value', valueString: '42' }] },
        ],
        [{ name: 'type', valueCode: 'insert' }, { name: 'path', valueString: 'Patient.name[0].given' }, { name: 'index', valueInteger: 0 }, { name: 'value', valueString: 'Z' }],
        [{ name: 'type', valueCode: 'delete' }, { name: 'path', valueString: 'Patient.name[0].given[1]' }],
        [{ name: 'type', valueCode: 'move' }, { name: 'path', valueString: 'Patient.name[0].given' }, { name: 'source', valueInteger: 1 }, { name: 'destination', valueInteger: 0 }],
      ]);
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.gender, 'female');
      assert.equal(res.body.birthDate, '1990-05-06');
      assert.deepEqual(res.body.identifier, [{ system: 'http://x', value: '42' }]);
      assert.deepEqual(res.body.name[0].given, ['B', 'Z']);
    });

    test('FHIRPath Patch errors name the path or the unsupported feature', async () => {
      const p = await create();
      const missing = await fhirPathPatch(`/Patient/${p.id}`, [[{ name: 'type', valueCode: 'replace' }, { name: 'path', valueString: 'Patient.telecom[0]' }, { name: 'value', valueString: 'x' }]]);
      assert.equal(missing.status, 400);
      assert.equal(ooText(missing.body), "FHIRPath Patch operation 0 (replace): path 'Patient.telecom[0]' does not exist");
      const unsupported = await fhirPathPatch(`/Patient/${p.id}`, [[{ name: 'type', valueCode: 'copy' }, { name: 'path', valueString: 'Patient' }]]);
      assert.equal(unsupported.status, 400);
      assert.equal(ooText(unsupported.body), "FHIRPath Patch operation 0: type 'copy' is not supported (supported: add, insert, delete, replace, move)");
      const id = await fhirPathPatch(`/Patient/${p.id}`, [[{ name: 'type', valueCode: 'replace' }, { name: 'path', valueString: 'Patient.id' }, { name: 'value', valueId: 'x' }]]);
      assert.equal(id.status, 400);
      assert.equal(ooText(id.body), 'Patch must not change id');
      const syntax = await fhirPathPatch(`/Patient/${p.id}`, [[{ name: 'type', valueCode: 'delete' }, { name: 'path', valueString: 'Patient.name[' }]]);
      assert.equal(syntax.status, 400);
      assert.equal(ooText(syntax.body), "FHIRPath Patch operation 0: invalid path 'Patient.name['");
    });

    test('FHIRPath Patch paths are bounded before the FHIRPath parser sees them: 400 too-costly (a 5,000-deep path took seconds to overflow it)', async () => {
      const p = await create();
      const del = (path: string) => fhirPathPatch(`/Patient/${p.id}`, [[{ name: 'type', valueCode: 'delete' }, { name: 'path', valueString: path }]]);
      const deep = await del(`Patient.name${'.where(true'.repeat(5000)}${')'.repeat(5000)}`);
      assert.equal(deep.status, 400, deep.text.slice(0, 300));
      assert.equal(deep.body.issue[0].code, 'too-costly');
      assert.equal(ooText(deep.body), 'FHIRPath Patch operation 0: path is 60012 characters long (at most 1000)');
      const nested = await del(`Patient.name${'.where(true'.repeat(33)}${')'.repeat(33)}`);
      assert.equal(ooText(nested.body), 'FHIRPath Patch operation 0: path nested too deep: 33 levels (at most 32)');
      // Brackets inside a string literal are not nesting.
      const quoted = await del(`Patient.name.where(family = '${'('.repeat(40)}')`);
      assert.equal(ooText(quoted.body), `FHIRPath Patch operation 0 (delete): path 'Patient.name.where(family = '${'('.repeat(40)}')' does not exist`);
    });

    test('a FHIRPath Patch path that runs past LATTICE_FHIRPATH_TIMEOUT is stopped (400 too-costly) while the server answers others', async () => {
      const p = await create();
      // 240 characters, 13 levels: within the path bounds, but 4^12 evaluations (about a minute in one thread).
      let nested = '1';
      for (let level = 0; level < 12; level++) nested = `(1|2|3|4).select(${nested})`;
      const path = `Patient.name.where(${nested}.count() > 0)`;
      const order: string[] = [];
      const costly = fhirPathPatch(`/Patient/${p.id}`, [[{ name: 'type', valueCode: 'delete' }, { name: 'path', valueString: path }]]).then((res) => {
        order.push('costly patch');
        return res;
      });
      // Sent while the costly one runs: a cheap FHIRPath Patch of another resource (it waits its
      // turn in the FHIRPath thread), and a read and the health probe (they wait for nothing).
      const other = await create();
      const cheap = fhirPathPatch(`/Patient/${other.id}`, [[{ name: 'type', valueCode: 'replace' }, { name: 'path', valueString: 'Patient.name.family' }, { name: 'value', valueString: 'Cheap' }]]);
      const [read, health] = await Promise.all([server.fhir('GET', `/Patient/${p.id}`, { token: project.adminToken }), fetch(`${server.baseUrl}/healthz`)]);
      order.push('read and probe');
      assert.equal(read.status, 200);
      // Answered while the evaluation runs (its database check may say 503 on a loaded machine: that is an answer too).
      assert.ok(health.status === 200 || health.status === 503, `healthz ${health.status}`);
      const res = await costly;
      assert.equal(order[0], 'read and probe', 'the read and the probe were answered before the costly patch');
      assert.equal((await cheap).status, 200, (await cheap).text);
      assert.equal((await cheap).body.name[0].family, 'Cheap');
      assert.equal(res.status, 400, res.text.slice(0, 300));
      assert.equal(res.body.issue[0].code, 'too-costly');
      assert.equal(ooText(res.body), `FHIRPath Patch operation 0: evaluating path '${path}' was stopped after 1000 ms (LATTICE_FHIRPATH_TIMEOUT)`);
      // Nothing was written, and the next FHIRPath Patch runs in a new thread.
      const after = await fhirPathPatch(`/Patient/${p.id}`, [[{ name: 'type', valueCode: 'replace' }, { name: 'path', valueString: 'Patient.name.family' }, { name: 'value', valueString: 'After' }]]);
      assert.equal(after.status, 200, after.text);
      assert.equal(after.body.meta.versionId, '2');
      assert.equal(after.body.name[0].family, 'After');
    });

    test('concurrent patches of one resource without If-Match are all applied, each to the version before it', async () => {
      const p = await create();
      const results = await Promise.all(
        ['C', 'D', 'E', 'F', 'G'].map((given) => jsonPatch(`/Patient/${p.id}`, [{ op: 'add', path: '/name/0/given/-', value: given }])),
      );
      for (const res of results) assert.equal(res.status, 200, res.text);
      assert.deepEqual(results.map((r) => r.body.meta.versionId).sort(), ['2', '3', '4', '5', '6']);
      const current = (await server.fhir('GET', `/Patient/${p.id}`, { token: project.adminToken })).body;
      assert.deepEqual([...current.name[0].given].sort(), ['A', 'B', 'C', 'D', 'E', 'F', 'G']);
    });

    test('conditional PATCH [base]/Type?search patches the single match', async () => {
      const p = await create({ identifier: [{ system: 'http://patch', value: 'cond-1' }] });
      const res = await jsonPatch('/Patient?identifier=http://patch|cond-1', [{ op: 'add', path: '/gender', value: 'other' }]);
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.id, p.id);
      assert.equal(res.body.gender, 'other');
      const none = await jsonPatch('/Patient?identifier=http://patch|none', [{ op: 'add', path: '/gender', value: 'other' }]);
      assert.equal(none.status, 404);
    });

    test('JSON Patch copies that double the resource stop at the copy bound: 400 too-costly (was unbounded growth, 2^n)', async () => {
      const p = await create();
      // Each copy appends the whole list to itself: the copied JSON doubles every operation.
      const ops = Array.from({ length: 21 }, () => ({ op: 'copy', from: '/name', path: '/name/-' }));
      let name: unknown[] = p.name;
      let copied = 0;
      let stopped = 0;
      for (; ; stopped++) {
        copied += JSON.stringify(name).length;
        if (copied > MAX_PATCH_COPIED) break;
        name = [...name, structuredClone(name)];
      }
      assert.ok(stopped < ops.length);
      const res = await jsonPatch(`/Patient/${p.id}`, ops);
      assert.equal(res.status, 400, res.text.slice(0, 300));
      assert.equal(res.body.issue[0].code, 'too-costly');
      assert.equal(ooText(res.body), `JSON Patch operation ${stopped} (copy): the patch copies more than 16777216 characters (at most 16777216)`);
      assert.equal((await server.fhir('GET', `/Patient/${p.id}`, { token: project.adminToken })).body.meta.versionId, '1');
    });

    test('JSON Patch moves that nest the resource deeper than a body may be: 400 naming the depth bound', async () => {
      const p = await create();
      // add /a, then per level: a fresh /b, /a moved into it, /b moved back to /a — one level deeper, no bigger.
      const ops: unknown[] = [{ op: 'add', path: '/a', value: {} }];
      for (let i = 0; i < 300; i++) ops.push({ op: 'add', path: '/b', value: {} }, { op: 'move', from: '/a', path: '/b/a' }, { op: 'move', from: '/b', path: '/a' });
      const res = await jsonPatch(`/Patient/${p.id}`, ops);
      assert.equal(res.status, 400, res.text.slice(0, 300));
      assert.equal(ooText(res.body), 'Patch result is nested too deeply (more than 256 levels)');
    });

    test('MedplumClient.patchResource and fhir-kit-client patch', async () => {
      const p = await create();
      const medplum = new MedplumClient({ baseUrl: `${server.baseUrl}/`, fetch, storage: undefined });
      medplum.setAccessToken(project.adminToken);
      const patched = await medplum.patchResource('Patient', p.id as string, [{ op: 'add', path: '/gender', value: 'unknown' }]);
      assert.equal(patched.gender, 'unknown');
      assert.equal(patched.meta?.versionId, '2');
      const kit = new Client({ baseUrl: server.fhirUrl, bearerToken: project.adminToken });
      const kitPatched = (await kit.patch({ resourceType: 'Patient', id: p.id, jsonPatch: [{ op: 'replace', path: '/gender', value: 'male' }] })) as { gender?: string };
      assert.equal(kitPatched.gender, 'male');
    });
  });
}
