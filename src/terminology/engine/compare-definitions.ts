import type { ValueSet, ValueSetComposeInclude } from '@medplum/fhirtypes';
import { providerFor } from '../providers/select.js';
import type { TermContext } from '../types.js';
import { resolveCodeSystem } from './resolve.js';

/**
 * The definition half of `ValueSet/$compare` (docs/terminology.md#compare): what two value-set
 * definitions say about each other without expanding them. Only facts that hold whatever the code
 * system holds are used; anything else is left undecided (`undefined`) for the expansion to settle.
 */

/** Three answers to "does this set have a code of that kind": yes, no, or cannot tell. */
export type Tri = boolean | undefined;

/** What the definitions say: does this have codes the other lacks, the reverse, and do they share one. */
export interface DefinitionFacts {
  thisExtra: Tri;
  otherExtra: Tri;
  shared: Tri;
  /** Both sides only enumerate codes: the codes themselves, per side (`system|code`). */
  codes?: { this: Set<string>; other: Set<string> };
}

/** One include, reduced to what decides its codes. */
interface Part {
  kind: 'all' | 'codes' | 'filters';
  /** Identity of the part up to the order of its filters or concepts. */
  key: string;
  codes: string[];
  isA?: string;
}

function partOf(inc: ValueSetComposeInclude): Part {
  if (inc.concept?.length) {
    const codes = [...new Set(inc.concept.map((c) => c.code))].sort();
    return { kind: 'codes', key: `codes ${JSON.stringify(codes)}`, codes };
  }
  if (inc.filter?.length) {
    const filters = inc.filter.map((f) => JSON.stringify([f.property, f.op, f.value])).sort();
    const only = inc.filter.length === 1 ? inc.filter[0] : undefined;
    const isA = only && only.property === 'concept' && only.op === 'is-a' ? only.value : undefined;
    return { kind: 'filters', key: `filters ${filters.join(',')}`, codes: [], isA };
  }
  return { kind: 'all', key: 'all', codes: [] };
}

/** The includes of one side by system, or undefined when the definition alone cannot be read (imports, excludes, no compose). */
function bySystem(vs: ValueSet): Map<string, { version: string | undefined; parts: Part[] }> | undefined {
  const compose = vs.compose;
  if (!compose?.include?.length || compose.exclude?.length) return undefined;
  const out = new Map<string, { version: string | undefined; parts: Part[] }>();
  for (const inc of compose.include) {
    if (!inc.system || inc.valueSet?.length) return undefined;
    const entry = out.get(inc.system);
    if (entry && entry.version !== inc.version) return undefined;
    if (entry) entry.parts.push(partOf(inc));
    else out.set(inc.system, { version: inc.version, parts: [partOf(inc)] });
  }
  return out;
}

/** Whether a code system is known to hold `code` (undefined when it cannot be told). */
async function holds(tc: TermContext, system: string, version: string | undefined, code: string): Promise<Tri> {
  const cs = await resolveCodeSystem(tc, system, version);
  if (!cs || cs.content === 'fragment' || cs.content === 'example') return undefined;
  const found = await providerFor(tc, cs).findConcepts([code]);
  return found.has(code) ? true : undefined;
}

/** Whether one side's selection from a system is known to be non-empty. */
async function nonEmpty(tc: TermContext, system: string, version: string | undefined, parts: Part[]): Promise<Tri> {
  for (const p of parts) {
    if (p.kind === 'codes' && p.codes.length) return true;
    // "All codes of a code system" names codes, even when the system is not known here.
    if (p.kind === 'all') return true;
    if (p.isA !== undefined && (await holds(tc, system, version, p.isA))) return true;
  }
  return undefined;
}

/** `a ⊂ b` for two single is-a filters of one system with an is-a hierarchy: b's root is a proper ancestor of a's. */
async function isAWithin(tc: TermContext, system: string, version: string | undefined, a: string, b: string): Promise<boolean> {
  const cs = await resolveCodeSystem(tc, system, version);
  if (!cs || (cs.hierarchyMeaning !== undefined && cs.hierarchyMeaning !== 'is-a')) return false;
  const provider = providerFor(tc, cs);
  const found = await provider.findConcepts([a, b]);
  const ca = found.get(a);
  const cb = found.get(b);
  return !!ca && !!cb && ca.id !== cb.id && (await provider.isAncestor(cb.id, ca.id));
}

