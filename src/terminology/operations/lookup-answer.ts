import { fitsType } from '../../operations/format-output.js';
import { valueKey } from '../../operations/params.js';
import type { LookupResult } from '../engine/lookup.js';

/**
 * A `$lookup` answer written straight to its JSON text: the same text `JSON.stringify` gives of
 * the Parameters the generic formatter (operations/format-output.ts) makes of the handler's
 * output — the out-parameters in the definition's order (`name`, `version`, `display`,
 * `definition`, `designation`, `property`, `abstract`, `code`, `system`, `used-supplement`),
 * each designation's and property's parts in theirs — without the ~5 objects per designation
 * and property that the formatter builds and the serialiser then walks. Formatting and
 * serialising a LOINC term's answer that way (some 20 designations and 13 properties, 7 KB, in
 * the bench's release) was the largest part of what an ever new `$lookup` adds to the request
 * path; written directly it takes about a third of that time (docs/benchmarks.md, 2026-11-29).
 *
 * Undefined when a value would not pass the formatter's checks (an empty string, a number
 * that is not finite): the caller then takes the generic path, which reports it as before.
 */
export function lookupAnswerText(r: LookupResult): string | undefined {
  const display = r.display ?? r.code;
  if (!fitsType('string', r.name) || !fitsType('string', display)) return undefined;
  let t = `{"resourceType":"Parameters","parameter":[{"name":"name","valueString":${JSON.stringify(r.name)}}`;
  if (r.version != null) {
    if (!fitsType('string', r.version)) return undefined;
    t += `,{"name":"version","valueString":${JSON.stringify(r.version)}}`;
  }
  t += `,{"name":"display","valueString":${JSON.stringify(display)}}`;
  if (r.definition != null) {
    if (!fitsType('string', r.definition)) return undefined;
    t += `,{"name":"definition","valueString":${JSON.stringify(r.definition)}}`;
  }
  for (const d of r.designation) {
    const parts: string[] = [];
    if (d.language != null) {
      if (!fitsType('code', d.language)) return undefined;
      parts.push(`{"name":"language","valueCode":${JSON.stringify(d.language)}}`);
    }
    if (d.use != null) {
      if (!fitsType('Coding', d.use)) return undefined;
      parts.push(`{"name":"use","valueCoding":${JSON.stringify(d.use)}}`);
    }
    if (!fitsType('string', d.value)) return undefined;
    parts.push(`{"name":"value","valueString":${JSON.stringify(d.value)}}`);
    if (d.source != null) {
      if (!fitsType('canonical', d.source)) return undefined;
      parts.push(`{"name":"source","valueCanonical":${JSON.stringify(d.source)}}`);
    }
    t += `,{"name":"designation","part":[${parts.join(',')}]}`;
  }
  for (const p of r.property) {
    if (!fitsType('code', p.code) || !fitsType(p.value.type, p.value.value)) return undefined;
    t += `,{"name":"property","part":[{"name":"code","valueCode":${JSON.stringify(p.code)}}`;
    if (p.codeDisplay != null) {
      if (!fitsType('string', p.codeDisplay)) return undefined;
      t += `,{"name":"code-display","valueString":${JSON.stringify(p.codeDisplay)}}`;
    }
    t += `,{"name":"value","${valueKey(p.value.type)}":${JSON.stringify(p.value.value)}}`;
    if (p.description != null) {
      if (!fitsType('string', p.description)) return undefined;
      t += `,{"name":"description","valueString":${JSON.stringify(p.description)}}`;
    }
    t += ']}';
  }
  if (r.abstract != null) {
    if (!fitsType('boolean', r.abstract)) return undefined;
    t += `,{"name":"abstract","valueBoolean":${r.abstract}}`;
  }
  if (!fitsType('code', r.code) || !fitsType('uri', r.system)) return undefined;
  t += `,{"name":"code","valueCode":${JSON.stringify(r.code)}},{"name":"system","valueUri":${JSON.stringify(r.system)}}`;
  for (const s of r.usedSupplements) {
    if (!fitsType('canonical', s)) return undefined;
    t += `,{"name":"used-supplement","valueCanonical":${JSON.stringify(s)}}`;
  }
  return `${t}]}`;
}
