/**
 * The comma lists of FHIR search values (R4 search, "escaping search parameters"): shared by the
 * search itself and the conditional-write criteria that name a search.
 */

/** Splits on commas that are not escaped; pieces keep their other escapes. */
export function splitValues(raw: string): string[] {
  const out: string[] = [];
  let current = '';
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i];
    if (c === '\\' && i + 1 < raw.length) {
      current += c + raw[++i];
    } else if (c === ',') {
      out.push(current);
      current = '';
    } else current += c;
  }
  out.push(current);
  return out;
}
