import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { describe, test } from 'node:test';
import { projectRoot } from '../src/paths.js';
import { importLoinc } from '../src/terminology/store/loinc-import.js';
import { importRf2 } from '../src/terminology/store/rf2-import.js';
import { terminologyCache } from '../src/terminology/providers/fhir/index-cache.js';
import { snapshotFolder } from '../src/terminology/providers/fhir/index-snapshot.js';
import { drivers, sharedStorage, startServer, type StartOptions, type TestServer } from './harness.js';

/**
 * The first answers after a restart (docs/terminology.md#persisted-indexes): an index opened
 * from its file copy reads its properties and designations — the largest parts — in the
 * background; the questions that need those of a few concepts (`$lookup`, a page of an
 * expansion with its displays and designations, `$validate-code` of a display) do not wait for
 * that read: with it held, they are answered (from the database's rows), and their answers are
 * those the index gives once the parts are read. For a SNOMED CT edition and for LOINC. And by
 * default (LATTICE_TX_PRELOAD unset) a start opens them before the first question.
 */

const SCT = 'http://snomed.info/sct';
const LOINC = 'http://loinc.org';
const quiet = () => new Writable({ write: (_c, _e, done) => done() });

/** The questions, each answer as `status body` (an expansion's identifier and timestamp left out). */
async function questions(server: TestServer): Promise<string[]> {
  const ecl = (e: string) => encodeURIComponent(`${SCT}?fhir_vs=ecl/${e}`);
  const asked = [
    `/CodeSystem/$lookup?system=${SCT}&code=1008006&property=*`,
    `/CodeSystem/$subsumes?system=${SCT}&codeA=1001000&codeB=1010008`,
    `/CodeSystem/$subsumes?system=${SCT}&codeA=1010008&codeB=1002007`,
    `/CodeSystem/$subsumes?system=${SCT}&codeA=1010008&codeB=1012000`,
    `/ValueSet/$expand?url=${ecl('<< 1002007')}&includeDesignations=true&count=10`,
    `/ValueSet/$expand?url=${ecl('<< 1002007 : 1007001 = 1004008')}&displayLanguage=en-GB`,
    `/ValueSet/$validate-code?url=${ecl('<< 1002007')}&system=${SCT}&code=1008006&display=${encodeURIComponent('Cardiac illness')}`,
    `/CodeSystem/$validate-code?url=${SCT}&code=1008006&display=${encodeURIComponent('Heart illness NOS')}`,
    `/ValueSet/$expand?url=${encodeURIComponent(`${LOINC}/vs`)}&includeDesignations=true&count=5`,
    `/CodeSystem/$lookup?system=${LOINC}&code=90001-9`,
  ];
  const out: string[] = [];
  for (const path of asked) {
    const r = await server.fhir('GET', path);
    const { meta: _m, id: _i, ...body } = r.body as { meta?: unknown; id?: unknown; expansion?: Record<string, unknown> };
    if (body.expansion) body.expansion = { ...body.expansion, identifier: undefined, timestamp: undefined };
    out.push(`${r.status} ${JSON.stringify(body)}`);
  }
  return out;
}

/** The kept indexes of the current SNOMED CT edition and LOINC version (after a question about each). */
async function indexes(server: TestServer) {
  const keys = await server.app.db.query<{ cs_key: number; url: string }>(
    'SELECT cs_key, url FROM tx_code_system WHERE url = ANY($1::text[]) AND resource_id IS NOT NULL AND scope IS NULL ORDER BY url',
    [[SCT, LOINC]],
  );
  assert.deepEqual(keys.rows.map((r) => r.url), [LOINC, SCT]);
  return keys.rows.map((r) => {
    const index = terminologyCache(server.app.db).peek(r.cs_key);
    assert.ok(index, `the index of ${r.url} is kept`);
    return index;
  });
}

async function started<T>(driver: (typeof drivers)[number], storage: StartOptions, fn: (server: TestServer, lines: string[]) => Promise<T>, env: Record<string, string> = {}): Promise<T> {
  const lines: string[] = [];
  // The LOINC fixture (25 concepts) imported as a large code system is, whose index is persisted.
  // Opened on first use (LATTICE_TX_PRELOAD=none), unless `env` says otherwise.
  const server = await startServer(driver, { ...storage, logLines: lines, env: { LATTICE_DB_STATEMENT_TIMEOUT: '0', LATTICE_TX_STAGED_IMPORT_ABOVE: '10', LATTICE_TX_PRELOAD: 'none', ...env } });
  try {
    return await fn(server, lines);
  } finally {
    await server.stop();
  }
}

