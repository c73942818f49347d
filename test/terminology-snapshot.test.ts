import assert from 'node:assert/strict';
import { copyFileSync, cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { Writable } from 'node:stream';
import { describe, test } from 'node:test';
import { projectRoot } from '../src/paths.js';
import { importRf2 } from '../src/terminology/store/rf2-import.js';
import { terminologyCache } from '../src/terminology/providers/fhir/index-cache.js';
import { snapshotFolder } from '../src/terminology/providers/fhir/index-snapshot.js';
import { drivers, sharedStorage, startServer, type StartOptions, type TestServer } from './harness.js';

/**
 * Persisted in-memory indexes (docs/terminology.md#persisted-indexes): an import persists the
 * index and the SNOMED CT graph it builds; a restarted server answers its first `$lookup`,
 * `$subsumes`, ECL `$expand` and `$validate-code` from them (the log says `source: snapshot`,
 * nothing is built from the tables) with the answers a build from the tables gives; a corrupted
 * or outdated snapshot is rebuilt from the tables (logged) and written again; a new import
 * replaces it.
 */

const SCT = 'http://snomed.info/sct';
const FIXTURE = join(projectRoot, 'test', 'fixtures', 'rf2');
const quiet = () => new Writable({ write: (_c, _e, done) => done() });

type Line = { msg?: string; url?: string; source?: string; from?: string; reason?: string; level?: number };
const parsed = (lines: string[]): Line[] => lines.map((l) => JSON.parse(l) as Line);
/** `<message> <source>` of the SNOMED CT load lines. */
const loads = (lines: string[]) =>
  parsed(lines)
    .filter((l) => l.url === SCT && /loaded$/.test(l.msg ?? ''))
    .map((l) => `${l.msg} ${l.source}`)
    .sort();
/** Where the index's snapshots were read from (`file` / `database`), then the graph's, each in the order of the log. */
const sources = (lines: string[]) =>
  ['terminology index loaded', 'SNOMED CT graph loaded'].flatMap((msg) =>
    parsed(lines)
      .filter((l) => l.url === SCT && l.msg === msg)
      .map((l) => l.from),
  );
const unusable = (lines: string[]) =>
  parsed(lines)
    .filter((l) => l.url === SCT && /snapshot unusable/.test(l.msg ?? ''))
    .map((l) => `${l.msg}: ${l.reason}`)
    .sort();

/** The first answers after a start: lookup (display, designations, properties), subsumes, ECL, validate-code. */
async function answers(server: TestServer): Promise<string[]> {
  const lookup = await server.fhir('GET', `/CodeSystem/$lookup?system=${SCT}&code=1008006&property=*`);
  const subsumes = await server.fhir('GET', `/CodeSystem/$subsumes?system=${SCT}&codeA=1002007&codeB=1010008`);
  const ecl = await server.fhir('GET', `/ValueSet/$expand?url=${encodeURIComponent(`${SCT}?fhir_vs=ecl/<< 1002007 : 1007001 = 1004008`)}`);
  const dialect = await server.fhir('GET', `/ValueSet/$expand?url=${encodeURIComponent(`${SCT}?fhir_vs=ecl/< 1002007 {{ D term = "tumour", dialect = en-gb (prefer) }}`)}`);
  const member = await server.fhir('GET', `/ValueSet/$validate-code?url=${encodeURIComponent(`${SCT}?fhir_vs=ecl/^ 1017006`)}&system=${SCT}&code=1009003`);
  const strip = (body: { meta?: unknown; id?: unknown; expansion?: { identifier?: string; timestamp?: string } }) => {
    const { meta: _m, id: _i, ...rest } = body;
    if (rest.expansion) rest.expansion = { ...rest.expansion, identifier: undefined, timestamp: undefined };
    return JSON.stringify(rest);
  };
  return [lookup, subsumes, ecl, dialect, member].map((r) => `${r.status} ${strip(r.body)}`);
}

/** A start on `storage` (statement limit off, its log lines collected), `fn`, then the stop. */
async function started<T>(driver: (typeof drivers)[number], storage: StartOptions, fn: (server: TestServer, lines: string[]) => Promise<T>): Promise<T> {
  const lines: string[] = [];
  const server = await startServer(driver, { ...storage, logLines: lines, env: { LATTICE_DB_STATEMENT_TIMEOUT: '0' } });
  try {
    return await fn(server, lines);
  } finally {
    await server.stop();
  }
}

async function sections(server: TestServer): Promise<string[]> {
  const r = await server.app.db.query<{ section: string; current: boolean }>(
    `SELECT s.section, c.resource_id IS NOT NULL AND c.scope IS NULL AS current FROM tx_index_snapshot s JOIN tx_code_system c USING (cs_key) WHERE c.url = $1 ORDER BY 1`,
    [SCT],
  );
  return r.rows.map((x) => `${x.section}${x.current ? '' : ' (not current)'}`);
}

for (const driver of drivers) {
  describe(`persisted terminology indexes (${driver})`, () => {
    test('an import persists; a restart answers from the snapshot; corrupt → rebuilt; a new import replaces it', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'lattice-snapshot-'));
      const folders: string[] = [];
      try {
        const { storage } = await sharedStorage(driver, dir);
        const reference = await started(driver, storage, async (server) => {
          await importRf2(FIXTURE, server.app, { out: quiet() });
          assert.deepEqual(await sections(server), ['index', 'snomed']);
          // The reference: the answers of indexes built from the tables (the snapshot set aside).
          await server.app.db.query('UPDATE tx_index_snapshot SET format = -1');
          terminologyCache(server.app.db).clear();
          const built = await answers(server);
          assert.match(built[0], /^200 .*"Heart illness"/);
          assert.match(built[1], /^200 .*"subsumes"/);
          assert.match(built[2], /^200 .*"1008006".*"1010008"/);
          assert.match(built[3], /^200 .*"1012000"/);
          assert.match(built[4], /^200 .*"result","valueBoolean":true/);
          await terminologyCache(server.app.db).settled();
          return built;
        });

        // Restart: the snapshot the rebuild wrote again is read, nothing is built from the tables.
        await started(driver, storage, async (server, lines) => {
          assert.deepEqual(await answers(server), reference);
          assert.deepEqual(loads(lines), ['SNOMED CT graph loaded snapshot', 'terminology index loaded snapshot']);
          assert.equal(terminologyCache(server.app.db).stats().snapshotLoads, 1);
          // Corruption: a flipped byte in the index, an unknown format in the graph.
          await server.app.db.query("UPDATE tx_index_snapshot_chunk SET data = set_byte(data, 40, (get_byte(data, 40) + 1) % 256) WHERE section = 'index' AND seq = 0");
          // And its file copy (PGlite: beside the data folder; PostgreSQL: one folder per database).
          const folder = snapshotFolder(server.config);
          assert.equal(folder, driver === 'pglite' ? `${storage.dataDir}-tx-index` : folder && join(tmpdir(), 'lattice-tx-index', basename(folder)));
          folders.push(folder as string);
          const files = readdirSync(folder as string).filter((f) => f.endsWith('.snapshot'));
          assert.deepEqual(files.map((f) => f.replace(/^\d+/, '')).sort(), ['.index.snapshot', '.snomed.snapshot']);
          const index = join(folder as string, files.find((f) => f.endsWith('.index.snapshot')) as string);
          const bytes = readFileSync(index);
          bytes[40] = (bytes[40] + 1) % 256;
          writeFileSync(index, bytes);
          await server.app.db.query("UPDATE tx_index_snapshot SET format = format + 100 WHERE section = 'snomed'");
        });

        await started(driver, storage, async (server, lines) => {
          assert.deepEqual(await answers(server), reference);
          assert.deepEqual(loads(lines), ['SNOMED CT graph loaded tables', 'terminology index loaded tables']);
          assert.equal(unusable(lines).length, 2, unusable(lines).join('\n'));
          assert.match(unusable(lines).join('\n'), /checksum mismatch/);
          assert.match(unusable(lines).join('\n'), /format 10\d/);
          await terminologyCache(server.app.db).settled();
        });

        // Written again by the rebuild: the next start reads it (from the file copy).
        const [graph, index] = await started(driver, storage, async (server, lines) => {
          assert.deepEqual(await answers(server), reference);
          assert.deepEqual(loads(lines), ['SNOMED CT graph loaded snapshot', 'terminology index loaded snapshot']);
          assert.deepEqual(sources(lines), ['file', 'file']);
          const folder = snapshotFolder(server.config) as string;
          const files = readdirSync(folder).filter((f) => f.endsWith('.snapshot'));
          return ['.snomed.snapshot', '.index.snapshot'].map((end) => join(folder, files.find((f) => f.endsWith(end)) as string));
        });

        // A stale file copy — a valid snapshot, but not the one the database's header describes — is not read.
        copyFileSync(graph, index);
        await started(driver, storage, async (server, lines) => {
          assert.deepEqual(await answers(server), reference);
          assert.deepEqual(loads(lines), ['SNOMED CT graph loaded snapshot', 'terminology index loaded snapshot']);
          assert.deepEqual(sources(lines), ['database', 'file']);
        });

        // A part changed in the file, its head intact: the index opens, the background read of
        // its ancestors finds the part is not the one written, drops the index and removes the
        // file; the next question reads the database's copy (and writes the file again).
        const bytes = readFileSync(index);
        const headerLength = bytes.readUInt32LE(0);
        const header = JSON.parse(bytes.subarray(4, 4 + headerLength).toString('utf8')) as { parts: Array<{ name: string; offset: number }> };
        const at = ((4 + headerLength + 7) & ~7) + (header.parts.find((p) => p.name === 'ancestorList')?.offset ?? NaN);
        bytes[at] ^= 1;
        writeFileSync(index, bytes);
        await started(driver, storage, async (server, lines) => {
          const first = await server.fhir('GET', `/CodeSystem/$lookup?system=${SCT}&code=1008006&property=*`);
          assert.equal(first.status, 200);
          await terminologyCache(server.app.db).settled();
          assert.match(unusable(lines).join('\n'), /checksum mismatch in part ancestorList/);
          assert.deepEqual(await answers(server), reference);
          assert.deepEqual(sources(lines), ['file', 'database', 'file', 'file']);

          // A new import of the same edition version (a term changed): its own snapshot replaces the old one.
          const next = join(dir, 'next');
          cpSync(FIXTURE, next, { recursive: true });
          const walk = (d: string): string[] => readdirSync(d, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(d, e.name)) : [join(d, e.name)]));
          for (const file of walk(next)) if (/sct2_Description/.test(file)) writeFileSync(file, readFileSync(file, 'utf8').replace('\tHeart illness\t', '\tHeart sickness\t'));
          await importRf2(next, server.app, { out: quiet() });
          assert.deepEqual(await sections(server), ['index', 'snomed']);
        });

        await started(driver, storage, async (server, lines) => {
          // The changed term, and otherwise the same answers.
          assert.deepEqual(await answers(server), reference.map((a) => a.replaceAll('"Heart illness"', '"Heart sickness"')));
          assert.notDeepEqual(reference.map((a) => a.replaceAll('"Heart illness"', '"Heart sickness"')), reference);
          assert.deepEqual(loads(lines), ['SNOMED CT graph loaded snapshot', 'terminology index loaded snapshot']);
        });
      } finally {
        rmSync(dir, { recursive: true, force: true });
        for (const folder of folders) rmSync(folder, { recursive: true, force: true });
      }
    });
  });
}
