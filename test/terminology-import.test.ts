import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import type { CodeSystem, Parameters } from '@medplum/fhirtypes';
import { SqlProvider } from '../src/terminology/providers/fhir/sql-provider.js';
import { importFile, importStream, LARGE_CODE_SYSTEM } from '../src/terminology/store/import-file.js';
import { resolveCodeSystem } from '../src/terminology/engine/resolve.js';
import type { TermContext } from '../src/terminology/types.js';
import { parseVersionRules } from '../src/terminology/versions.js';
import { createMember, createProject, drivers, ooText, startServer, type TestProject, type TestServer } from './harness.js';

/**
 * Loading terminology (docs/terminology.md#import): `CodeSystem/$import` into a not-present code system,
 * its permissions and errors, and `lattice import <file>` (importFile) for JSON, Bundle and
 * NDJSON files, including a code system large enough to take the bulk path.
 */

const display = (body: Parameters | undefined) => body?.parameter?.find((p) => p.name === 'display')?.valueString;

for (const driver of drivers) {
  describe(`terminology import (${driver})`, () => {
    let server: TestServer;
    let project: TestProject;
    let memberToken: string;
    let dir: string;
    const importBody = (parameter: unknown[]) => ({ resourceType: 'Parameters', parameter });

    before(async () => {
      server = await startServer(driver);
      project = await createProject(server, 'Import project');
      memberToken = (await createMember(server, project.projectId)).token;
      dir = mkdtempSync(join(tmpdir(), 'lattice-import-'));
      const cs: CodeSystem = { resourceType: 'CodeSystem', id: 'imported', url: 'http://example.org/imported', status: 'active', content: 'not-present' };
      const res = await server.fhir('PUT', '/CodeSystem/imported', { body: cs, token: project.adminToken });
      assert.equal(res.status, 201, res.text);
    });
    after(async () => {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    });

    test('$import adds concepts, hierarchy and designations to a not-present code system', async () => {
      const res = await server.fhir('POST', '/CodeSystem/$import', {
        token: project.adminToken,
        body: importBody([
          { name: 'system', valueUri: 'http://example.org/imported' },
          { name: 'concept', valueCoding: { code: 'root', display: 'Root' } },
          { name: 'concept', valueCoding: { code: 'leaf', display: 'Leaf' } },
          { name: 'property', part: [{ name: 'code', valueCode: 'leaf' }, { name: 'property', valueCode: 'parent' }, { name: 'value', valueCode: 'root' }] },
          { name: 'property', part: [{ name: 'code', valueCode: 'leaf' }, { name: 'property', valueCode: 'colour' }, { name: 'value', valueString: 'green' }] },
          { name: 'designation', part: [{ name: 'code', valueCode: 'leaf' }, { name: 'language', valueCode: 'de' }, { name: 'value', valueString: 'Blatt' }] },
        ]),
      });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.resourceType, 'CodeSystem');
      const sub = await server.fhir('GET', '/CodeSystem/$subsumes?system=http://example.org/imported&codeA=root&codeB=leaf', { token: project.adminToken });
      assert.equal(sub.body.parameter[0].valueCode, 'subsumes', sub.text);
      const de = await server.fhir('GET', '/CodeSystem/$lookup?system=http://example.org/imported&code=leaf&displayLanguage=de', { token: project.adminToken });
      assert.equal(display(de.body), 'Blatt');
      // a later update of the (not-present) resource keeps the imported concepts
      const put = await server.fhir('PUT', '/CodeSystem/imported', {
        token: project.adminToken,
        body: { resourceType: 'CodeSystem', id: 'imported', url: 'http://example.org/imported', status: 'active', content: 'not-present', title: 'Renamed' },
      });
      assert.equal(put.status, 200, put.text);
      const again = await server.fhir('GET', '/CodeSystem/$lookup?system=http://example.org/imported&code=leaf', { token: project.adminToken });
      assert.equal(display(again.body), 'Leaf', again.text);
    });

    test('$import of a parent above an existing subtree makes it an ancestor of every concept below it', async () => {
      const cs: CodeSystem = { resourceType: 'CodeSystem', id: 'stacked', url: 'http://example.org/stacked', status: 'active', content: 'not-present' };
      assert.equal((await server.fhir('PUT', '/CodeSystem/stacked', { body: cs, token: project.adminToken })).status, 201);
      const parent = (code: string, value: string) => ({
        name: 'property',
        part: [{ name: 'code', valueCode: code }, { name: 'property', valueCode: 'parent' }, { name: 'value', valueCode: value }],
      });
      const first = await server.fhir('POST', '/CodeSystem/$import', {
        token: project.adminToken,
        body: importBody([
          { name: 'system', valueUri: cs.url },
          ...['top', 'mid', 'leaf', 'low', 'other'].map((code) => ({ name: 'concept', valueCoding: { code } })),
          parent('leaf', 'mid'),
          parent('low', 'leaf'),
          parent('low', 'other'),
        ]),
      });
      assert.equal(first.status, 200, first.text);
      const second = await server.fhir('POST', '/CodeSystem/$import', { token: project.adminToken, body: importBody([{ name: 'system', valueUri: cs.url }, { name: 'concept', valueCoding: { code: 'top' } }, parent('mid', 'top')]) });
      assert.equal(second.status, 200, second.text);
      // From the database (what point reads answer before the in-memory index is built), and from the index.
      const info = await resolveCodeSystem(
        { db: server.app.db, repo: server.app.system, env: server.app, log: server.app.log, inlineCodeSystems: [], inlineValueSets: [], supplements: [], memo: new Map(), versionRules: parseVersionRules({}) },
        cs.url as string,
      );
      assert.ok(info);
      const ids = new Map((await server.app.db.query<{ id: number; code: string }>('SELECT id, code FROM tx_concept WHERE cs_key = $1', [info.key])).rows.map((r) => [r.code, r.id]));
      const expected = ['top>mid', 'top>leaf', 'top>low', 'mid>low', 'other>low', '!top>other', '!low>top', '!leaf>leaf', '!other>leaf'];
      const fromSql = [];
      for (const pair of expected) {
        const [a, b] = pair.replace('!', '').split('>');
        fromSql.push(`${(await new SqlProvider({ db: server.app.db } as TermContext, info).isAncestor(ids.get(a) as number, ids.get(b) as number)) ? '' : '!'}${a}>${b}`);
      }
      assert.deepEqual(fromSql, expected);
      const sub = await server.fhir('GET', '/CodeSystem/$subsumes?system=http://example.org/stacked&codeA=top&codeB=low', { token: project.adminToken });
      assert.equal(sub.body.parameter[0].valueCode, 'subsumes', sub.text);
    });

    test('$import errors: unknown system 400, unknown code 400, members and shared content 403, GET 405', async () => {
      const unknown = await server.fhir('POST', '/CodeSystem/$import', {
        token: project.adminToken,
        body: importBody([{ name: 'system', valueUri: 'http://example.org/none' }]),
      });
      assert.equal(unknown.status, 400, unknown.text);
      assert.equal(ooText(unknown.body), 'CodeSystem http://example.org/none not found');
      const badCode = await server.fhir('POST', '/CodeSystem/$import', {
        token: project.adminToken,
        body: importBody([
          { name: 'system', valueUri: 'http://example.org/imported' },
          { name: 'designation', part: [{ name: 'code', valueCode: 'ghost' }, { name: 'value', valueString: 'Boo' }] },
        ]),
      });
      assert.equal(badCode.status, 400, badCode.text);
      assert.equal(ooText(badCode.body), "Code 'ghost' not found in CodeSystem http://example.org/imported");
      const member = await server.fhir('POST', '/CodeSystem/$import', {
        token: memberToken,
        body: importBody([{ name: 'system', valueUri: 'http://example.org/imported' }, { name: 'concept', valueCoding: { code: 'x' } }]),
      });
      assert.equal(member.status, 403, member.text);
      assert.equal(ooText(member.body), 'Forbidden');
      const shared = await server.fhir('POST', '/CodeSystem/$import', {
        token: project.adminToken,
        body: importBody([{ name: 'system', valueUri: 'http://hl7.org/fhir/administrative-gender' }, { name: 'concept', valueCoding: { code: 'x' } }]),
      });
      assert.equal(shared.status, 403, shared.text);
      const get = await server.fhir('GET', '/CodeSystem/$import?system=http://example.org/imported', { token: project.adminToken });
      assert.equal(get.status, 405, get.text);
    });

    test('importFile loads a JSON resource, a Bundle and NDJSON; a re-import updates in place', async () => {
      const quiet = new Writable({ write: (_c, _e, cb) => cb() });
      const cs = { resourceType: 'CodeSystem', url: 'http://example.org/file-cs', version: '1', status: 'active', content: 'complete', concept: [{ code: 'f1', display: 'File one' }] };
      const vs = { resourceType: 'ValueSet', url: 'http://example.org/file-vs', status: 'active', compose: { include: [{ system: 'http://example.org/file-cs' }] } };
      writeFileSync(join(dir, 'cs.json'), JSON.stringify(cs, null, 2));
      writeFileSync(join(dir, 'bundle.json'), JSON.stringify({ resourceType: 'Bundle', type: 'collection', entry: [{ resource: vs }, { resource: { resourceType: 'Patient' } }] }));
      writeFileSync(join(dir, 'more.ndjson'), [{ ...cs, url: 'http://example.org/nd-cs' }, { ...vs, url: 'http://example.org/nd-vs' }].map((r) => JSON.stringify(r)).join('\n') + '\n');
      const services = server.app;
      const one = await importFile(join(dir, 'cs.json'), services, { out: quiet });
      assert.deepEqual({ ...one, ms: 0 }, { resources: 1, codeSystems: 1, valueSets: 0, concepts: 1, skipped: 0, ms: 0 });
      const bundle = await importFile(join(dir, 'bundle.json'), services, { out: quiet });
      assert.equal(bundle.valueSets, 1);
      assert.equal(bundle.skipped, 1);
      const nd = await importFile(join(dir, 'more.ndjson'), services, { out: quiet });
      assert.equal(nd.resources, 2);
      await importFile(join(dir, 'cs.json'), services, { out: quiet });
      const search = await server.fhir('GET', '/CodeSystem?url=http://example.org/file-cs');
      assert.equal(search.body.total ?? search.body.entry?.length, 1, search.text);
      const ok = await server.fhir('GET', '/ValueSet/$validate-code?url=http://example.org/file-vs&system=http://example.org/file-cs&code=f1', { token: project.adminToken });
      assert.equal(ok.body.parameter[0].valueBoolean, true, ok.text);
    });

    test(`importFile indexes a code system of more than ${LARGE_CODE_SYSTEM} concepts in bulk, with progress`, async () => {
      const size = LARGE_CODE_SYSTEM + 500;
      const concept = Array.from({ length: size }, (_, i) => ({ code: `k${i}`, display: `Big ${i}`, ...(i > 0 ? { property: [{ code: 'parent', valueCode: `k${Math.floor((i - 1) / 3)}` }] } : {}) }));
      writeFileSync(join(dir, 'big.json'), JSON.stringify({ resourceType: 'CodeSystem', id: 'big-file', url: 'http://example.org/big-file', status: 'active', content: 'complete', concept }));
      let progress = '';
      const out = new Writable({ write: (c, _e, cb) => ((progress += String(c)), cb()) });
      const summary = await importFile(join(dir, 'big.json'), server.app, { out });
      assert.equal(summary.concepts, size);
      assert.match(progress, /100% [0-9,/]+ bytes/);
      assert.match(progress, /hierarchy .*100% 20,500\/20,500 concepts/);
      const stored = await server.fhir('GET', '/CodeSystem/big-file');
      assert.equal(stored.body.content, 'not-present');
      assert.equal(stored.body.concept, undefined);
      const lookup = await server.fhir('GET', `/CodeSystem/$lookup?system=http://example.org/big-file&code=k${size - 1}`, { token: project.adminToken });
      assert.equal(display(lookup.body), `Big ${size - 1}`, lookup.text);
      const sub = await server.fhir('GET', `/CodeSystem/$subsumes?system=http://example.org/big-file&codeA=k0&codeB=k${size - 1}`);
      assert.equal(sub.body.parameter[0].valueCode, 'subsumes');
    });

    test('a staged import that fails while a batch is still being written leaves no rows behind', async () => {
      // A batch is written while the next is read (staged-import.ts): a failure on either side
      // must surface, and the clean-up must wait for the batch in flight.
      const concepts = (n: number) => Array.from({ length: n }, (_, i) => JSON.stringify({ code: `f${i}`, display: `Failing ${i}` })).join(',');
      const header = (id: string) => `{"resourceType":"CodeSystem","id":"${id}","url":"http://example.org/${id}","status":"active","content":"complete","concept":[`;
      const orphans = async () => {
        await new Promise((resolve) => setTimeout(resolve, 600)); // longer than a slow copy: a late batch would have landed
        const res = await server.app.db.query<{ n: number }>(
          `SELECT ((SELECT count(*) FROM tx_concept c WHERE NOT EXISTS (SELECT 1 FROM tx_code_system s WHERE s.cs_key = c.cs_key))
            + (SELECT count(*) FROM tx_designation d WHERE NOT EXISTS (SELECT 1 FROM tx_code_system s WHERE s.cs_key = d.cs_key))
            + (SELECT count(*) FROM tx_code_system WHERE scope LIKE 'staging %'))::int AS n`,
        );
        return res.rows[0].n;
      };
      const db = server.app.db;
      const slowCopies = (fail: boolean): typeof db => {
        let calls = 0;
        return Object.assign(Object.create(db) as typeof db, {
          copyRows: async (table: string, columns: string[], text: string) => {
            await new Promise((resolve) => setTimeout(resolve, 200));
            if (fail && ++calls === 1) throw new Error('the database went away');
            return (db.copyRows as NonNullable<typeof db.copyRows>)(table, columns, text);
          },
        });
      };
      const services = (failing: typeof db) => ({ ...server.app, db: failing, config: { ...server.app.config, txStagedImportAbove: 1000 } });
      const quiet = new Writable({ write: (_c, _e, cb) => cb() });
      // The write of the first batch fails while the rest is read.
      await assert.rejects(importStream(Readable.from([header('fails-writing'), concepts(45_000), ']}']), services(slowCopies(true)), { out: quiet }), /the database went away/);
      assert.equal(await orphans(), 0);
      // The input breaks while the last full batch is still being written.
      await assert.rejects(importStream(Readable.from([header('fails-reading'), concepts(41_000), ',{]}']), services(slowCopies(false)), { out: quiet }), /JSON/);
      assert.equal(await orphans(), 0);
      const none = await server.fhir('GET', '/CodeSystem/$lookup?system=http://example.org/fails-reading&code=f1');
      assert.equal(none.status, 404, none.text);
    });
  });
}
