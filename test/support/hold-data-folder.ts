// Opens an embedded data folder in its own process, writes one row, prints `ready`, then holds
// the folder until killed. Used by test/data-folder.test.ts as "the other process".
import { openPgliteDatabase } from '../../src/storage/pglite-database.js';

const dir = process.argv[2];
if (!dir) throw new Error('usage: hold-data-folder.ts <dir>');
const db = await openPgliteDatabase(dir);
await db.query('CREATE TABLE IF NOT EXISTS held (pid integer)');
await db.query('INSERT INTO held (pid) VALUES ($1)', [process.pid]);
console.log('ready');
setInterval(() => undefined, 1000);
