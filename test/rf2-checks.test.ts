import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { setTimeout as delay } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { projectRoot } from '../src/paths.js';
import { importRf2 } from '../src/terminology/store/rf2-import.js';
import { drivers, ooText, sharedStorage, startServer, type TestServer } from './harness.js';
import { importAsync } from './support/cli.js';
import { zipFolder } from './support/zip.js';

/**
 * An RF2 import checks what it reads (docs/terminology.md#checks-on-release-files, issue 32
 * findings 5 and 7), on copies of the synthetic fixture spoiled one way each: a Concept file cut
 * in the middle of a line or at half its lines, a NUL byte, bytes that are not UTF-8, a line past
 * the bound, a zip member that would inflate a thousand times. Each is refused with a message
 * naming the file and line — by `lattice import` (exit 1, no database error) and through the
 * import route (400, never 500) — and the route's temporary folder is gone afterwards, also
 * when the client leaves in the middle of an upload. Before, all of these imported (the cut
 * files silently, with the concepts they still had), or failed in the database.
 */

const FIXTURE = join(projectRoot, 'test', 'fixtures', 'rf2');
const TERMINOLOGY = join('Snapshot', 'Terminology');
const CONCEPTS = join(TERMINOLOGY, 'sct2_Concept_Snapshot_XX_20240131.txt');
const DESCRIPTIONS = join(TERMINOLOGY, 'sct2_Description_Snapshot-en_XX_20240131.txt');
const quiet = () => new Writable({ write: (_c, _e, done) => done() });

let scratch: string;
let n = 0;
/** A copy of the fixture with one file rewritten. */
function spoiled(file: string, change: (content: Buffer) => Buffer): string {
  const folder = join(scratch, `release-${n++}`);
  cpSync(FIXTURE, folder, { recursive: true });
  writeFileSync(join(folder, file), change(readFileSync(join(folder, file))));
  return folder;
}
const replaced = (from: string, to: Buffer) => (content: Buffer) => {
  const at = content.indexOf(from);
  assert.ok(at >= 0, from);
  return Buffer.concat([content.subarray(0, at), to, content.subarray(at + from.length)]);
};
/** The 1-based line of the first occurrence of `text`. */
const lineOf = (file: string, text: string) => readFileSync(join(FIXTURE, file), 'utf8').split('\n').findIndex((l) => l.includes(text)) + 1;

/** The columns of the last line of a file. */
const columnsLeft = (content: Buffer) => content.toString('utf8').split('\n').pop()?.split('\t').length ?? 0;

/** A framed RF2 upload (rf2-transfer.ts) of one file. */
const framed = (name: string, content: Buffer) => Buffer.concat([Buffer.from(`${content.length} ${name}\n`), content]);

