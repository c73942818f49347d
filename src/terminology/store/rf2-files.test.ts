import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { crc32, deflateRawSync } from 'node:zlib';
import { rf2Files, rf2Kind, rf2Rows } from './rf2-files.js';

/** A zip archive of `files` (deflated members, or stored ones with `store`), written by hand. */
function zip(files: Record<string, string>, store = false, declared?: number): Buffer {
  const locals: Buffer[] = [];
  const central: Buffer[] = [];
  let offset = 0;
  for (const [name, text] of Object.entries(files)) {
    const raw = Buffer.from(text, 'utf8');
    const data = store ? raw : deflateRawSync(raw);
    const nameBytes = Buffer.from(name, 'utf8');
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(store ? 0 : 8, 8);
    local.writeUInt32LE(crc32(raw), 14);
    local.writeUInt32LE(data.length, 18);
    local.writeUInt32LE(declared ?? raw.length, 22);
    local.writeUInt16LE(nameBytes.length, 26);
    locals.push(local, nameBytes, data);
    const entry = Buffer.alloc(46);
    entry.writeUInt32LE(0x02014b50, 0);
    entry.writeUInt16LE(20, 4);
    entry.writeUInt16LE(20, 6);
    entry.writeUInt16LE(store ? 0 : 8, 10);
    entry.writeUInt32LE(crc32(raw), 16);
    entry.writeUInt32LE(data.length, 20);
    entry.writeUInt32LE(declared ?? raw.length, 24);
    entry.writeUInt16LE(nameBytes.length, 28);
    entry.writeUInt32LE(offset, 42);
    central.push(entry, nameBytes);
    offset += 30 + nameBytes.length + data.length;
  }
  const dir = Buffer.concat(central);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(Object.keys(files).length, 8);
  end.writeUInt16LE(Object.keys(files).length, 10);
  end.writeUInt32LE(dir.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, dir, end]);
}

async function allRows(file: Parameters<typeof rf2Rows>[0]): Promise<string[][]> {
  const out: string[][] = [];
  for await (const row of rf2Rows(file)) out.push(row);
  return out;
}

