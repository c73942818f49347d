import type { Database } from '../core/database.js';
import { openDatabase } from './open-database.js';

/** Rows read from PGlite and written to PostgreSQL per statement. */
const BATCH = 2000;

/** Neither database limits a statement or waits long for its turn: the copy runs alone. */
const LIMITS = { statementTimeoutMs: 0, acquireTimeoutMs: 60_000, poolSize: 1, autoAnalyze: false };

/**
 * The copy of `lattice copy-to-postgres --to <postgres url>` (src/cli/copy-to-postgres.ts,
 * docs/operating.md#moving-from-pglite-to-postgresql):
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
