import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import type { CodeSystem, ValueSet } from '@medplum/fhirtypes';

/**
 * A deterministic generator of a SNOMED-like code system (the shape of SNOMED CT's is-a graph
 * at full size): `size` concepts on levels 0…20 under one root, 28% of them with 2–3 parents,
 * a display and synonyms/translations as designations, and typed properties. The same seed
 * always yields the same system, so benchmark runs are comparable. The model (parents per
 * concept) stays in memory for the benchmark's correctness checks; `writeNdjson` writes the
 * CodeSystem (with `concept` last, as FHIR's element order puts it) and its value sets as
 * NDJSON for `lattice import`.
 */

export const SNOMED_LIKE_URL = 'http://example.org/bench/snomed-like';
export const VALUE_SET_BASE = 'http://example.org/bench/snomed-like/ValueSet';

/** Relative number of concepts on each level (level 0 is the root). */
const LEVEL_WEIGHTS = [0, 20, 150, 800, 3000, 8000, 16000, 28000, 40000, 48000, 50000, 46000, 38000, 29000, 20000, 12000, 6500, 3000, 1200, 400, 100];
const WORDS = ['acute', 'chronic', 'structure', 'disorder', 'finding', 'procedure', 'of', 'left', 'right', 'upper', 'lower', 'joint', 'bone', 'tissue', 'organ', 'lesion', 'injury', 'syndrome', 'entire', 'body', 'part', 'region', 'congenital', 'infection'];

export interface SnomedLike {
  size: number;
  codes: string[];
  displays: string[];
  level: Uint8Array;
  /** Parents of concept i: parents.subarray(parentStart[i], parentStart[i + 1]). */
  parentStart: Int32Array;
  parents: Int32Array;
  /** The is-a value set's focus concept and its number of members (itself and its descendants). */
  focus: number;
  focusMembers: number;
}

/** A small, fast, seedable PRNG (mulberry32). */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Builds the model; `size` ≥ 1000. */
export function generateSnomedLike(size: number, seed = 20261123): SnomedLike {
  const random = prng(seed);
  const weightSum = LEVEL_WEIGHTS.reduce((a, b) => a + b, 0);
  const counts = LEVEL_WEIGHTS.map((w) => Math.floor(((size - 1) * w) / weightSum));
  counts[0] = 1;
  counts[10] += size - counts.reduce((a, b) => a + b, 0); // rounding remainder on the widest level
  const levelStart: number[] = [];
  let at = 0;
  for (const c of counts) {
    levelStart.push(at);
    at += c;
  }
  const level = new Uint8Array(size);
  const parentStart = new Int32Array(size + 1);
  const parentList: number[] = [];
  const pickOn = (l: number) => levelStart[l] + Math.floor(random() * counts[l]);
  for (let l = 0; l < counts.length; l++) {
    for (let i = levelStart[l]; i < levelStart[l] + counts[l]; i++) {
      level[i] = l;
      parentStart[i] = parentList.length;
      if (l === 0) continue;
      const own = [pickOn(l - 1)];
      if (l > 1 && random() < 0.28) {
        const extra = random() < 0.7 ? 1 : 2;
        for (let k = 0; k < extra * 4 && own.length < 1 + extra; k++) {
          const p = pickOn(Math.max(1, l - 1 - Math.floor(random() * 3)));
          if (!own.includes(p)) own.push(p);
        }
      }
      parentList.push(...own);
    }
  }
  parentStart[size] = parentList.length;
  const parents = Int32Array.from(parentList);
  const codes: string[] = [];
  const displays: string[] = [];
  for (let i = 0; i < size; i++) {
    codes.push(String(100000000 + i * 7 + (i % 7)));
    const words = [WORDS[i % WORDS.length], WORDS[Math.floor(i / 24) % WORDS.length], WORDS[Math.floor(i / 576) % WORDS.length]];
    displays.push(`${words.join(' ')} ${i}`);
  }
  const model: SnomedLike = { size, codes, displays, level, parentStart, parents, focus: 0, focusMembers: size };
  // The is-a value set: the concept whose descendants (any path) come closest to ~1/7 of the system.
  const target = Math.round(size / 7);
  let best = 0;
  let bestCount = size;
  for (let l = 2; l <= 7; l++) {
    for (let k = 0; k < 40 && k < counts[l]; k++) {
      const c = levelStart[l] + Math.floor(random() * counts[l]);
      const n = descendantCount(model, c);
      if (Math.abs(n - target) < Math.abs(bestCount - target)) {
        best = c;
        bestCount = n;
      }
    }
  }
  model.focus = best;
  model.focusMembers = bestCount;
  return model;
}

/** Children lists (inverse of parents), built on demand. */
function childrenOf(m: SnomedLike): { start: Int32Array; list: Int32Array } {
  const start = new Int32Array(m.size + 1);
  for (let i = 0; i < m.parents.length; i++) start[m.parents[i] + 1]++;
  for (let i = 1; i <= m.size; i++) start[i] += start[i - 1];
  const fill = start.slice();
  const list = new Int32Array(m.parents.length);
  for (let c = 0; c < m.size; c++) for (let e = m.parentStart[c]; e < m.parentStart[c + 1]; e++) list[fill[m.parents[e]]++] = c;
  return { start, list };
}

let childCache: { model: SnomedLike; children: ReturnType<typeof childrenOf> } | undefined;

