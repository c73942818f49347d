import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { generateSnomedLike } from '../bench/snomed-like.js';
import { writeRf2, type Rf2Release } from '../bench/snomed-rf2.js';
import { projectRoot } from '../src/paths.js';
import { drivers, startServer, type TestServer, sharedStorage } from './harness.js';
import { killImportWhen, latticeArgs } from './support/cli.js';

/**
 * An RF2 import is atomic (docs/terminology.md#snomed-ct, #atomic-imports): `lattice import
 * --format rf2` of a new edition version, killed with SIGKILL while it reads the descriptions,
 * leaves the loaded version answering exactly as before (also without a version), the new one
 * absent; the next run succeeds, becomes the newest, and removes what the killed one left.
 */

const NO_TIME_LIMIT = { LATTICE_DB_STATEMENT_TIMEOUT: '0' };
const SCT = 'http://snomed.info/sct';

const cli = (args: string[], env: NodeJS.ProcessEnv) => spawnSync(process.execPath, latticeArgs('import', ...args), { cwd: projectRoot, env, encoding: 'utf8' });

async function answers(server: TestServer, r: Rf2Release): Promise<string[]> {
  const out: string[] = [];
  for (const i of [1, 50, 999]) {
    const res = await server.fhir('GET', `/CodeSystem/$lookup?system=${SCT}&code=${r.ids[i]}`);
    const get = (name: string) => res.body.parameter?.find((p: { name: string }) => p.name === name);
    out.push(`${res.status} ${get('version')?.valueString} ${get('display')?.valueString}`);
  }
  // The hierarchy (the release has no concept row for |is a| itself; its relationships still
  // count): 999's ancestor three levels up (first parents: 808, 355, 228 in this model).
  const sub = await server.fhir('GET', `/CodeSystem/$subsumes?system=${SCT}&codeA=${r.ids[228]}&codeB=${r.ids[999]}`);
  out.push(`${sub.status} ${sub.body.parameter?.[0]?.valueCode}`);
  return out;
}

for (const driver of drivers) {
  describe(`atomic RF2 import: kill -9 during lattice import --format rf2 (${driver})`, () => {
    test('the loaded version stays intact; a re-run succeeds and cleans up', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'lattice-rf2-atomic-'));
      try {
        const v1 = await writeRf2(generateSnomedLike(2_000), join(dir, 'v1'), { date: '20240131' });
        const v2 = await writeRf2(generateSnomedLike(30_000, 7), join(dir, 'v2'), { date: '20250131' });
        const { storage, env } = await sharedStorage(driver, dir, { LATTICE_DB_STATEMENT_TIMEOUT: '0' });
        const first = cli(['--format', 'rf2', v1.folder], env);
        assert.equal(first.status, 0, first.stderr);
        // 2,000 model concepts, the module and the refset concept.
        assert.match(first.stdout, /imported 1 resources \(1 CodeSystems, 0 ValueSets, 2002 concepts; 0 skipped\)/);
        const v1Uri = `http://snomed.info/sct/${v1.module}/version/20240131`;

        let server = await startServer(driver, { ...storage, env: NO_TIME_LIMIT });
        let before: string[];
        try {
          before = await answers(server, v1);
          assert.equal(before[1], `200 ${v1Uri} ${generateSnomedLike(2_000).displays[50]}`);
          assert.equal(before[3], '200 subsumes');
        } finally {
          await server.stop();
        }

        // Killed once half the description file is read: the staged index exists and is being filled.
        const killed = await killImportWhen(['--format', 'rf2', v2.folder], env, /sct2_Description\S* \[[#.]+\] ([5-9]\d)%/);
        assert.equal(killed.signal, 'SIGKILL', `the import ended before it could be killed:\n${killed.stderr}`);

        const v2Uri = `http://snomed.info/sct/${v2.module}/version/20250131`;
        server = await startServer(driver, { ...storage, env: NO_TIME_LIMIT });
        try {
          assert.deepEqual(await answers(server, v1), before);
          const missing = await server.fhir('GET', `/CodeSystem/$lookup?system=${SCT}&version=${v2Uri}&code=${v2.ids[1]}`);
          assert.equal(missing.status, 404, missing.text);
          const remains = await server.app.db.query<{ n: number }>("SELECT count(*)::int AS n FROM tx_code_system WHERE scope LIKE 'staging %'");
          assert.equal(remains.rows[0].n, 1, 'the killed import left its (invisible) staging index');
        } finally {
          await server.stop();
        }

        const rerun = cli(['--format', 'rf2', v2.folder], env);
        assert.equal(rerun.status, 0, rerun.stderr);
        server = await startServer(driver, { ...storage, env: NO_TIME_LIMIT });
        try {
          const latest = await server.fhir('GET', `/CodeSystem/$lookup?system=${SCT}&code=${v2.ids[50]}`);
          assert.equal(latest.body.parameter?.find((p: { name: string }) => p.name === 'version')?.valueString, v2Uri);
          const old = await server.fhir('GET', `/CodeSystem/$lookup?system=${SCT}&version=${v1Uri}&code=${v1.ids[50]}`);
          assert.equal(old.status, 200, 'the first version is still there beside the second');
          const remains = await server.app.db.query<{ n: number }>("SELECT count(*)::int AS n FROM tx_code_system WHERE scope LIKE 'staging %' OR scope = 'discarded'");
          assert.equal(remains.rows[0].n, 0, 'the re-run removed the remains');
          const orphans = await server.app.db.query<{ n: number }>('SELECT count(*)::int AS n FROM tx_sct_relationship r WHERE NOT EXISTS (SELECT 1 FROM tx_code_system c WHERE c.cs_key = r.cs_key)');
          assert.equal(orphans.rows[0].n, 0, 'no SNOMED CT rows of the killed import are left');
        } finally {
          await server.stop();
        }
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });
}
