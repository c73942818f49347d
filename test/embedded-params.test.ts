import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { openPgliteDatabase, type PgliteDatabase } from '../src/storage/pglite-database.js';

/**
 * Text and text[] parameters reach the embedded database in PostgreSQL's binary form, encoded by
 * the database thread itself (storage/pglite-thread.ts) instead of PGlite's text serializers: what
 * arrives must be exactly what was sent, whatever the characters.
 */
const TRICKY = ['plain', '', 'NULL', 'null', 'a"quote', 'back\\slash', '{brace}', 'com,ma', ' spaced ', 'é ü ß', '日本語', '😀 astral', 'tab\tand\nnewline', 'x'.repeat(20_000)];

describe('parameters of the embedded database', () => {
  let db: PgliteDatabase;
  before(async () => {
    db = await openPgliteDatabase('memory://');
  });
  after(() => db.close());

  test('text[] elements (NULL and empty included) and text values arrive unchanged', async () => {
    const values = [...TRICKY, null];
    const res = await db.query<{ n: number; v: string | null }>('SELECT n::int AS n, v FROM unnest($1::text[]) WITH ORDINALITY AS u(v, n) ORDER BY n', [values]);
    assert.deepEqual(res.rows.map((r) => r.v), values);
    for (const value of TRICKY) {
      const one = await db.query<{ v: string; len: number }>('SELECT $1::text AS v, octet_length($1::text)::int AS len', [value]);
      assert.equal(one.rows[0].v, value);
      assert.equal(one.rows[0].len, Buffer.byteLength(value));
    }
  });

  test('empty arrays, numbers and dates as text, and arrays of another type', async () => {
    const res = await db.query<{ empty: number | null; t: string; d: string; nums: number; dims: number }>(
      `SELECT cardinality($1::text[])::int AS empty, $2::text AS t, $3::text AS d,
        (SELECT sum(x)::int FROM unnest($4::int[]) AS x) AS nums, array_length($5::text[], 1)::int AS dims`,
      [[], 42, new Date('2020-01-02T03:04:05.000Z'), ['1', '2', '3'], [[null, 'b'], ['c', 'd']].flat()],
    );
    assert.deepEqual(res.rows[0], { empty: 0, t: '42', d: '2020-01-02T03:04:05.000Z', nums: 6, dims: 4 });
  });
});
