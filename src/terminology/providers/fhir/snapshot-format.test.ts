import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { CodeSystem } from '@medplum/fhirtypes';
import { codeSystemRows } from './code-system-rows.js';
import { CodeSystemIndex, indexFromRows } from './code-system-index.js';
import { AsciiText, checksum, decodeSnapshot, encodeSnapshot, partOf, partOfInSlices, partRange, snapshotLayout, SnapshotUnreadable, type SnapshotParts } from './snapshot-format.js';

/**
 * The binary form of persisted indexes (docs/terminology.md#persisted-indexes): parts come back
 * as they were written, across any chunking; a truncated or foreign buffer is refused; an index
 * read back answers every question as the one it was written from.
 */

/** The encoded bytes cut into chunks of `size` bytes (as the database returns them), decoded. */
function roundTrip(parts: SnapshotParts, size: number): SnapshotParts {
  const buffers = encodeSnapshot(parts);
  const whole = Buffer.concat(buffers);
  const out: Uint8Array[] = [];
  for (let at = 0; at < whole.length; at += size) out.push(whole.subarray(at, at + size));
  return decodeSnapshot(out, checksum([buffers[0]]));
}

describe('snapshot format', () => {
  test('parts round-trip across chunk boundaries; a string with a lone surrogate keeps every code unit', () => {
    const parts: SnapshotParts = new Map<string, Int32Array | Uint8Array | string>([
      ['ints', Int32Array.from([1, -2, 2 ** 31 - 1, 0])],
      ['bytes', Uint8Array.from([1, 2, 3])],
      ['empty', new Int32Array(0)],
      ['text', 'Herzkrankheit – 心臓病'],
      ['odd', 'a\uD800b'],
    ]);
    for (const size of [1, 3, 7, 64, 1 << 20]) {
      const back = roundTrip(parts, size);
      assert.deepEqual([...back.keys()].sort(), [...parts.keys()].sort());
      for (const [name, part] of parts) assert.deepEqual(back.get(name), part, `${name} (chunks of ${size})`);
    }
  });

  test('a part read in slices (background reads) is the part read at once; a changed byte is refused the same way', async () => {
    // Texts of several MiB whose slices would cut multi-byte characters and surrogate pairs.
    const long = 'ab – 心臓病 😀 '.repeat(300_000);
    const parts: SnapshotParts = new Map<string, Int32Array | string>([
      ['ints', Int32Array.from({ length: 600_000 }, (_, i) => i * 7)],
      ['text', long],
      ['odd', `${'😀'.repeat(700_000)}\uD800${'x'.repeat(3)}`],
    ]);
    const buffers = encodeSnapshot(parts);
    const whole = Buffer.concat(buffers);
    const layout = snapshotLayout(whole.subarray(0, buffers[0].length), whole.length, checksum([buffers[0]]));
    const bytesOf = (name: string) => {
      const { at, bytes } = partRange(layout, layout.entries.get(name)!);
      return new Uint8Array(whole.subarray(at, at + bytes));
    };
    for (const name of parts.keys()) {
      const entry = layout.entries.get(name)!;
      const sliced = await partOfInSlices(entry, bytesOf(name));
      assert.deepEqual(sliced, partOf(entry, bytesOf(name)), name);
      assert.deepEqual(sliced, parts.get(name), name);
      const changed = bytesOf(name);
      changed[changed.length >> 1] ^= 1;
      await assert.rejects(partOfInSlices(entry, changed), new RegExp(`checksum mismatch in part ${name}`));
    }
  });

  test('a truncated buffer, one of another format, a changed part or another head is refused', () => {
    const buffers = encodeSnapshot(new Map<string, Int32Array | string>([['ints', Int32Array.from([1, 2, 3])], ['text', 'abc']]));
    const crc = checksum([buffers[0]]);
    const whole = Buffer.concat(buffers);
    assert.throws(() => decodeSnapshot([whole.subarray(0, whole.length - 4)], crc), SnapshotUnreadable);
    assert.throws(() => decodeSnapshot([whole.subarray(0, 2)], crc), SnapshotUnreadable);
    const header = Buffer.from(whole.toString('latin1').replace('"format":2', '"format":9'), 'latin1');
    assert.throws(() => decodeSnapshot([header], checksum([header.subarray(0, buffers[0].length)])), /format 9/);
    assert.throws(() => decodeSnapshot([header], crc), /checksum mismatch/);
    // A byte of a part changed: its own checksum (listed in the head) refuses it.
    const changed = Buffer.from(whole);
    changed[buffers[0].length] ^= 1;
    assert.throws(() => decodeSnapshot([changed], crc), /checksum mismatch in part ints/);
    changed[buffers[0].length] ^= 1;
    changed[changed.length - 1] ^= 1;
    assert.throws(() => decodeSnapshot([changed], crc), /checksum mismatch in part text/);
  });

  test('an index read back answers as the one written', () => {
    const written = indexFromRows(codeSystemRows(sample));
    const read = CodeSystemIndex.fromParts(roundTrip(written.toParts(), 5));
    sameAnswers(read, written);
  });

  test('opened with its all-ASCII texts kept as bytes, an index answers as the one written, before and after they are decoded; $subsumes by parents equals the ancestor lists', async () => {
    const written = indexFromRows(codeSystemRows(sample));
    const buffers = encodeSnapshot(written.toParts());
    const whole = Buffer.concat(buffers);
    const layout = snapshotLayout(whole.subarray(0, buffers[0].length), whole.length, checksum([buffers[0]]));
    const parts: SnapshotParts = new Map();
    for (const [name, entry] of layout.entries) {
      const { at, bytes } = partRange(layout, entry);
      parts.set(name, await partOfInSlices(entry, new Uint8Array(whole.subarray(at, at + bytes)), true));
    }
    // The codes are ASCII (kept as bytes), the displays are not (`Δέλτα`: decoded), the designations are.
    assert.ok(parts.get('codes.text') instanceof AsciiText);
    assert.equal(typeof parts.get('displays.text'), 'string');
    assert.ok(parts.get('designation.value.text') instanceof AsciiText);
    const read = CodeSystemIndex.fromParts(parts);
    for (let a = 0; a <= written.maxId + 1; a++) {
      for (let b = 0; b <= written.maxId + 1; b++) assert.equal(read.reachesUp(a, b), written.isAncestor(a, b), `${a} ${b}`);
    }
    sameAnswers(read, written);
    await read.whenLoaded('designations');
    sameAnswers(read, written);
  });
});

