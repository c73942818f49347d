import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Database, Queryable } from '../src/core/database.js';
import { openPgDatabase } from '../src/storage/pg-database.js';
import { openPgliteDatabase } from '../src/storage/pglite-database.js';
import { bulkInsert, type BulkColumn } from '../src/terminology/store/bulk-insert.js';
import { createTestDatabase, drivers } from './harness.js';

/**
 * Bulk inserts (src/terminology/store/bulk-insert.ts): COPY in text format on both drivers
 * (Queryable.copyRows), and the INSERT … unnest fallback for a Queryable without it, store the
 * same values — text that COPY must escape, NULLs, booleans, array literals — outside and
 * inside a transaction, over several batches; a failing batch rejects and leaves the
 * connection usable.
 */

interface Row {
  id: number;
  text: string | null;
  flag: boolean;
  list: string;
}

const TEXTS = ['plain', 'tab\there', 'line\nnext', 'carriage\rreturn', 'back\\slash', '\\N', '\\.', '', 'ünïcødé ☃ 😀 漢字', 'trailing\\', null];

const rows: Row[] = TEXTS.map((text, i) => ({ id: i + 1, text, flag: i % 2 === 0, list: `{${i},${i + 10}}` }));

const COLUMNS: BulkColumn<Row>[] = [
  { name: 'id', type: 'int', value: (r) => r.id },
  { name: 'text', type: 'text', value: (r) => r.text },
  { name: 'flag', type: 'boolean', value: (r) => r.flag },
  { name: 'list', type: 'text', cast: 'int[]', value: (r) => r.list },
];

// Without limits (the CLI), and with those a server runs with (on PostgreSQL they add a
// client-side read timeout, which changes how `pg` reports a query's outcome).
for (const [driver, limited] of drivers.flatMap((d) => [[d, false], [d, true]] as const)) {
  describe(`bulk insert (${driver}${limited ? ', request limits' : ''})`, () => {
    let db: Database;
    before(async () => {
      const limits = limited ? { statementTimeoutMs: 30_000, acquireTimeoutMs: 5_000 } : undefined;
      db = driver === 'pg' ? await openPgDatabase(await createTestDatabase(), { limits }) : await openPgliteDatabase('memory://', { limits });
      await db.query('CREATE TABLE bulk (k int NOT NULL, id int NOT NULL, text text, flag boolean NOT NULL, list int[] NOT NULL)');
    });
    after(() => db.close());

    const stored = async (k: number) =>
      (await db.query<Row & { list: number[] }>('SELECT id, text, flag, list FROM bulk WHERE k = $1 ORDER BY id', [k])).rows.map((r) => ({
        ...r,
        list: `{${r.list.join(',')}}`,
      }));
    const insert = (q: Queryable, k: number) => bulkInsert(q, 'bulk', { k: { type: 'int', value: k } }, COLUMNS, rows.length, (i) => rows[i], undefined, 4);

    test('both drivers offer COPY', () => {
      assert.equal(typeof db.copyRows, 'function');
    });

    test('COPY, COPY in a transaction and the INSERT fallback store the same values', async () => {
      await insert(db, 1);
      await db.transaction((tx) => {
        assert.equal(typeof tx.copyRows, 'function');
        return insert(tx, 2);
      });
      await insert({ query: (sql, params) => db.query(sql, params) }, 3);
      assert.deepEqual(await stored(1), rows);
      assert.deepEqual(await stored(2), rows);
      assert.deepEqual(await stored(3), rows);
    });

    test('a batch that violates a constraint rejects; a transaction rolls back; the database stays usable', { timeout: 20_000 }, async () => {
      const bad: BulkColumn<Row>[] = [...COLUMNS.slice(0, 2), { name: 'flag', type: 'boolean', value: () => null }, COLUMNS[3]];
      await assert.rejects(bulkInsert(db, 'bulk', { k: { type: 'int', value: 4 } }, bad, rows.length, (i) => rows[i]), /null value/);
      await assert.rejects(
        db.transaction(async (tx) => {
          await insert(tx, 5);
          await bulkInsert(tx, 'bulk', { k: { type: 'int', value: 5 } }, bad, rows.length, (i) => rows[i]);
        }),
        /null value/,
      );
      const counts = await db.query<{ k: number; n: number }>('SELECT k, count(*)::int AS n FROM bulk GROUP BY k ORDER BY k');
      assert.deepEqual(counts.rows, [1, 2, 3].map((k) => ({ k, n: rows.length })));
    });
  });
}
