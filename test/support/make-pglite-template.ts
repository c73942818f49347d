import { writeFileSync } from 'node:fs';
import { migrate } from '../../src/storage/migrate.js';
import { openPgliteDatabase } from '../../src/storage/pglite-database.js';

/**
 * Writes a migrated, empty PGlite data folder as a tarball to argv[2]. scripts/test.mjs makes
 * one per test run; the harness starts in-memory servers from it instead of running initdb
 * for every server (LATTICE_TEST_PGLITE_TEMPLATE).
 */
const out = process.argv[2];
if (!out) throw new Error('usage: make-pglite-template.ts <file>');
const db = await openPgliteDatabase('memory://');
await migrate(db);
const blob = await db.dumpDataDir!();
writeFileSync(out, Buffer.from(await blob.arrayBuffer()));
await db.close();
