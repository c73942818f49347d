import { packageJson, type Registry } from './registry.js';

/**
 * MIME types (`urn:ietf:bcp:13`, docs/terminology.md#code-systems-built-in): `type/subtype` must
 * be a media type of the `mime-db` package (IANA's registrations and the common unregistered
 * ones); parameters may follow as the grammar of RFC 2045 says (`; name=value`, the value a
 * token or a quoted string). Type and subtype are case-insensitive (the code is given back in
 * lower case); display is the code. Enumerable: the media types without parameters, in order.
 */

const TOKEN = "[!#$%&'*+\\-.^_`|~0-9A-Za-z]+";
const QUOTED = '"(?:[^"\\\\\\r\\n]|\\\\.)*"';
const PARAMETER = new RegExp(`^[ \\t]*;[ \\t]*(${TOKEN})=(${TOKEN}|${QUOTED})`);
const types = Object.keys(packageJson<Record<string, unknown>>('mime-db/db.json')).sort();
const known = new Set(types);

/** The media type in canonical spelling, or why it is not one. */
function parse(code: string): { code: string } | { reason: string } {
  const end = code.indexOf(';');
  const head = end < 0 ? code : code.slice(0, end);
  const type = head.trimEnd().toLowerCase();
  if (head !== head.trimStart() || (end < 0 && head !== head.trimEnd())) return { reason: `The media type '${code}' has spaces around it` };
  if (!/^[a-z0-9][a-z0-9!#$&^_.+-]*\/[a-z0-9][a-z0-9!#$&^_.+-]*$/.test(type)) return { reason: `'${head}' is not of the form type/subtype` };
  if (!known.has(type)) return { reason: `The media type '${type}' is not a known media type` };
  for (let rest = code.slice(type.length); rest !== ''; ) {
    const m = PARAMETER.exec(rest);
    if (!m) return { reason: `The parameters '${rest.trim()}' are not of the form ; name=value` };
    rest = rest.slice(m[0].length);
  }
  return { code: type + code.slice(type.length) };
}

export const mimeRegistry: Registry = {
  find(code) {
    const parsed = parse(code);
    return 'code' in parsed ? { code: parsed.code, display: parsed.code } : undefined;
  },
  reason(code) {
    const parsed = parse(code);
    return 'reason' in parsed ? parsed.reason : undefined;
  },
  list: () => types,
};
