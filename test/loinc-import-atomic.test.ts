import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { partCode, termCode, writeLoincLike } from '../bench/loinc-like.js';
import { projectRoot } from '../src/paths.js';
import { drivers, startServer, type TestServer, sharedStorage } from './harness.js';
import { killImportWhen, latticeArgs } from './support/cli.js';

/**
 * A killed LOINC import (docs/terminology.md#loinc, #atomic-imports): `lattice import --format
 * loinc` of a new version is killed with SIGKILL once its index is staged and before it is
 * switched in; the previous version answers exactly as before, the new one does not exist, and
 * the next run succeeds and removes what the killed one left.
 */

const LOINC = 'http://loinc.org';
const NO_TIME_LIMIT = { LATTICE_DB_STATEMENT_TIMEOUT: '0' };
/** LATTICE_TX_STAGED_IMPORT_ABOVE of the imports (the made-up release has about 6,500 codes). */
const STAGED_ABOVE = 5_000;

async function answers(server: TestServer, version?: string): Promise<string[]> {
  const out: string[] = [];
  const v = version ? `&version=${version}` : '';
  for (const code of [termCode(0), termCode(2999), partCode(10)]) {
    const res = await server.fhir('GET', `/CodeSystem/$lookup?system=${LOINC}&code=${code}${v}`);
    const get = (name: string) => res.body.parameter?.find((p: { name: string }) => p.name === name);
    out.push(`${res.status} ${get('version')?.valueString} ${get('display')?.valueString}`);
  }
  return out;
}

for (const driver of drivers) {
  describe(`atomic LOINC import: kill -9 during lattice import --format loinc (${driver})`, () => {
    test('the previous version stays intact; a re-run succeeds and cleans up', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'lattice-loinc-atomic-'));
      try {
        const release = writeLoincLike(dir, { terms: 3_000, parts: 3_000, languages: 2, answerLists: 100 }, '9.1');
        const { storage, env } = await sharedStorage(driver, dir, { LATTICE_DB_STATEMENT_TIMEOUT: '0', LATTICE_TX_STAGED_IMPORT_ABOVE: String(STAGED_ABOVE) });
        const first = spawnSync(process.execPath, latticeArgs('import', '--format', 'loinc', release), { cwd: projectRoot, env, encoding: 'utf8' });
        assert.equal(first.status, 0, first.stderr);

        let server = await startServer(driver, { ...storage, env: NO_TIME_LIMIT });
        const before = await answers(server);
        assert.match(before[0], /^200 9\.1 Part \d+ \w+ \[Part \d+ \w+\] in Part/);
        await server.stop();

        // Version 9.2 of the same release: killed once its index is staged (the hierarchy is
        // being written), before the switch.
        const killed = await killImportWhen(['--format', 'loinc', '--version', '9.2', release], env, /concepts\) hierarchy \[/);
        assert.equal(killed.signal, 'SIGKILL', `the import ended before it could be killed:\n${killed.stderr}`);

        server = await startServer(driver, { ...storage, env: NO_TIME_LIMIT });
        try {
          assert.deepEqual(await answers(server), before);
          const v2 = await server.fhir('GET', `/CodeSystem/$lookup?system=${LOINC}&version=9.2&code=${termCode(0)}`);
          assert.equal(v2.status, 404, v2.text);
          const remains = await server.app.db.query<{ n: number }>("SELECT count(*)::int AS n FROM tx_code_system WHERE scope LIKE 'staging %'");
          assert.equal(remains.rows[0].n, 1, 'the killed import left its (invisible) staging index');
        } finally {
          await server.stop();
        }

        const rerun = spawnSync(process.execPath, latticeArgs('import', '--format', 'loinc', '--version', '9.2', release), { cwd: projectRoot, env, encoding: 'utf8' });
        assert.equal(rerun.status, 0, rerun.stderr);
        server = await startServer(driver, { ...storage, env: NO_TIME_LIMIT });
        try {
          const latest = await answers(server);
          assert.deepEqual(latest, before.map((a) => a.replace(' 9.1 ', ' 9.2 ')));
          assert.deepEqual(await answers(server, '9.1'), before, 'version 9.1 is still there beside 9.2');
          const remains = await server.app.db.query<{ n: number }>("SELECT count(*)::int AS n FROM tx_code_system WHERE scope LIKE 'staging %' OR scope = 'discarded'");
          assert.equal(remains.rows[0].n, 0, 'the re-run removed the remains');
        } finally {
          await server.stop();
        }
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });
}
