import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { generateSnomedLike, SNOMED_LIKE_URL, writeNdjson, type SnomedLike } from '../bench/snomed-like.js';
import { projectRoot } from '../src/paths.js';
import { drivers, startServer, type TestServer, sharedStorage } from './harness.js';
import { killImportWhen, latticeArgs } from './support/cli.js';

/**
 * Atomic imports (docs/terminology.md#atomic-imports), as a fault test: `lattice import` of a
 * new version of a large code system is killed with SIGKILL while it runs; the previous version
 * must answer exactly as before (also to lookups that name no version), the new one must not
 * exist, and the next run must succeed and clean up what the killed one left.
 */

/** The first request builds the in-memory index; on a busy test machine that may exceed the default request time limit. */
const NO_TIME_LIMIT = { LATTICE_DB_STATEMENT_TIMEOUT: '0' };

/** LATTICE_TX_STAGED_IMPORT_ABOVE of the imports. */
const STAGED_ABOVE = 5_000;

const cli = (args: string[], env: NodeJS.ProcessEnv) =>
  spawnSync(process.execPath, latticeArgs('import', ...args), { cwd: projectRoot, env, encoding: 'utf8' });

/** What the server answers for a few codes, without naming a version. */
async function answers(server: TestServer, m: SnomedLike): Promise<string[]> {
  const out: string[] = [];
  for (const i of [1, 50, 5000, m.size - 1]) {
    const res = await server.fhir('GET', `/CodeSystem/$lookup?system=${SNOMED_LIKE_URL}&code=${m.codes[i]}`);
    const get = (name: string) => res.body.parameter?.find((p: { name: string }) => p.name === name);
    out.push(`${res.status} ${get('version')?.valueString} ${get('display')?.valueString}`);
  }
  const parentOfLast = m.parents[m.parentStart[m.size - 1]];
  const sub = await server.fhir('GET', `/CodeSystem/$subsumes?system=${SNOMED_LIKE_URL}&codeA=${m.codes[parentOfLast]}&codeB=${m.codes[m.size - 1]}`);
  out.push(`${sub.status} ${sub.body.parameter?.[0]?.valueCode}`);
  return out;
}

for (const driver of drivers) {
  describe(`atomic import: kill -9 during lattice import (${driver})`, () => {
    test('the previous version stays intact and answers unchanged; a re-run succeeds and cleans up', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'lattice-atomic-'));
      try {
        // Imports above STAGED_ABOVE concepts take the staged path (the 20,000 default, lowered
        // so the test imports 30,000 concepts per driver instead of 81,000). Version 1: large
        // enough for it. Version 2: other displays, and big enough that the kill lands while it
        // is still being imported.
        const v1 = generateSnomedLike(STAGED_ABOVE + 1_000);
        const v2 = generateSnomedLike(STAGED_ABOVE * 2 + 2_000, 7);
        await writeNdjson(v1, join(dir, 'v1.ndjson'), '1');
        await writeNdjson(v2, join(dir, 'v2.ndjson'), '2');
        const { storage, env } = await sharedStorage(driver, dir, { LATTICE_DB_STATEMENT_TIMEOUT: '0', LATTICE_TX_STAGED_IMPORT_ABOVE: String(STAGED_ABOVE) });
        const first = cli([join(dir, 'v1.ndjson')], env);
        assert.equal(first.status, 0, first.stderr);

        let server = await startServer(driver, { ...storage, env: NO_TIME_LIMIT });
        const before = await answers(server, v1);
        assert.match(before[0], /^200 1 /);
        await server.stop();

        // Kill the import of version 2 once it has read half its file (progress is printed per
        // 2,000-concept batch, after the batch is written): past STAGED_ABOVE (5,000 of 12,000),
        // so its staged index exists and is being filled, with half the concepts still to come.
        const killed = await killImportWhen([join(dir, 'v2.ndjson')], env, /\] ([5-9]\d)% [\d,]+\/[\d,]+ bytes/);
        assert.equal(killed.signal, 'SIGKILL', `the import ended before it could be killed:\n${killed.stderr}`);

        server = await startServer(driver, { ...storage, env: NO_TIME_LIMIT });
        try {
          assert.deepEqual(await answers(server, v1), before);
          const v2lookup = await server.fhir('GET', `/CodeSystem/$lookup?system=${SNOMED_LIKE_URL}&version=2&code=${v2.codes[1]}`);
          assert.equal(v2lookup.status, 404, v2lookup.text);
          const remains = await server.app.db.query<{ n: number }>("SELECT count(*)::int AS n FROM tx_code_system WHERE scope LIKE 'staging %'");
          assert.equal(remains.rows[0].n, 1, 'the killed import left its (invisible) staging index');
        } finally {
          await server.stop();
        }

        const rerun = cli([join(dir, 'v2.ndjson')], env);
        assert.equal(rerun.status, 0, rerun.stderr);
        assert.match(rerun.stdout, new RegExp(`imported 3 resources \\(1 CodeSystems, 2 ValueSets, ${v2.size} concepts`));

        server = await startServer(driver, { ...storage, env: NO_TIME_LIMIT });
        try {
          const latest = await answers(server, v2);
          assert.match(latest[0], /^200 2 /);
          assert.equal(latest.at(-1), '200 subsumes');
          const v1lookup = await server.fhir('GET', `/CodeSystem/$lookup?system=${SNOMED_LIKE_URL}&version=1&code=${v1.codes[50]}`);
          assert.equal(v1lookup.status, 200, 'version 1 is still there beside version 2');
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
