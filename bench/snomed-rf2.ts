import { createWriteStream, mkdirSync } from 'node:fs';
import { once } from 'node:events';
import { join } from 'node:path';
import { prng, type SnomedLike } from './snomed-like.js';

/**
 * A synthetic RF2 Snapshot of a SNOMED-like model (snomed-like.ts: the shape of SNOMED CT's
 * is-a graph): made-up SCTIDs with valid Verhoeff check digits, per concept an FSN, an en-US
 * preferred synonym, an en-GB preferred synonym (a different term for one concept in ten) and
 * acceptable synonyms (~4.4 descriptions per concept, ~1.6M at 370,000 concepts), both dialect
 * refsets, inferred is-a relationships and 1–4 attributes in role groups per concept, concrete
 * values, a simple refset and REPLACED BY associations for inactive concepts (one in eight
 * concepts is inactive). Deterministic: the same model and seed give the same files. No SNOMED
 * CT content: only the metadata SCTIDs the format relies on are real.
 */

const D = [
  [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
  [1, 2, 3, 4, 0, 6, 7, 8, 9, 5],
  [2, 3, 4, 0, 1, 7, 8, 9, 5, 6],
  [3, 4, 0, 1, 2, 8, 9, 5, 6, 7],
  [4, 0, 1, 2, 3, 9, 5, 6, 7, 8],
  [5, 9, 8, 7, 6, 0, 4, 3, 2, 1],
  [6, 5, 9, 8, 7, 1, 0, 4, 3, 2],
  [7, 6, 5, 9, 8, 2, 1, 0, 4, 3],
  [8, 7, 6, 5, 9, 3, 2, 1, 0, 4],
  [9, 8, 7, 6, 5, 4, 3, 2, 1, 0],
];
const P = [
  [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
  [1, 5, 7, 6, 2, 8, 3, 0, 9, 4],
  [5, 8, 0, 3, 7, 9, 6, 1, 4, 2],
  [8, 9, 1, 6, 0, 4, 3, 5, 2, 7],
  [9, 4, 5, 3, 1, 2, 8, 7, 0, 6],
  [4, 2, 8, 6, 5, 7, 3, 9, 0, 1],
  [2, 7, 9, 3, 8, 0, 6, 4, 1, 5],
  [7, 0, 4, 6, 9, 1, 3, 2, 5, 8],
];
const INV = [0, 4, 3, 2, 1, 5, 6, 7, 8, 9];

/** The Verhoeff check digit of a digit string. */
export function verhoeff(digits: string): string {
  let c = 0;
  for (let i = 0; i < digits.length; i++) c = D[c][P[(i + 1) % 8][digits.charCodeAt(digits.length - 1 - i) - 48]];
  return String(INV[c]);
}

/** An SCTID: item number, partition (`00` concept, `01` description, `02` relationship), check digit. */
export function sctid(item: number, partition: '00' | '01' | '02'): string {
  const s = `${item}${partition}`;
  return s + verhoeff(s);
}

const META = {
  isA: '116680003',
  fsn: '900000000000003001',
  synonym: '900000000000013009',
  us: '900000000000509007',
  gb: '900000000000508004',
  preferred: '900000000000548007',
  acceptable: '900000000000549004',
  inferred: '900000000000011006',
  existential: '900000000000451002',
  caseInsensitive: '900000000000448009',
  primitive: '900000000000074008',
  defined: '900000000000073002',
  replacedBy: '900000000000526001',
  core: '900000000000207008',
  dependency: '900000000000534007',
};
const WORDS = ['acute', 'chronic', 'structure', 'disorder', 'finding', 'procedure', 'left', 'right', 'upper', 'lower', 'joint', 'bone', 'tissue', 'organ', 'lesion', 'injury', 'syndrome', 'entire', 'region', 'congenital', 'infection', 'tumour', 'colour', 'haemorrhage'];

/** Whether the release makes concept i inactive (one in eight, none of the top levels). */
export function isInactive(i: number): boolean {
  return i > 20 && i % 8 === 5;
}

/**
 * The is-a parents the release writes for concept i: none for an inactive concept (it has no
 * relationships), and for an active one each model parent, an inactive one replaced by the
 * nearest active ancestor on its first-parent line (an inactive concept has no children).
 */
export function rf2Parents(m: SnomedLike, i: number): number[] {
  if (isInactive(i)) return [];
  const out: number[] = [];
  for (let e = m.parentStart[i]; e < m.parentStart[i + 1]; e++) {
    let p = m.parents[e];
    while (isInactive(p)) p = m.parents[m.parentStart[p]];
    if (!out.includes(p)) out.push(p);
  }
  return out;
}

/** Whether a is b or an ancestor of b in the release's is-a graph (rf2Parents). */
export function rf2IsAncestorOrSelf(m: SnomedLike, a: number, b: number): boolean {
  const seen = new Set<number>([b]);
  for (const queue = [b]; queue.length > 0; ) {
    const c = queue.pop() as number;
    if (c === a) return true;
    for (const p of rf2Parents(m, c)) {
      if (seen.has(p)) continue;
      seen.add(p);
      queue.push(p);
    }
  }
  return false;
}

export interface Rf2Release {
  folder: string;
  module: string;
  date: string;
  /** SCTID of model concept i. */
  ids: string[];
  /** Attribute type SCTIDs (model concepts 1..8 are the attributes' own concepts). */
  attributes: string[];
  refset: string;
  refsetMembers: number;
  descriptions: number;
  relationships: number;
}

/** Writes the RF2 Snapshot of `m` into `folder`; `onProgress` gets rows written. */
export async function writeRf2(m: SnomedLike, folder: string, options: { date?: string; seed?: number } = {}): Promise<Rf2Release> {
  const date = options.date ?? '20250131';
  const random = prng(options.seed ?? 73);
  const module = sctid(9_100_001, '00');
  const ids = Array.from({ length: m.size }, (_, i) => sctid(2_000_000 + i, '00'));
  // Concepts 1..8 (level 1) serve as attribute types; the values are concepts of two wide levels.
  const attributes = ids.slice(1, 9);
  const refset = sctid(9_100_002, '00');
  const terminology = join(folder, 'Snapshot', 'Terminology');
  const language = join(folder, 'Snapshot', 'Refset', 'Language');
  const content = join(folder, 'Snapshot', 'Refset', 'Content');
  const metadata = join(folder, 'Snapshot', 'Refset', 'Metadata');
  for (const d of [terminology, language, content, metadata]) mkdirSync(d, { recursive: true });
  const file = (dir: string, name: string, header: string[]) => {
    const stream = createWriteStream(join(dir, name));
    let buffer = `${header.join('\t')}\r\n`;
    return {
      async row(fields: Array<string | number>) {
        buffer += `${fields.join('\t')}\r\n`;
        if (buffer.length > 1 << 20) {
          if (!stream.write(buffer)) await once(stream, 'drain');
          buffer = '';
        }
      },
      async close() {
        stream.end(buffer);
        await once(stream, 'finish');
      },
    };
  };
  const concepts = file(terminology, `sct2_Concept_Snapshot_XX_${date}.txt`, ['id', 'effectiveTime', 'active', 'moduleId', 'definitionStatusId']);
  await concepts.row([module, date, 1, module, META.primitive]);
  await concepts.row([refset, date, 1, module, META.primitive]);
  for (let i = 0; i < m.size; i++) await concepts.row([ids[i], date, isInactive(i) ? 0 : 1, module, i % 3 === 0 ? META.defined : META.primitive]);
  await concepts.close();

  const descriptionFile = file(terminology, `sct2_Description_Snapshot-en_XX_${date}.txt`, ['id', 'effectiveTime', 'active', 'moduleId', 'conceptId', 'languageCode', 'typeId', 'term', 'caseSignificanceId']);
  const languageFile = file(language, `der2_cRefset_LanguageSnapshot-en_XX_${date}.txt`, ['id', 'effectiveTime', 'active', 'moduleId', 'refsetId', 'referencedComponentId', 'acceptabilityId']);
  let item = 3_000_000;
  let member = 0;
  let descriptions = 0;
  const uuid = (n: number) => `00000000-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;
  const describe = async (concept: string, type: string, term: string, us: string | undefined, gb: string | undefined) => {
    const id = sctid(item++, '01');
    descriptions++;
    await descriptionFile.row([id, date, 1, module, concept, 'en', type, term, META.caseInsensitive]);
    if (us) await languageFile.row([uuid(member++), date, 1, module, META.us, id, us]);
    if (gb) await languageFile.row([uuid(member++), date, 1, module, META.gb, id, gb]);
  };
  const extra = [['module', module], ['refset', refset]] as const;
  for (const [word, id] of extra) {
    await describe(id, META.fsn, `Synthetic ${word} (metadata)`, META.preferred, META.preferred);
    await describe(id, META.synonym, `Synthetic ${word}`, META.preferred, META.preferred);
  }
  for (let i = 0; i < m.size; i++) {
    const pt = m.displays[i];
    await describe(ids[i], META.fsn, `${pt} (finding)`, META.preferred, META.preferred);
    if (i % 10 === 3) {
      // A dialect difference: each dialect prefers its own spelling, the other is acceptable.
      await describe(ids[i], META.synonym, `${pt} us`, META.preferred, META.acceptable);
      await describe(ids[i], META.synonym, `${pt} gb`, META.acceptable, META.preferred);
    } else {
      await describe(ids[i], META.synonym, pt, META.preferred, META.preferred);
    }
    const synonyms = random() < 0.3 ? 3 : 2;
    for (let k = 0; k < synonyms; k++) await describe(ids[i], META.synonym, `${WORDS[(i + k * 7) % WORDS.length]} ${pt}`, META.acceptable, META.acceptable);
  }
  await descriptionFile.close();
  await languageFile.close();

  const relationshipFile = file(terminology, `sct2_Relationship_Snapshot_XX_${date}.txt`, ['id', 'effectiveTime', 'active', 'moduleId', 'sourceId', 'destinationId', 'relationshipGroup', 'typeId', 'characteristicTypeId', 'modifierId']);
  let relationships = 0;
  const relate = async (source: string, destination: string, group: number, type: string) => {
    relationships++;
    await relationshipFile.row([sctid(item++, '02'), date, 1, module, source, destination, group, type, META.inferred, META.existential]);
  };
  await relate(module, ids[0], 0, META.isA);
  await relate(refset, ids[0], 0, META.isA);
  const valueLevel = (l: number) => {
    const out: number[] = [];
    for (let i = 0; i < m.size; i++) if (m.level[i] === l) out.push(i);
    return out;
  };
  const values = [...valueLevel(5), ...valueLevel(6)];
  for (let i = 0; i < m.size; i++) {
    if (isInactive(i)) continue;
    for (const p of rf2Parents(m, i)) await relate(ids[i], ids[p], 0, META.isA);
    if (m.level[i] < 3) continue;
    const count = 1 + Math.floor(random() * 4);
    for (let a = 0; a < count; a++) {
      const group = a === 0 ? 0 : 1 + Math.floor((a - 1) / 2);
      await relate(ids[i], ids[values[Math.floor(random() * values.length)]], group, attributes[Math.floor(random() * attributes.length)]);
    }
  }
  await relationshipFile.close();

  const concrete = file(terminology, `sct2_RelationshipConcreteValues_Snapshot_XX_${date}.txt`, ['id', 'effectiveTime', 'active', 'moduleId', 'sourceId', 'value', 'relationshipGroup', 'typeId', 'characteristicTypeId', 'modifierId']);
  for (let i = 0; i < m.size; i += 10) {
    if (!isInactive(i)) await concrete.row([sctid(item++, '02'), date, 1, module, ids[i], `#${1 + (i % 50)}`, 1, attributes[0], META.inferred, META.existential]);
  }
  await concrete.close();

  const simple = file(content, `der2_Refset_SimpleSnapshot_XX_${date}.txt`, ['id', 'effectiveTime', 'active', 'moduleId', 'refsetId', 'referencedComponentId']);
  let refsetMembers = 0;
  for (let i = 0; i < m.size; i += 7) {
    refsetMembers++;
    await simple.row([uuid(member++), date, 1, module, refset, ids[i]]);
  }
  await simple.close();
  const association = file(content, `der2_cRefset_AssociationSnapshot_XX_${date}.txt`, ['id', 'effectiveTime', 'active', 'moduleId', 'refsetId', 'referencedComponentId', 'targetComponentId']);
  for (let i = 0; i < m.size; i++) if (isInactive(i)) await association.row([uuid(member++), date, 1, module, META.replacedBy, ids[i], ids[i - 1]]);
  await association.close();
  const dependency = file(metadata, `der2_ssRefset_ModuleDependencySnapshot_XX_${date}.txt`, ['id', 'effectiveTime', 'active', 'moduleId', 'refsetId', 'referencedComponentId', 'sourceEffectiveTime', 'targetEffectiveTime']);
  await dependency.row([uuid(member++), date, 1, module, META.dependency, META.core, date, date]);
  await dependency.close();
  return { folder, module, date, ids, attributes, refset, refsetMembers, descriptions, relationships };
}