/** Number of concepts in the subtree of `root` (itself included, every path). */
export function descendantCount(m: SnomedLike, root: number): number {
  if (childCache?.model !== m) childCache = { model: m, children: childrenOf(m) };
  const { start, list } = childCache.children;
  const seen = new Uint8Array(m.size);
  const stack = [root];
  seen[root] = 1;
  let n = 0;
  while (stack.length > 0) {
    const c = stack.pop() as number;
    n++;
    for (let e = start[c]; e < start[c + 1]; e++) {
      const d = list[e];
      if (!seen[d]) {
        seen[d] = 1;
        stack.push(d);
      }
    }
  }
  return n;
}

/** The members of `root`'s subtree (itself and every descendant, every path). */
export function descendants(m: SnomedLike, root: number): number[] {
  if (childCache?.model !== m) childCache = { model: m, children: childrenOf(m) };
  const { start, list } = childCache.children;
  const seen = new Uint8Array(m.size);
  const out = [root];
  seen[root] = 1;
  for (let k = 0; k < out.length; k++) {
    const c = out[k];
    for (let e = start[c]; e < start[c + 1]; e++) {
      if (!seen[list[e]]) {
        seen[list[e]] = 1;
        out.push(list[e]);
      }
    }
  }
  return out;
}

/** True when `a` is `b` or an ancestor of `b` (walks up from b). */
export function isAncestorOrSelf(m: SnomedLike, a: number, b: number): boolean {
  if (a === b) return true;
  if (m.level[a] >= m.level[b]) return false;
  const seen = new Set<number>([b]);
  const stack = [b];
  while (stack.length > 0) {
    const c = stack.pop() as number;
    for (let e = m.parentStart[c]; e < m.parentStart[c + 1]; e++) {
      const p = m.parents[e];
      if (p === a) return true;
      if (!seen.has(p) && m.level[p] > m.level[a]) {
        seen.add(p);
        stack.push(p);
      }
    }
  }
  return false;
}

/** The CodeSystem header (everything but `concept`). */
export function codeSystemHeader(m: SnomedLike, version = '1'): CodeSystem {
  return {
    resourceType: 'CodeSystem',
    id: `snomed-like-${version}`,
    url: SNOMED_LIKE_URL,
    version,
    name: 'SnomedLike',
    title: 'Generated SNOMED-like code system',
    status: 'active',
    content: 'complete',
    caseSensitive: true,
    hierarchyMeaning: 'is-a',
    count: m.size,
    property: [
      { code: 'parent', uri: 'http://hl7.org/fhir/concept-properties#parent', type: 'code' },
      { code: 'inactive', uri: 'http://hl7.org/fhir/concept-properties#inactive', type: 'boolean' },
      { code: 'moduleId', type: 'code' },
      { code: 'sufficientlyDefined', type: 'boolean' },
    ],
  };
}

/** Concept i as it appears in `CodeSystem.concept`. */
export function conceptJson(m: SnomedLike, i: number): Record<string, unknown> {
  const property: Array<Record<string, unknown>> = [];
  for (let e = m.parentStart[i]; e < m.parentStart[i + 1]; e++) property.push({ code: 'parent', valueCode: m.codes[m.parents[e]] });
  property.push({ code: 'moduleId', valueCode: i % 5 === 0 ? '900000000000012004' : '900000000000207008' });
  property.push({ code: 'sufficientlyDefined', valueBoolean: i % 3 === 0 });
  if (i % 50 === 49) property.push({ code: 'inactive', valueBoolean: true });
  const designation: Array<Record<string, unknown>> = [
    { language: 'en', use: { system: 'http://snomed.info/sct', code: '900000000000013009', display: 'Synonym' }, value: `${m.displays[i]} (synonym)` },
  ];
  if (i % 3 === 0) designation.push({ language: 'de', value: `Begriff ${i}` });
  return { code: m.codes[i], display: m.displays[i], designation, property };
}

/** The benchmark's value sets: is-a the focus concept (~size/7 members), and a small enumerated one. */
export function valueSets(m: SnomedLike): ValueSet[] {
  return [
    {
      resourceType: 'ValueSet',
      id: 'snomed-like-isa',
      url: `${VALUE_SET_BASE}/isa`,
      version: '1',
      status: 'active',
      compose: { include: [{ system: SNOMED_LIKE_URL, filter: [{ property: 'concept', op: 'is-a', value: m.codes[m.focus] }] }] },
    },
    {
      resourceType: 'ValueSet',
      id: 'snomed-like-enum',
      url: `${VALUE_SET_BASE}/enum`,
      version: '1',
      status: 'active',
      compose: { include: [{ system: SNOMED_LIKE_URL, concept: Array.from({ length: 100 }, (_, k) => ({ code: m.codes[k * 7 + 1] })) }] },
    },
  ];
}

/** Writes the code system (one NDJSON line, `concept` last) and its value sets to `path`. */
export async function writeNdjson(m: SnomedLike, path: string, version = '1'): Promise<void> {
  const out = createWriteStream(path);
  const write = async (text: string) => {
    if (!out.write(text)) await once(out, 'drain');
  };
  const header = JSON.stringify(codeSystemHeader(m, version));
  await write(`${header.slice(0, -1)},"concept":[`);
  for (let i = 0; i < m.size; i++) await write((i > 0 ? ',' : '') + JSON.stringify(conceptJson(m, i)));
  await write(']}\n');
  for (const vs of valueSets(m)) await write(`${JSON.stringify(vs)}\n`);
  out.end();
  await once(out, 'finish');
}
