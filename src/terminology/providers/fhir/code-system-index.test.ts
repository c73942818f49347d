import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CodeSystemIndex, IndexBuilder } from './code-system-index.js';

const concept = (id: number, code: string, extra: { display?: string; inactive?: boolean; status?: string } = {}) => ({
  id,
  code,
  display: extra.display,
  definition: undefined,
  inactive: extra.inactive ?? false,
  abstract: false,
  status: extra.status,
});
const use = (code: string) => ({ system: 'http://snomed.info/sct', code });

describe('IndexBuilder: an index built from rows in concept order', () => {
  test('concept columns with gaps, designations and properties per concept in their order, the hierarchy', () => {
    const b = new IndexBuilder(5);
    b.concept(concept(1, 'root', { display: 'Root' }));
    // 2 has no concept (a gap in the ids).
    b.concept(concept(3, 'child', { display: 'Child', status: 'retired' }));
    b.designationOf(3, { language: 'en', use: use('900000000000013009'), value: 'second' });
    b.designationOf(3, { language: 'de', use: use('900000000000013009'), value: 'zweite' });
    b.propertyOf(3, { code: 'parent', type: 'code', value: 'root', system: undefined, display: undefined });
    b.concept(concept(4, 'other', { inactive: true }));
    b.designationOf(4, { language: undefined, use: undefined, value: 'no language' });
    b.concept(concept(5, 'grandchild'));
    b.designationOf(5, { language: 'en', use: use('900000000000013009'), value: 'g' });
    b.edge(5, 3);
    b.edge(3, 1);
    const index: CodeSystemIndex = b.build();

    assert.equal(index.maxId, 5);
    assert.deepEqual([1, 2, 3, 4, 5].map((id) => index.has(id)), [true, false, true, true, true]);
    assert.equal(index.idOf('child', false), 3);
    assert.equal(index.idOf('CHILD', true), 3);
    assert.equal(index.idOf('missing', false), 0);
    assert.deepEqual(index.concept(3), { id: 3, code: 'child', display: 'Child', definition: undefined, inactive: false, abstract: false, status: 'retired' });
    assert.equal(index.inactive(4), true);
    assert.deepEqual(index.designations(3).map((d) => `${d.language}:${d.value}`), ['en:second', 'de:zweite']);
    assert.deepEqual(index.designations(4), [{ language: undefined, use: undefined, value: 'no language' }]);
    assert.deepEqual(index.designations(1), []);
    // Equal use codings are one object.
    assert.equal(index.designations(3)[0].use, index.designations(5)[0].use);
    assert.deepEqual(index.properties(3), [{ code: 'parent', type: 'code', value: 'root', system: undefined, display: undefined }]);
    assert.deepEqual([...index.parents(5)], [3]);
    assert.deepEqual([...index.children(1)], [3]);
    assert.deepEqual([...index.ancestors(5)], [1, 3]);
    assert.ok(index.isAncestor(1, 5) && !index.isAncestor(5, 1));
    assert.deepEqual(index.descendants(1).sort(), [3, 5]);

    // The same index read back from its snapshot parts.
    const again = CodeSystemIndex.fromParts(index.toParts());
    assert.deepEqual([1, 2, 3, 4, 5].map((id) => (again.has(id) ? again.concept(id) : undefined)), [1, 2, 3, 4, 5].map((id) => (index.has(id) ? index.concept(id) : undefined)));
    assert.deepEqual(again.designations(3), index.designations(3));
    assert.deepEqual([...again.ancestors(5)], [1, 3]);
  });

  test('rows out of concept order, or past the highest id, are refused', () => {
    const b = new IndexBuilder(3);
    b.concept(concept(2, 'b'));
    assert.throws(() => b.concept(concept(1, 'a')), RangeError);
    assert.throws(() => b.concept(concept(4, 'd')), RangeError);
    b.designationOf(2, { language: 'en', use: undefined, value: 'x' });
    assert.throws(() => b.designationOf(1, { language: 'en', use: undefined, value: 'y' }), RangeError);
    b.propertyOf(3, { code: 'p', type: 'string', value: 'v', system: undefined, display: undefined });
    assert.throws(() => b.propertyOf(2, { code: 'p', type: 'string', value: 'v', system: undefined, display: undefined }), RangeError);
  });

  test('buildInTurns lets other work run between its pieces, and builds the same index as build', async () => {
    const rows = (b: IndexBuilder) => {
      for (let id = 1; id <= 50_000; id++) {
        b.concept(concept(id, `c${id}`));
        if (id > 1) b.edge(id, id >> 1); // a binary tree
      }
      return b;
    };
    let done = false;
    let ranDuringBuild = false;
    setImmediate(() => (ranDuringBuild = !done));
    const built = await rows(new IndexBuilder(50_000)).buildInTurns();
    done = true;
    assert.ok(ranDuringBuild, 'a callback queued before the build ran before it ended');
    const direct = rows(new IndexBuilder(50_000)).build();
    for (const id of [1, 2, 3, 777, 49_999, 50_000]) {
      assert.deepEqual([...built.ancestors(id)], [...direct.ancestors(id)]);
      assert.deepEqual([...built.children(id)], [...direct.children(id)]);
      assert.equal(built.idOf(`c${id}`, false), id);
    }
    assert.deepEqual([...built.ancestors(50_000)], [1, 3, 6, 12, 24, 48, 97, 195, 390, 781, 1562, 3125, 6250, 12500, 25000]);
  });
});
