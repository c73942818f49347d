import { packageJson, type Registry } from './registry.js';

/**
 * BCP-47 language tags (`urn:ietf:bcp:47`, docs/terminology.md#code-systems-built-in): the
 * grammar of RFC 5646 (language with extended language subtags, script, region, variants,
 * extensions, private use; the grandfathered tags), each subtag checked against the IANA
 * Language Subtag Registry as the `language-subtag-registry` package carries it (private-use
 * ranges such as `qaa..qtz` included). Tags are case-insensitive: the code is given back in the
 * registry's case (`en-us` → `en-US`). Display in English: the language's description, then in
 * parentheses those of the script, region and variants (`en-US` → `English (United States)`).
 * Not enumerable (a grammar).
 */

interface SubtagRecord {
  Type: string;
  Subtag?: string;
  Tag?: string;
  Description: string[];
  Prefix?: string[];
}

/** Subtags by type, keyed lower case. */
const subtags = new Map<string, Map<string, SubtagRecord>>();
/** Whole tags (grandfathered, redundant), keyed lower case. */
const wholeTags = new Map<string, SubtagRecord>();

for (const r of packageJson<SubtagRecord[]>('language-subtag-registry/data/json/registry.json')) {
  if (r.Tag) {
    wholeTags.set(r.Tag.toLowerCase(), r);
    continue;
  }
  if (!r.Subtag) continue;
  const byType = subtags.get(r.Type) ?? new Map<string, SubtagRecord>();
  subtags.set(r.Type, byType);
  const range = /^([a-z]+|[0-9]+)\.\.([a-z]+|[0-9]+)$/i.exec(r.Subtag);
  if (range) for (const s of rangeOf(range[1].toLowerCase(), range[2].toLowerCase())) byType.set(s, { ...r, Subtag: s });
  else byType.set(r.Subtag.toLowerCase(), r);
}

/** Every subtag from `a` to `b` (same length, letters or digits), e.g. `qaa..qtz`. */
function rangeOf(a: string, b: string): string[] {
  const out: string[] = [];
  const alphabet = /^[0-9]+$/.test(a) ? '0123456789' : 'abcdefghijklmnopqrstuvwxyz';
  const next = (s: string): string => {
    const chars = s.split('');
    for (let i = chars.length - 1; i >= 0; i--) {
      const k = alphabet.indexOf(chars[i]);
      if (k < alphabet.length - 1) {
        chars[i] = alphabet[k + 1];
        return chars.join('');
      }
      chars[i] = alphabet[0];
    }
    return chars.join('');
  };
  for (let s = a; out.length < 20_000; s = next(s)) {
    out.push(s);
    if (s === b) break;
  }
  return out;
}

const lookup = (type: string, subtag: string) => subtags.get(type)?.get(subtag.toLowerCase());
const ALNUM = /^[a-z0-9]+$/i;

type Parsed = { code: string; display: string } | { reason: string };

/** Parses and checks a tag; the code in the registry's case and its English display, or why it is not a tag. */
function parse(tag: string): Parsed {
  const whole = wholeTags.get(tag.toLowerCase());
  if (whole?.Type === 'grandfathered' && whole.Tag) return { code: whole.Tag, display: whole.Description[0] };
  const parts = tag.split('-');
  if (parts.some((p) => p === '' || !ALNUM.test(p) || p.length > 8)) return { reason: `The language tag '${tag}' is not well-formed` };
  let i = 0;
  const out: string[] = [];
  const extra: string[] = [];
  let language: string;
  if (parts[0].toLowerCase() === 'x') {
    if (parts.length < 2) return { reason: `The private-use tag '${tag}' has no subtag` };
    return { code: parts.map((p) => p.toLowerCase()).join('-'), display: 'Private use' };
  }
  {
    const first = parts[i++];
    if (!/^[a-z]{2,3}$|^[a-z]{5,8}$/i.test(first)) return { reason: `'${first}' is not a language subtag` };
    const rec = lookup('language', first);
    if (!rec) return { reason: `Unknown language subtag '${first}'` };
    out.push(first.toLowerCase());
    language = rec.Description[0];
  }
  // Extended language subtags (at most three, each with its prefix).
  for (let n = 0; n < 3 && i < parts.length && /^[a-z]{3}$/i.test(parts[i]); n++) {
    const rec = lookup('extlang', parts[i]);
    if (!rec) return { reason: `Unknown extended language subtag '${parts[i]}'` };
    out.push(parts[i++].toLowerCase());
    language = rec.Description[0];
  }
  if (i < parts.length && /^[a-z]{4}$/i.test(parts[i])) {
    const rec = lookup('script', parts[i]);
    if (!rec) return { reason: `Unknown script subtag '${parts[i]}'` };
    const s = parts[i++];
    out.push(s[0].toUpperCase() + s.slice(1).toLowerCase());
    extra.push(rec.Description[0]);
  }
  if (i < parts.length && /^[a-z]{2}$|^[0-9]{3}$/i.test(parts[i])) {
    const rec = lookup('region', parts[i]);
    if (!rec) return { reason: `Unknown region subtag '${parts[i]}'` };
    out.push(parts[i++].toUpperCase());
    extra.push(rec.Description[0]);
  }
  const variants = new Set<string>();
  while (i < parts.length && /^[a-z0-9]{5,8}$|^[0-9][a-z0-9]{3}$/i.test(parts[i])) {
    const v = parts[i++].toLowerCase();
    const rec = lookup('variant', v);
    if (!rec) return { reason: `Unknown variant subtag '${v}'` };
    if (variants.has(v)) return { reason: `The variant subtag '${v}' is repeated` };
    variants.add(v);
    out.push(v);
    extra.push(rec.Description[0]);
  }
  const singletons = new Set<string>();
  while (i < parts.length && /^[a-wyz0-9]$/i.test(parts[i])) {
    const s = parts[i++].toLowerCase();
    if (singletons.has(s)) return { reason: `The extension '${s}' is repeated` };
    singletons.add(s);
    const start = i;
    while (i < parts.length && /^[a-z0-9]{2,8}$/i.test(parts[i])) i++;
    if (i === start) return { reason: `The extension '${s}' has no subtag` };
    out.push(s, ...parts.slice(start, i).map((p) => p.toLowerCase()));
  }
  if (i < parts.length && parts[i].toLowerCase() === 'x') {
    if (i + 1 >= parts.length) return { reason: `The private-use part of '${tag}' has no subtag` };
    out.push(...parts.slice(i).map((p) => p.toLowerCase()));
    i = parts.length;
  }
  if (i < parts.length) return { reason: `The language tag '${tag}' is not well-formed at '${parts[i]}'` };
  return { code: out.join('-'), display: extra.length > 0 ? `${language} (${extra.join(', ')})` : language };
}

export const bcp47Registry: Registry = {
  find(code) {
    const parsed = parse(code);
    return 'code' in parsed ? { code: parsed.code, display: parsed.display } : undefined;
  },
  reason(code) {
    const parsed = parse(code);
    return 'reason' in parsed ? parsed.reason : undefined;
  },
};
