import pg from 'pg';
import { migrate } from '../../src/storage/migrate.js';
import { openPgDatabase } from '../../src/storage/pg-database.js';

/**
 * Creates database argv[3] on the PostgreSQL server argv[2] and migrates it. scripts/test.mjs
 * makes one per test run; the harness creates each test server's database as a copy of it
 * (`CREATE DATABASE … TEMPLATE`, LATTICE_TEST_PG_TEMPLATE) instead of migrating an empty one.
 */
const [serverUrl, name] = process.argv.slice(2);
if (!serverUrl || !name || !/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error('usage: make-pg-template.ts <server url> <database name>');
const admin = new pg.Client({ connectionString: serverUrl });
await admin.connect();
try {
  await admin.query(`DROP DATABASE IF EXISTS ${name}`);
  await admin.query(`CREATE DATABASE ${name}`);
} finally {
  await admin.end();
}
const url = new URL(serverUrl);
url.pathname = `/${name}`;
const db = await openPgDatabase(url.toString(), { poolSize: 1 });
try {
  await migrate(db);
} finally {
  await db.close();
}