for (const driver of drivers) {
  describe(`first answers from a persisted index (${driver})`, () => {
    test('a $lookup, $subsumes, ECL $expand and $validate-code answered while the properties, ancestors and designations are not yet read equal the answers once they are', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'lattice-snapshot-first-'));
      let folder: string | undefined;
      try {
        const { storage } = await sharedStorage(driver, dir);
        await started(driver, storage, async (server) => {
          await importRf2(join(projectRoot, 'test', 'fixtures', 'rf2'), server.app, { out: quiet() });
          await importLoinc(join(projectRoot, 'test', 'fixtures', 'loinc'), server.app, { out: quiet() });
          folder = snapshotFolder(server.config);
        });

        await started(driver, storage, async (server, lines) => {
          const cache = terminologyCache(server.app.db);
          let release = () => {};
          cache.holdBackgroundReads(new Promise<void>((resolve) => (release = resolve)));
          // LOINC's expansion first: it waits for the index to open (its point reads answer from SQL before that).
          const first = await questions(server);
          const opened = await indexes(server);
          // Opened from the file copies, their designations held back: the answers did not read them.
          const opens = lines.filter((l) => /terminology index loaded/.test(l));
          assert.deepEqual(opens.map((l) => (JSON.parse(l) as { from?: string }).from), ['file', 'file'], opens.join('\n'));
          const groups = (i: (typeof opened)[number]) => `properties ${i.loaded('properties')}, ancestors ${i.loaded('ancestors')}, designations ${i.loaded('designations')}`;
          assert.deepEqual(opened.map(groups), ['properties false, ancestors false, designations false', 'properties false, ancestors false, designations false']);
          release();
          await cache.settled();
          assert.deepEqual(opened.map(groups), ['properties true, ancestors true, designations true', 'properties true, ancestors true, designations true']);
          const warm = await questions(server);
          assert.deepEqual(first, warm);
          assert.match(warm[0], /^200 .*"Heart illness \(disorder\)".*"Cardiac illness"/);
          assert.deepEqual(warm.slice(1, 4).map((a) => /"valueCode":"([a-z-]+)"/.exec(a)?.[1]), ['subsumes', 'subsumed-by', 'not-subsumed']);
          assert.match(warm[4], /^200 .*"designation"/);
          assert.match(warm[6], /^200 .*"result","valueBoolean":true/);
          assert.match(warm[8], /^200 .*"designation"/);
          assert.match(warm[9], /^200 .*"Zorbium \[Mass\/volume\] in Blood"/);
        });
      } finally {
        rmSync(dir, { recursive: true, force: true });
        if (folder) rmSync(folder, { recursive: true, force: true });
      }
    });

    test('by default a start opens the persisted indexes before any question: the first questions find them open', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'lattice-snapshot-start-'));
      let folder: string | undefined;
      try {
        const { storage } = await sharedStorage(driver, dir);
        const reference = await started(driver, storage, async (server) => {
          await importRf2(join(projectRoot, 'test', 'fixtures', 'rf2'), server.app, { out: quiet() });
          await importLoinc(join(projectRoot, 'test', 'fixtures', 'loinc'), server.app, { out: quiet() });
          folder = snapshotFolder(server.config);
          return questions(server);
        });

        await started(
          driver,
          storage,
          async (server, lines) => {
            const opened = () => lines.map((l) => JSON.parse(l) as { msg?: string; url?: string; source?: string }).filter((l) => /^(terminology index|SNOMED CT graph) loaded$/.test(l.msg ?? ''));
            // Nothing asked yet: the start opens SNOMED CT (index and graph) and LOINC from their snapshots.
            for (let waited = 0; opened().length < 3; waited += 50) {
              assert.ok(waited < 60_000, `opened at start: ${JSON.stringify(opened())}`);
              await new Promise((resolve) => setTimeout(resolve, 50));
            }
            assert.deepEqual(opened().map((l) => `${l.msg} ${l.url} ${l.source}`).sort(), [
              `SNOMED CT graph loaded ${SCT} snapshot`,
              `terminology index loaded ${LOINC} snapshot`,
              `terminology index loaded ${SCT} snapshot`,
            ]);
            const cache = terminologyCache(server.app.db);
            assert.equal(cache.stats().snapshotLoads, 2);
            assert.equal((await indexes(server)).length, 2);
            // The questions use what the start opened (nothing opened again), with the same answers.
            assert.deepEqual(await questions(server), reference);
            assert.equal(cache.stats().snapshotLoads, 2);
            assert.equal(opened().length, 3);
          },
          { LATTICE_TX_PRELOAD: '' },
        );
      } finally {
        rmSync(dir, { recursive: true, force: true });
        if (folder) rmSync(folder, { recursive: true, force: true });
      }
    });
  });
}
