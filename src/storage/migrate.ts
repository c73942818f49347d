import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { srcPath } from '../paths.js';
import type { Database } from '../core/database.js';

/** Arbitrary constant: the advisory lock that serializes migrations across processes. */
const MIGRATION_LOCK = 7_231_001;

/**
 * Applies `src/storage/migrations/*.sql` in name order, each once, recorded in
 * `schema_migration`. All pending files run in one transaction under an advisory lock, so two
 * processes starting together apply them exactly once and never see a half-migrated schema.
 * Returns the names applied now.
 */
export async function migrate(db: Database, dir = srcPath('storage', 'migrations')): Promise<string[]> {
  const files = readdirSync(dir).filter((f) => f.endsWith('.sql')).sort();
  // The common case — a restart on an up-to-date database — is one query, without the
  // transaction, advisory lock and DDL below (docs/errors.md#start-up).
  if (await allApplied(db, files)) return [];
  return db.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    await tx.query(
      'CREATE TABLE IF NOT EXISTS schema_migration (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())',
    );
    const done = new Set((await tx.query<{ name: string }>('SELECT name FROM schema_migration')).rows.map((r) => r.name));
    const applied: string[] = [];
    for (const file of files) {
      if (done.has(file)) continue;
      const sql = readFileSync(join(dir, file), 'utf8');
      for (const statement of splitStatements(sql)) await tx.query(statement);
      await tx.query('INSERT INTO schema_migration (name) VALUES ($1)', [file]);
      applied.push(file);
    }
    return applied;
  });
}

/** Splits a migration on `;` at line ends (migrations keep to one statement per `;\n`). */
function splitStatements(sql: string): string[] {
  return sql
    .split(/;\s*(?:\n|$)/)
    .map((s) => s.replace(/^\s*--.*$/gm, '').trim())
    .filter((s) => s.length > 0);
}

/** PostgreSQL's `undefined_table`: no `schema_migration` yet (a new database). */
const UNDEFINED_TABLE = '42P01';

/** True when every file is recorded as applied; false when any is not, or nothing is yet. */
async function allApplied(db: Database, files: string[]): Promise<boolean> {
  try {
    const res = await db.query<{ missing: number }>(
      'SELECT count(*)::int AS missing FROM unnest($1::text[]) AS f(name) WHERE f.name NOT IN (SELECT name FROM schema_migration)',
      [files],
    );
    return res.rows[0]?.missing === 0;
  } catch (err) {
    if ((err as { code?: string }).code === UNDEFINED_TABLE) return false;
    throw err;
  }
}
