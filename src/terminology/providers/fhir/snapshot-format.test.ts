import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { CodeSystem } from '@medplum/fhirtypes';
import { codeSystemRows } from './code-system-rows.js';
import { CodeSystemIndex, indexFromRows } from './code-system-index.js';
import { decodeSnapshot, encodeSnapshot, SnapshotUnreadable, type SnapshotParts } from './snapshot-format.js';

/**
 * The binary form of persisted indexes (docs/terminology.md#persisted-indexes): parts come back
 * as they were written, across any chunking; a truncated or foreign buffer is refused; an index
 * read back answers every question as the one it was written from.
 */

/** The encoded bytes cut into chunks of `size` bytes (as the database returns them). */
function chunked(parts: SnapshotParts, size: number): Uint8Array[] {
  const whole = Buffer.concat(encodeSnapshot(parts));
  const out: Uint8Array[] = [];
  for (let at = 0; at < whole.length; at += size) out.push(whole.subarray(at, at + size));
  return out;
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
      const back = decodeSnapshot(chunked(parts, size));
      assert.deepEqual([...back.keys()].sort(), [...parts.keys()].sort());
      for (const [name, part] of parts) assert.deepEqual(back.get(name), part, `${name} (chunks of ${size})`);
    }
  });

  test('a truncated buffer, or one of another format, is refused', () => {
    const whole = Buffer.concat(encodeSnapshot(new Map([['ints', Int32Array.from([1, 2, 3])]])));
    assert.throws(() => decodeSnapshot([whole.subarray(0, whole.length - 4)]), SnapshotUnreadable);
    assert.throws(() => decodeSnapshot([whole.subarray(0, 2)]), SnapshotUnreadable);
    const header = whole.toString('latin1').replace('"format":1', '"format":9');
    assert.throws(() => decodeSnapshot([Buffer.from(header, 'latin1')]), /format 9/);
  });

  test('an index read back answers as the one written', () => {
    const cs: CodeSystem = {
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
    const written = indexFromRows(codeSystemRows(cs));
    const read = CodeSystemIndex.fromParts(decodeSnapshot(chunked(written.toParts(), 5)));
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
  });
});
