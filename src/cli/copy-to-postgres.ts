import type { Database } from '../core/database.js';
import { openDatabase } from '../storage/open-database.js';

/** Rows read from PGlite and written to PostgreSQL per statement. */
const BATCH = 2000;

/** Neither database limits a statement or waits long for its turn: the copy runs alone. */
const LIMITS = { statementTimeoutMs: 0, acquireTimeoutMs: 60_000, poolSize: 1, autoAnalyze: false };

/**
 * `lattice copy-to-postgres --to <postgres url>` (docs/operating.md#moving-from-pglite-to-postgresql):
 * copies every table of the PGlite data folder (`LATTICE_DATA_DIR`; the server stopped) into a
 * new PostgreSQL database — resources with their history and search index, accounts, keys,
 * terminology indexes, the e-mail outbox — in one transaction on the target. Both are migrated
 * to this version first. A target that already holds resources is refused.
 */
export async function copyToPostgres(dataDir: string, targetUrl: string, log: (line: string) => void): Promise<{ tables: number; rows: number }> {
  const source = await openDatabase({ dataDir, databaseUrl: undefined, database: LIMITS });
  try {
    const target = await openDatabase({ dataDir, databaseUrl: targetUrl, database: LIMITS });
    try {
      if ((await target.query('SELECT 1 FROM resource LIMIT 1')).rows.length > 0) {
        throw new CopyRefused('The target PostgreSQL database already holds Lattice resources: copy into a new, empty database');
      }
      const tables = (
        await source.query<{ name: string }>(
          `SELECT table_name AS name FROM information_schema.tables
           WHERE table_schema = 'public' AND table_type = 'BASE TABLE' AND table_name <> 'schema_migration' ORDER BY table_name`,
        )
      ).rows.map((r) => r.name);
      let rows = 0;
      await target.transaction(async (tx) => {
        for (const table of tables) {
          const copied = await copyTable(source, tx, table);
          rows += copied;
          log(`${table}: ${copied} rows`);
        }
        await restartIdentities(tx);
      });
      await target.query('ANALYZE');
      return { tables: tables.length, rows };
    } finally {
      await target.close();
    }
  } finally {
    await source.close();
  }
}

/** A refusal of the copy (exit 1 with its message). */
export class CopyRefused extends Error {}

/** Replaces the target table's rows (a migration may have seeded one) with the source's, in ctid order, a batch at a time. */
async function copyTable(source: Database, target: Pick<Database, 'query'>, table: string): Promise<number> {
  const name = `"${table.replace(/"/g, '""')}"`;
  await target.query(`DELETE FROM ${name}`);
  let after = '(0,0)';
  let copied = 0;
  for (;;) {
    const page = await source.query<{ at: string; row: string }>(
      `SELECT ctid::text AS at, row_to_json(t)::text AS row FROM ${name} t WHERE ctid > $1::tid ORDER BY ctid LIMIT ${BATCH}`,
      [after],
    );
    if (page.rows.length === 0) return copied;
    await target.query(`INSERT INTO ${name} SELECT * FROM json_populate_recordset(NULL::${name}, $1::json)`, [`[${page.rows.map((r) => r.row).join(',')}]`]);
    copied += page.rows.length;
    after = page.rows[page.rows.length - 1].at;
  }
}

/** Identity columns continue after the copied keys. */
async function restartIdentities(tx: Pick<Database, 'query'>): Promise<void> {
  const identities = await tx.query<{ t: string; c: string }>(
    `SELECT table_name AS t, column_name AS c FROM information_schema.columns WHERE table_schema = 'public' AND is_identity = 'YES'`,
  );
  for (const { t, c } of identities.rows) {
    await tx.query(`SELECT setval(pg_get_serial_sequence($1, $2), coalesce((SELECT max("${c}") FROM "${t}"), 0) + 1, false)`, [`"${t}"`, c]);
  }
}

/** `lattice copy-to-postgres --to <url>`: its arguments, run, and report; exit 2 on a malformed call. */
export async function copyCommand(args: string[], usage: string, dataDir: string, databaseUrl: string | undefined): Promise<void> {
  let to: string | undefined;
  let unusable = false;
  for (let i = 0; i < args.length; i++) {
    const [name, value] = args[i].includes('=') ? [args[i].slice(0, args[i].indexOf('=')), args[i].slice(args[i].indexOf('=') + 1)] : [args[i], args[i + 1]];
    if (name === '--to' && value) {
      to = value;
      if (!args[i].includes('=')) i++;
    } else unusable = true;
  }
  if (!to || unusable) {
    console.error(usage);
    process.exitCode = 2;
    return;
  }
  if (databaseUrl) {
    console.error('copy-to-postgres reads the PGlite data folder LATTICE_DATA_DIR: unset DATABASE_URL (the target is --to)');
    process.exitCode = 2;
    return;
  }
  try {
    const started = Date.now();
    const done = await copyToPostgres(dataDir, to, (line) => console.error(line));
    console.log(
      `copied ${done.rows} rows of ${done.tables} tables from ${dataDir} in ${((Date.now() - started) / 1000).toFixed(1)} s; ` +
        'start the server with DATABASE_URL set to the target (LATTICE_DATA_DIR is then not used)',
    );
  } catch (err) {
    if (!(err instanceof CopyRefused)) throw err;
    console.error(err.message);
    process.exitCode = 1;
  }
}