describe('RF2 release checks', () => {
  before(() => {
    scratch = mkdtempSync(join(tmpdir(), 'lattice-rf2-checks-'));
  });
  after(() => rmSync(scratch, { recursive: true, force: true }));

  for (const driver of drivers) {
    describe(`(${driver})`, () => {
      let server: TestServer;
      let uploads: string;
      let savedTmp: string | undefined;
      before(async () => {
        server = await startServer(driver);
        // The route's temporary folders go to a folder of this test's (os.tmpdir() reads TMPDIR).
        uploads = mkdtempSync(join(scratch, 'tmp-'));
        savedTmp = process.env.TMPDIR;
        process.env.TMPDIR = uploads;
      });
      after(async () => {
        if (savedTmp === undefined) delete process.env.TMPDIR;
        else process.env.TMPDIR = savedTmp;
        await server.stop();
      });
      const load = (folder: string) => importRf2(folder, server.app, { out: quiet() });

      test('a Concept file cut in the middle of a line: refused naming the file and line', async () => {
        const lines = readFileSync(join(FIXTURE, CONCEPTS), 'utf8').trimEnd().split('\n');
        const folder = spoiled(CONCEPTS, (c) => c.subarray(0, c.toString('utf8').trimEnd().length - 30));
        const left = columnsLeft(readFileSync(join(folder, CONCEPTS)));
        assert.ok(left < 5);
        await assert.rejects(load(folder), { message: `Snapshot/Terminology/sct2_Concept_Snapshot_XX_20240131.txt line ${lines.length}: ${left} columns where the header has 5 (is the file cut short?)` });
      });

      test('a Concept file cut at half its lines: the first description of a missing concept is refused', async () => {
        const lines = readFileSync(join(FIXTURE, CONCEPTS), 'utf8').trimEnd().split('\n');
        const kept = lines.slice(0, Math.ceil(lines.length / 2));
        const folder = spoiled(CONCEPTS, () => Buffer.from(`${kept.join('\n')}\n`));
        const descriptions = readFileSync(join(FIXTURE, DESCRIPTIONS), 'utf8').trimEnd().split('\n');
        const known = new Set(kept.slice(1).map((l) => l.split('\t')[0]));
        const first = descriptions.findIndex((l, i) => i > 0 && !known.has(l.split('\t')[4]));
        const [id, , , , concept] = descriptions[first].split('\t');
        await assert.rejects(load(folder), {
          message: `Snapshot/Terminology/sct2_Description_Snapshot-en_XX_20240131.txt line ${first + 1}: description ${id} is of concept ${concept}, which no Concept file of the release has`,
        });
      });

      test('invalid UTF-8, and a line past LATTICE_TX_IMPORT_MAX_LINE: refused naming the file and line', async () => {
        const line = lineOf(DESCRIPTIONS, 'Heart illness\t');
        await assert.rejects(load(spoiled(DESCRIPTIONS, replaced('Heart illness\t', Buffer.from([0x48, 0xff, 0xfe, 0x09])))), {
          message: `Snapshot/Terminology/sct2_Description_Snapshot-en_XX_20240131.txt line ${line}: the line is not valid UTF-8`,
        });
        await assert.rejects(load(spoiled(DESCRIPTIONS, replaced('Heart illness\t', Buffer.from(`${'x'.repeat(1_200_000)}\t`)))), {
          message: `Snapshot/Terminology/sct2_Description_Snapshot-en_XX_20240131.txt line ${line}: the line is longer than 1000000 bytes (LATTICE_TX_IMPORT_MAX_LINE)`,
        });
      });

      test('a NUL byte: lattice import prints the file and line and exits 1 (no database error)', async () => {
        const line = lineOf(DESCRIPTIONS, 'Heart illness\t');
        const folder = spoiled(DESCRIPTIONS, replaced('Heart illness\t', Buffer.from('Heart\u0000illness\t')));
        const { env } = await sharedStorage(driver, mkdtempSync(join(scratch, 'cli-')), { LATTICE_DB_STATEMENT_TIMEOUT: '0' });
        const run = await importAsync(['--format', 'rf2', folder], env);
        assert.equal(run.code, 1, run.stderr);
        assert.equal(run.stderr.trim().split('\n').pop(), `${folder}: Snapshot/Terminology/sct2_Description_Snapshot-en_XX_20240131.txt line ${line}: the line holds a NUL byte`);
      });

      test('a zip member that would inflate a thousand times: refused', async () => {
        const folder = spoiled(join(TERMINOLOGY, 'sct2_TextDefinition_Snapshot-en_XX_20240131.txt'), (c) => Buffer.concat([c, Buffer.alloc(8 << 20, 10)]));
        const zip = join(scratch, `bomb-${driver}.zip`);
        zipFolder(folder, zip, folder);
        await assert.rejects(load(zip), (err: Error) => {
          assert.match(err.message, /^Snapshot\/Terminology\/sct2_TextDefinition_Snapshot-en_XX_20240131\.txt: it would inflate to 83\d{5} bytes, more than 200 times its \d+ compressed bytes \(a zip bomb\?\)/);
          return true;
        });
      });

      test('through the import route: 400 naming the file and line, and no temporary folder left', async () => {
        const content = readFileSync(join(FIXTURE, CONCEPTS));
        const cut = content.subarray(0, content.length - 30);
        const res = await server.request('POST', '/admin/terminology/import?format=rf2', {
          token: server.adminToken,
          raw: framed('sct2_Concept_Snapshot_XX_20240131.txt', cut),
          contentType: 'application/octet-stream',
        });
        assert.equal(res.status, 400, res.text);
        const lines = content.toString('utf8').trimEnd().split('\n').length;
        assert.equal(ooText(res.body), `sct2_Concept_Snapshot_XX_20240131.txt line ${lines}: ${columnsLeft(cut)} columns where the header has 5 (is the file cut short?)`);
        // A NUL byte is the file's fault (400), not the database's (500).
        const withNul = readFileSync(join(FIXTURE, DESCRIPTIONS));
        const nul = await server.request('POST', '/admin/terminology/import?format=rf2', {
          token: server.adminToken,
          raw: Buffer.concat([
            framed('sct2_Concept_Snapshot_XX_20240131.txt', content),
            framed('sct2_Description_Snapshot-en_XX_20240131.txt', replaced('Heart illness\t', Buffer.from('Heart\u0000illness\t'))(withNul)),
          ]),
          contentType: 'application/octet-stream',
        });
        assert.equal(nul.status, 400, nul.text);
        assert.equal(ooText(nul.body), `sct2_Description_Snapshot-en_XX_20240131.txt line ${lineOf(DESCRIPTIONS, 'Heart illness\t')}: the line holds a NUL byte`);
        assert.deepEqual(readdirSync(uploads), []);
      });

      test('a client that leaves in the middle of an upload leaves no temporary folder', async () => {
        const url = new URL('/admin/terminology/import?format=rf2', server.baseUrl);
        const req = request(url, { method: 'POST', headers: { authorization: `Bearer ${server.adminToken}`, 'content-type': 'application/octet-stream' } });
        req.on('error', () => undefined);
        req.write(`${50 << 20} sct2_Concept_Snapshot_XX_20240131.txt\n`);
        req.write(Buffer.alloc(256 << 10, 'a'));
        // The server has made its folder and is writing the file into it.
        for (let i = 0; i < 200 && readdirSync(uploads).length === 0; i++) await delay(25);
        assert.equal(readdirSync(uploads).length, 1, 'the upload never reached the server');
        req.destroy();
        for (let i = 0; i < 400 && readdirSync(uploads).length > 0; i++) await delay(25);
        assert.deepEqual(readdirSync(uploads), [], 'the temporary folder of an abandoned upload is removed');
      });
    });
  }
});