const sample: CodeSystem = {
  resourceType: 'CodeSystem',
  status: 'active',
  content: 'complete',
  concept: [
    {
      code: 'a',
      display: 'Alpha',
      designation: [{ language: 'de', value: 'Alfa' }, { use: { system: 'http://snomed.info/sct', code: '900000000000013009' }, value: 'A' }],
      concept: [
        { code: 'b', display: 'Beta', definition: 'The second', property: [{ code: 'status', valueCode: 'retired' }] },
        { code: 'c', concept: [{ code: 'B', display: 'Big b' }] },
      ],
    },
    { code: 'd', display: 'Δέλτα' },
  ],
};

function sameAnswers(read: CodeSystemIndex, written: CodeSystemIndex): void {
  assert.equal(read.maxId, written.maxId);
  for (let id = 1; id <= written.maxId; id++) {
    assert.deepEqual(read.concept(id), written.concept(id));
    assert.deepEqual(read.designations(id), written.designations(id));
    assert.deepEqual(read.properties(id), written.properties(id));
    assert.deepEqual([...read.parents(id)], [...written.parents(id)]);
    assert.deepEqual([...read.ancestors(id)], [...written.ancestors(id)]);
  }
  for (const code of ['a', 'b', 'B', 'd', 'x', '']) assert.equal(read.idOf(code, false), written.idOf(code, false), code);
  assert.equal(read.idOf('b', true), written.idOf('b', true));
  assert.ok(read.isAncestor(read.idOf('a', false), read.idOf('B', false)));
  assert.equal(written.idOf('B', false) > 0 && written.idOf('b', false) !== written.idOf('B', false), true);
}
