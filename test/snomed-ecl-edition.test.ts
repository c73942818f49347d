import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import type { OperationOutcome } from '@medplum/fhirtypes';
import { projectRoot } from '../src/paths.js';
import { importRf2 } from '../src/terminology/store/rf2-import.js';
import { drivers, startServer, type TestServer } from './harness.js';

/**
 * ECL on an edition as it is (docs/terminology.md#meaning): `*` is the concepts of the edition's
 * hierarchy, so an active concept cut off from the root (here the module concept, whose is-a row
 * the copy of the synthetic fixture leaves out, as a subset that leaves out the metadata hierarchy
 * does) is not selected by ECL, though it is still a code of the system; a concept the edition
 * does not know is an error, not an empty set; and an error in an implicit value set names no path
 * into a `compose` the caller never wrote.
 */

const SCT = 'http://snomed.info/sct';
const FIXTURE = join(projectRoot, 'test', 'fixtures', 'rf2');
const quiet = () => new Writable({ write: (_c, _e, done) => done() });
const MODULE = '9000001003';

type Expansion = { expansion?: { total?: number; contains?: Array<{ code: string }> } };

for (const driver of drivers) {
  describe(`ECL on an edition as it is (${driver})`, () => {
    let server: TestServer;
    let dir: string;
    let active: string[];
    before(async () => {
      server = await startServer(driver);
      dir = mkdtempSync(join(tmpdir(), 'lattice-rf2-'));
      cpSync(FIXTURE, dir, { recursive: true });
      const terminology = join(dir, 'Snapshot', 'Terminology');
      for (const name of readdirSync(terminology)) {
        const file = join(terminology, name);
        if (/^sct2_Relationship_Snapshot/.test(name)) {
          const kept = readFileSync(file, 'utf8').split('\n').filter((line) => !line.includes(`\t${MODULE}\t138875005\t0\t116680003\t`));
          writeFileSync(file, kept.join('\n'));
        }
        if (/^sct2_Concept_/.test(name)) {
          active = readFileSync(file, 'utf8').split(/\r?\n/).slice(1).filter(Boolean).map((l) => l.split('\t')).filter((f) => f[2] === '1').map((f) => f[0]).sort();
        }
      }
      await importRf2(dir, server.app, { out: quiet() });
    });
    after(async () => {
      await server?.stop();
      rmSync(dir, { recursive: true, force: true });
    });

    const expandEcl = (ecl: string) =>
      server.fhir<Expansion & OperationOutcome>('POST', '/ValueSet/$expand', {
        body: { resourceType: 'Parameters', parameter: [{ name: 'valueSet', resource: { resourceType: 'ValueSet', status: 'active', compose: { include: [{ system: SCT, filter: [{ property: 'constraint', op: '=', value: ecl }] }] } } }] },
      });

    test('`*` holds the concepts of the hierarchy: not an active concept with no is-a path to the root, which stays a code of the system', async () => {
      const star = await expandEcl('*');
      assert.equal(star.status, 200, star.text);
      const codes = (star.body.expansion?.contains ?? []).map((c) => c.code).sort();
      assert.deepEqual(codes, active.filter((c) => c !== MODULE));
      assert.equal(star.body.expansion?.total, active.length - 1);
      const all = await server.fhir<Expansion>('GET', `/ValueSet/$expand?url=${encodeURIComponent(`${SCT}?fhir_vs`)}&count=0`);
      assert.ok((all.body.expansion?.total ?? 0) >= active.length, all.text);
      const member = await server.fhir<{ parameter?: Array<{ name: string; valueBoolean?: boolean }> }>(
        'GET', `/ValueSet/$validate-code?url=${encodeURIComponent(`${SCT}?fhir_vs=ecl/*`)}&system=${SCT}&code=${MODULE}`,
      );
      assert.equal(member.body.parameter?.find((p) => p.name === 'result')?.valueBoolean, false, member.text);
    });

    test('a concept the edition does not know is an error naming it, not an empty expansion', async () => {
      const res = await expandEcl('<< 1002007 OR << 99999003');
      assert.equal(res.status, 400, res.text);
      assert.equal(res.body.issue?.[0]?.details?.text, "Unknown concept '99999003' in the ECL '<< 1002007 OR << 99999003'");
      assert.deepEqual(res.body.issue?.[0]?.expression, ['ValueSet.compose.include[0].filter[0]']);
    });

    test('an error in an implicit value set carries no expression into a compose the caller did not write', async () => {
      for (const path of ['/ValueSet/$expand?url=', `/ValueSet/$validate-code?system=${SCT}&code=1002007&url=`]) {
        const res = await server.fhir<OperationOutcome>('GET', `${path}${encodeURIComponent(`${SCT}?fhir_vs=ecl/<< 1002007 :`)}`);
        assert.equal(res.status, 400, res.text);
        assert.equal(res.body.issue?.[0]?.details?.text, "Invalid ECL '<< 1002007 :': expected a concept reference, '(' or '*' at 12");
        assert.equal(res.body.issue?.[0]?.expression, undefined, res.text);
      }
    });
  });
}
