import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import type { CodeSystem } from '@medplum/fhirtypes';
import { codeSystemRows } from './code-system-rows.js';
import { CodeSystemIndex, indexFromRows } from './code-system-index.js';
import { SnapshotFile } from './snapshot-file.js';
import { checksum, encodeSnapshot, SnapshotUnreadable, type PartSource } from './snapshot-format.js';

/**
 * A snapshot's file copy read part by part (docs/terminology.md#persisted-indexes): opened only
 * when it is the snapshot the database describes (size and the head's checksum); each part is
 * checked when it is read; an index opened from it reads its designations and ancestors only
 * when a question needs them.
 */

const cs: CodeSystem = {
  resourceType: 'CodeSystem',
  status: 'active',
  content: 'complete',
  concept: [
    {
      code: 'a',
      display: 'Alpha',
      designation: [{ language: 'de', value: 'Alfa' }],
      concept: [{ code: 'b', display: 'Beta', concept: [{ code: 'c', display: 'Gamma' }] }],
    },
  ],
};

function written(dir: string): { file: string; bytes: number; crc: number; whole: Buffer; head: number } {
  const buffers = encodeSnapshot(indexFromRows(codeSystemRows(cs)).toParts());
  const whole = Buffer.concat(buffers);
  const file = join(dir, '1.index.snapshot');
  writeFileSync(file, whole);
  return { file, bytes: whole.length, crc: checksum([buffers[0]]), whole, head: buffers[0].length };
}

describe('snapshot file', () => {
  test('opened only with its size and head checksum; parts read when asked for, each checked', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lattice-snapshot-file-'));
    try {
      const w = written(dir);
      assert.equal(await SnapshotFile.open(w.file, w.bytes, w.crc + 1), undefined);
      assert.equal(await SnapshotFile.open(w.file, w.bytes + 8, w.crc), undefined);
      assert.equal(await SnapshotFile.open(join(dir, 'absent'), w.bytes, w.crc), undefined);

      // A byte of the ancestors changed: the head still matches, the part does not.
      const file = await SnapshotFile.open(w.file, w.bytes, w.crc);
      assert.ok(file);
      const entry = file.layout.entries.get('ancestorList');
      assert.ok(entry && entry.length > 0);
      const changed = Buffer.from(w.whole);
      changed[file.layout.base + entry.offset] ^= 1;
      await file.close();
      writeFileSync(w.file, changed);
      const again = await SnapshotFile.open(w.file, w.bytes, w.crc);
      assert.ok(again);
      assert.ok(again.get('codes.text'));
      assert.throws(() => again.get('ancestorList'), SnapshotUnreadable);
      await assert.rejects(again.prefetch(['ancestorList']), /checksum mismatch in part ancestorList/);
      await again.discard();
      assert.equal(await SnapshotFile.open(w.file, w.bytes, w.crc), undefined);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('an index opened from it answers as the one written, reading designations and ancestors only when asked', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lattice-snapshot-file-'));
    try {
      const w = written(dir);
      const file = await SnapshotFile.open(w.file, w.bytes, w.crc);
      assert.ok(file);
      const asked: string[] = [];
      const source: PartSource = { get: (name) => (asked.push(name), file.get(name)) };
      const index = CodeSystemIndex.fromParts(source, (names) => file.bytes(names));
      const reference = indexFromRows(codeSystemRows(cs));
      assert.equal(index.idOf('c', false), reference.idOf('c', false));
      assert.deepEqual(index.concept(2), reference.concept(2));
      assert.deepEqual(asked.filter((n) => /^(designation|ancestor)/.test(n)), []);
      assert.equal(index.isAncestor(index.idOf('a', false), index.idOf('c', false)), true);
      assert.deepEqual(asked.filter((n) => /^(designation|ancestor)/.test(n)), ['ancestorStart', 'ancestorList']);
      assert.deepEqual(index.designations(1), reference.designations(1));
      assert.ok(asked.includes('designation.value.text'));
      assert.ok(index.bytes > 0);
      await file.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
