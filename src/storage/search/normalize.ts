/**
 * Text helpers shared by index extraction and query building, so a value is normalized the
 * same way when it is stored and when it is searched for.
 */

/**
 * Longest text kept in an indexed column. PostgreSQL B-tree entries must stay under ~2.7 kB;
 * 512 characters is at most 2 kB in UTF-8 and still exact for every realistic search value.
 * Query values are cut the same way, so exact matches on long values keep working.
 */
export const MAX_INDEXED_LENGTH = 512;

/** Drops NUL characters: PostgreSQL text cannot hold them. */
export function withoutNul(value: string): string {
  return value.includes('\u0000') ? value.split('\u0000').join('') : value;
}

/** Cuts a value to the indexed length (and drops NUL characters). */
export function clip(value: string): string {
  const clean = withoutNul(value);
  return clean.length > MAX_INDEXED_LENGTH ? clean.slice(0, MAX_INDEXED_LENGTH) : clean;
}

/**
 * Normalized form for string search: lower case, accents removed (NFD, then combining marks
 * dropped), whitespace runs folded to one space and trimmed. `Élodie  Smith` → `elodie smith`.
 */
export function normalizeText(value: string): string {
  return clip(
    value
      .normalize('NFD')
      .replace(/\p{M}+/gu, '')
      .toLowerCase()
      .replace(/\s+/g, ' ')
      .trim(),
  );
}

/** Escapes `%`, `_` and `\` so a value is taken literally inside a LIKE pattern. */
export function escapeLike(value: string): string {
  return value.replace(/[\\%_]/g, (c) => `\\${c}`);
}
