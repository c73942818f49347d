import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { projectRoot } from '../src/paths.js';
import { importLoinc } from '../src/terminology/store/loinc-import.js';
import { drivers, startServer, type TestServer } from './harness.js';

/**
 * A LOINC import checks what it reads (docs/terminology.md#checks-on-release-files, issue 32
 * finding 7), on copies of the fixture: a Loinc.csv cut in the middle of a row, one with a NUL
 * character, one with bytes that are not UTF-8 — each refused naming the file and line, nothing
 * imported. Before: the cut file imported the rows it still had (the last one with empty
 * fields), the NUL failed in the database, the bad bytes became U+FFFD.
 */

const FIXTURE = join(projectRoot, 'test', 'fixtures', 'loinc');
const TABLE = join('Loinc_1.01', 'LoincTable', 'Loinc.csv');
const quiet = () => new Writable({ write: (_c, _e, done) => done() });

for (const driver of drivers) {
  describe(`LOINC release checks (${driver})`, () => {
    let server: TestServer;
    let scratch: string;
    let n = 0;
    const spoiled = (change: (content: Buffer) => Buffer) => {
      const folder = join(scratch, `release-${n++}`);
      cpSync(FIXTURE, folder, { recursive: true });
      writeFileSync(join(folder, TABLE), change(readFileSync(join(folder, TABLE))));
      return join(folder, 'Loinc_1.01');
    };
    const lines = readFileSync(join(FIXTURE, TABLE), 'utf8').trimEnd().split(/\r?\n/);
    before(async () => {
      server = await startServer(driver);
      scratch = mkdtempSync(join(tmpdir(), 'lattice-loinc-checks-'));
    });
    after(async () => {
      await server.stop();
      rmSync(scratch, { recursive: true, force: true });
    });
    const load = (folder: string) => importLoinc(folder, server.app, { out: quiet() });
    const nothingImported = async () => {
      const res = await server.fhir('GET', '/CodeSystem?url=http://loinc.org');
      assert.equal(res.body.total ?? res.body.entry?.length ?? 0, 0, res.text.slice(0, 300));
    };

    test('a Loinc.csv cut in the middle of a row: refused naming the file and line', async () => {
      const folder = spoiled((c) => c.subarray(0, c.toString('utf8').trimEnd().length - lines[lines.length - 1].length / 2));
      await assert.rejects(load(folder), (err: Error) => {
        assert.match(err.message, new RegExp(`^LoincTable/Loinc\\.csv line ${lines.length}: (\\d+ fields where the header has \\d+|a quoted field is not closed at the end of the file) \\(is the file cut short\\?\\)$`));
        return true;
      });
      await nothingImported();
    });

    test('a NUL character or bytes that are not UTF-8: refused naming the file and line', async () => {
      const at = (content: Buffer) => content.indexOf('\n', content.indexOf('\n') + 1) + 2; // inside line 3
      const put = (bytes: number[]) => (c: Buffer) => Buffer.concat([c.subarray(0, at(c)), Buffer.from(bytes), c.subarray(at(c))]);
      await assert.rejects(load(spoiled(put([0]))), { message: 'LoincTable/Loinc.csv line 3: the line holds a NUL character' });
      await assert.rejects(load(spoiled(put([0xff, 0xfe]))), { message: 'LoincTable/Loinc.csv line 3: the line is not valid UTF-8' });
      await nothingImported();
    });
  });
}