/** The facts for one system both sides draw from (same version on both sides). */
async function systemFacts(tc: TermContext, system: string, version: string | undefined, a: Part[], b: Part[]): Promise<DefinitionFacts> {
  const keysA = new Set(a.map((p) => p.key));
  const keysB = new Set(b.map((p) => p.key));
  if (a.every((p) => p.kind === 'codes') && b.every((p) => p.kind === 'codes')) {
    const ca = new Set(a.flatMap((p) => p.codes).map((c) => `${system}|${c}`));
    const cb = new Set(b.flatMap((p) => p.codes).map((c) => `${system}|${c}`));
    return { ...setFacts(ca, cb), codes: { this: ca, other: cb } };
  }
  if (keysA.size === keysB.size && [...keysA].every((k) => keysB.has(k))) {
    return { thisExtra: false, otherExtra: false, shared: await nonEmpty(tc, system, version, a) };
  }
  const whole = (parts: Part[]) => parts.some((p) => p.kind === 'all');
  if (whole(b) && !whole(a)) return { thisExtra: false, otherExtra: undefined, shared: await nonEmpty(tc, system, version, a) };
  if (whole(a) && !whole(b)) return { thisExtra: undefined, otherExtra: false, shared: await nonEmpty(tc, system, version, b) };
  if (a.length === 1 && b.length === 1 && a[0].isA !== undefined && b[0].isA !== undefined) {
    // The root of a proper is-a branch is in the wider set only.
    if (await isAWithin(tc, system, version, a[0].isA, b[0].isA)) return { thisExtra: false, otherExtra: true, shared: true };
    if (await isAWithin(tc, system, version, b[0].isA, a[0].isA)) return { thisExtra: true, otherExtra: false, shared: true };
  }
  return { thisExtra: undefined, otherExtra: undefined, shared: undefined };
}

/** Facts of two known code sets. */
export function setFacts(a: Set<string>, b: Set<string>): DefinitionFacts {
  const shared = [...a].some((c) => b.has(c));
  return { thisExtra: [...a].some((c) => !b.has(c)), otherExtra: [...b].some((c) => !a.has(c)), shared };
}

const or = (x: Tri, y: Tri): Tri => (x === true || y === true ? true : x === false && y === false ? false : undefined);

/** What the two definitions say about each other; every fact `undefined` when they cannot be read alone. */
export async function compareDefinitions(tc: TermContext, thisVs: ValueSet, otherVs: ValueSet): Promise<DefinitionFacts> {
  const unknown: DefinitionFacts = { thisExtra: undefined, otherExtra: undefined, shared: undefined };
  const a = bySystem(thisVs);
  const b = bySystem(otherVs);
  if (!a || !b) return unknown;
  let facts: DefinitionFacts = { thisExtra: false, otherExtra: false, shared: false, codes: { this: new Set(), other: new Set() } };
  for (const system of new Set([...a.keys(), ...b.keys()])) {
    const sa = a.get(system);
    const sb = b.get(system);
    let f: DefinitionFacts;
    if (sa && sb) {
      // Different versions of one system select different codes in ways only an expansion shows.
      if (sa.version !== sb.version) return unknown;
      f = await systemFacts(tc, system, sa.version, sa.parts, sb.parts);
    } else if (sa) {
      f = { thisExtra: await nonEmpty(tc, system, sa.version, sa.parts), otherExtra: false, shared: false };
      if (sa.parts.every((p) => p.kind === 'codes')) f.codes = { this: new Set(sa.parts.flatMap((p) => p.codes).map((c) => `${system}|${c}`)), other: new Set() };
    } else {
      const parts = (sb as { version: string | undefined; parts: Part[] }).parts;
      f = { thisExtra: false, otherExtra: await nonEmpty(tc, system, sb?.version, parts), shared: false };
      if (parts.every((p) => p.kind === 'codes')) f.codes = { this: new Set(), other: new Set(parts.flatMap((p) => p.codes).map((c) => `${system}|${c}`)) };
    }
    const codes = facts.codes && f.codes ? { this: new Set([...facts.codes.this, ...f.codes.this]), other: new Set([...facts.codes.other, ...f.codes.other]) } : undefined;
    facts = { thisExtra: or(facts.thisExtra, f.thisExtra), otherExtra: or(facts.otherExtra, f.otherExtra), shared: or(facts.shared, f.shared), codes };
  }
  return facts;
}