describe('RF2 files (docs/terminology.md#snomed-ct)', () => {
  test('file kinds by name: Snapshot and Full files; stated relationships, Delta files and readmes left out', () => {
    assert.equal(rf2Kind('Snapshot/Terminology/sct2_Concept_Snapshot_INT_20250131.txt'), 'concept');
    assert.equal(rf2Kind('sct2_Description_Snapshot-en_INT_20250131.txt'), 'description');
    assert.equal(rf2Kind('sct2_TextDefinition_Snapshot-en_INT_20250131.txt'), 'textDefinition');
    assert.equal(rf2Kind('sct2_Relationship_Snapshot_INT_20250131.txt'), 'relationship');
    assert.equal(rf2Kind('sct2_RelationshipConcreteValues_Snapshot_INT_20250131.txt'), 'concreteValues');
    assert.equal(rf2Kind('sct2_StatedRelationship_Snapshot_INT_20250131.txt'), undefined);
    assert.equal(rf2Kind('der2_cRefset_LanguageSnapshot-en_INT_20250131.txt'), 'language');
    assert.equal(rf2Kind('der2_ssRefset_ModuleDependencySnapshot_INT_20250131.txt'), 'moduleDependency');
    assert.equal(rf2Kind('der2_cRefset_AssociationSnapshot_INT_20250131.txt'), 'refset');
    assert.equal(rf2Kind('der2_Refset_SimpleSnapshot_INT_20250131.txt'), 'refset');
    assert.equal(rf2Kind('sct2_Concept_Full_INT_20250131.txt'), 'concept');
    assert.equal(rf2Kind('der2_cRefset_AssociationDelta_INT_20250131.txt'), undefined);
    assert.equal(rf2Kind('Readme_en_20250131.txt'), undefined);
  });

  test('a zip is read in place (deflated and stored members), rows split on tabs, CRLF and UTF-8 kept whole', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lattice-rf2-zip-'));
    try {
      // Long enough that the inflated text arrives in several chunks, with a multi-byte character in each.
      const body = Array.from({ length: 5000 }, (_, i) => `${i}\t20250131\t1\tCafé ÿ ${'é'.repeat(i % 7)}`).join('\r\n');
      const concept = `id\teffectiveTime\tactive\tterm\r\n${body}\r\n`;
      const path = join(dir, 'release.zip');
      writeFileSync(
        path,
        zip({
          'SnomedCT/Snapshot/Terminology/sct2_Concept_Snapshot_XX_20250131.txt': concept,
          'SnomedCT/Full/Terminology/sct2_Concept_Full_XX_20250131.txt': 'ignored',
          'SnomedCT/Readme.txt': 'ignored',
        }),
      );
      writeFileSync(join(dir, 'stored.zip'), zip({ 'sct2_Concept_Snapshot_XX_20250131.txt': concept }, true));
      for (const file of [path, join(dir, 'stored.zip')]) {
        const files = await rf2Files(file);
        assert.deepEqual(
          files.map((f) => [f.kind, f.size]),
          [['concept', Buffer.byteLength(concept)]],
        );
        const rows = await allRows(files[0]);
        assert.equal(rows.length, 5001);
        assert.deepEqual(rows[0], ['id', 'effectiveTime', 'active', 'term']);
        assert.deepEqual(rows[4000], ['3999', '20250131', '1', `Café ÿ ${'é'.repeat(3999 % 7)}`]);
      }
      writeFileSync(join(dir, 'not.zip'), 'plain text');
      // The Full file of a kind with a Snapshot file is not read.
      assert.equal((await rf2Files(path)).some((f) => f.full), false);
      await assert.rejects(rf2Files(join(dir, 'not.zip')), /not\.zip is neither a folder nor a zip archive/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('a kind the release has only as Full files is reduced to its snapshot: the newest row of each id', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lattice-rf2-full-'));
    try {
      const rows = [
        'id\teffectiveTime\tactive\tmoduleId\tdefinitionStatusId',
        '1001000\t20200131\t1\t9000001003\t900000000000074008',
        '1002007\t20200131\t1\t9000001003\t900000000000074008',
        '1001000\t20220131\t0\t9000001003\t900000000000074008',
        '1003002\t20210131\t1\t9000001003\t900000000000074008',
        '1002007\t20190131\t0\t9000001003\t900000000000074008',
        '1003002\t20210131\t1\t9000001003\t900000000000073002',
      ];
      writeFileSync(join(dir, 'sct2_Concept_Full_XX_20220131.txt'), `${rows.join('\r\n')}\r\n`);
      writeFileSync(join(dir, 'der2_Refset_SimpleSnapshot_XX_20220131.txt'), 'id\teffectiveTime\tactive\tmoduleId\trefsetId\treferencedComponentId\r\n');
      writeFileSync(join(dir, 'der2_Refset_SimpleFull_XX_20220131.txt'), 'ignored\r\n');
      const files = await rf2Files(dir);
      assert.deepEqual(files.map((f) => [f.kind, f.full === true]), [['refset', false], ['concept', true]]);
      const concept = files[1];
      const read = await allRows(concept);
      // In file order: 1002007 of 2020 (not the older 2019 row), 1001000 of 2022, the last 1003002 of 2021.
      assert.deepEqual(read.map((r) => `${r[0]} ${r[1]} ${r[2]} ${r[4]}`), [
        'id effectiveTime active definitionStatusId',
        '1002007 20200131 1 900000000000074008',
        '1001000 20220131 0 900000000000074008',
        '1003002 20210131 1 900000000000073002',
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('a line longer than the bound is refused where it starts, without reading the rest; long lines across chunks are whole', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lattice-rf2-lines-'));
    try {
      const name = 'sct2_Concept_Snapshot_XX_20250131.txt';
      // 700 KB of one line: many chunks of a file stream, joined once.
      const long = 'x'.repeat(700_000);
      writeFileSync(join(dir, name), `id\tterm\n1\t${long}\n2\tshort\n`);
      const [file] = await rf2Files(dir);
      const rows = await allRows(file);
      assert.deepEqual(rows.map((r) => r[1].length), [4, 700_000, 5]);
      // Past the default bound (1,000,000 bytes) and never ending: refused at line 2.
      writeFileSync(join(dir, name), `id\tterm\n1\t${'y'.repeat(3_000_000)}`);
      await assert.rejects(allRows(file), { message: `${name} line 2: the line is longer than 1000000 bytes (LATTICE_TX_IMPORT_MAX_LINE)` });
      // A configured bound.
      writeFileSync(join(dir, name), `id\tterm\n1\t${long}\n`);
      const read = async () => {
        for await (const _ of rf2Rows(file, undefined, { maxLine: 1000 }));
      };
      await assert.rejects(read(), { message: `${name} line 2: the line is longer than 1000 bytes (LATTICE_TX_IMPORT_MAX_LINE)` });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('a zip member that inflates past the size the archive declares is refused', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lattice-rf2-bomb-'));
    try {
      const concept = `id\tterm\n${Array.from({ length: 2000 }, (_, i) => `${i}\tterm ${i}`).join('\n')}\n`;
      const path = join(dir, 'lying.zip');
      writeFileSync(path, zip({ 'sct2_Concept_Snapshot_XX_20250131.txt': concept }, false, 100));
      const [file] = await rf2Files(path);
      await assert.rejects(allRows(file), { message: 'sct2_Concept_Snapshot_XX_20250131.txt: it inflates to more than the 100 bytes the archive declares for it (a damaged archive or a zip bomb)' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
