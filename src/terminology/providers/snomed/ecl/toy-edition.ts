import { SCT } from './graph.js';
import type { MemoryConcept, MemoryDescription, MemoryEdition, MemoryMember } from './memory-graph.js';

/**
 * A synthetic SNOMED-like edition for the ECL tests (docs/terminology.md#snomed-ct-expression-constraints-ecl):
 * made-up concepts in a polyhierarchy (findings, structures, substances, attributes), role
 * groups, concrete values, a simple and a map refset, historical associations for inactive
 * concepts, and descriptions in two dialects and two languages. Deterministic for a seed. The
 * ids of the well-known metadata and top-level concepts are SNOMED CT's (as in the published
 * ECL examples); everything else is invented.
 */

export const TOY = {
  root: '138875005',
  finding: '404684003',
  structure: '123037004',
  substance: '105590001',
  attribute: '410662002',
  findingSite: '363698007',
  morphology: '116676008',
  associatedWith: '47429007',
  causativeAgent: '246075003',
  dueTo: '42752001',
  activeIngredient: '127489000',
  strength: '1142135004',
  tradeName: '1142136003',
  inScheme: '1142137007',
  simpleRefset: '700043003',
  mapRefset: '447562003',
  sameAs: '900000000000527005',
  replacedBy: '900000000000526001',
  enUs: '900000000000509007',
  enGb: '900000000000508004',
  core: '900000000000207008',
  otherModule: '31000003106',
} as const;

/** mulberry32: a small seeded generator. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS = ['heart', 'cardiac', 'lung', 'pulmonary', 'edema', 'oedema', 'fracture', 'ulcer', 'stenosis', 'infarct', 'colour', 'color', 'acute', 'chronic', 'gastritis', 'arthritis', 'valve', 'hjärt'];
const TIMES = [20200131, 20210731, 20230101];

export function toyEdition(seed = 1): MemoryEdition {
  const rnd = seeded(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)];
  const concepts: MemoryConcept[] = [];
  let descId = 1000;
  const descriptions = (name: string, tag: string, sv: boolean): MemoryDescription[] => {
    const out: MemoryDescription[] = [
      { sctid: `${descId++}011`, term: `${name} (${tag})`, typeId: SCT.fsn, acceptability: { [TOY.enUs]: 'preferred', [TOY.enGb]: 'preferred' } },
      { sctid: `${descId++}011`, term: name, acceptability: { [TOY.enUs]: 'preferred', [TOY.enGb]: 'acceptable' } },
    ];
    if (rnd() < 0.4) out.push({ sctid: `${descId++}011`, term: name.replace('color', 'colour').replace('edema', 'oedema'), acceptability: { [TOY.enGb]: 'preferred' }, effectiveTime: pick(TIMES) });
    if (rnd() < 0.2) out.push({ sctid: `${descId++}011`, term: `old ${name}`, active: false });
    if (sv) out.push({ sctid: `${descId++}011`, term: `hjärt${name.split(' ')[0]}`, languageCode: 'sv' });
    if (rnd() < 0.15) out.push({ sctid: `${descId++}011`, term: `${name} is described here`, typeId: SCT.definition, acceptability: { [TOY.enUs]: 'preferred' } });
    return out;
  };
  const meta = (sctid: string, name: string, parents: string[] = [TOY.root]): void => {
    concepts.push({ sctid, parents, descriptions: descriptions(name, 'metadata', false), effectiveTime: 20200131 });
  };
  concepts.push({ sctid: TOY.root, descriptions: descriptions('SNOMED CT Concept', 'root', false) });
  for (const [k, v] of Object.entries(TOY)) if (k !== 'root' && !['findingSite', 'morphology', 'associatedWith', 'causativeAgent', 'dueTo', 'activeIngredient', 'strength', 'tradeName', 'inScheme'].includes(k)) meta(v, k);
  for (const s of [SCT.primitive, SCT.defined, SCT.fsn, SCT.synonym, SCT.definition, SCT.preferred, SCT.acceptable]) meta(s, `meta ${s}`);
  meta(TOY.associatedWith, 'Associated with', [TOY.attribute]);
  meta(TOY.causativeAgent, 'Causative agent', [TOY.associatedWith]);
  meta(TOY.dueTo, 'Due to', [TOY.associatedWith]);
  for (const a of [TOY.findingSite, TOY.morphology, TOY.activeIngredient, TOY.strength, TOY.tradeName, TOY.inScheme]) meta(a, `attribute ${a}`, [TOY.attribute]);

  const structures: string[] = [];
  const substances: string[] = [];
  const findings: string[] = [];
  let next = 200000;
  const make = (list: string[], top: string, tag: string, extra: (c: { sctid: string }) => Partial<MemoryConcept>): void => {
    const sctid = String(next++);
    const parents = [list.length && rnd() < 0.8 ? pick(list) : top];
    if (list.length > 2 && rnd() < 0.3) parents.push(pick(list));
    const name = `${pick(WORDS)} ${pick(WORDS)} ${sctid.slice(-3)}`;
    concepts.push({
      sctid,
      parents: [...new Set(parents)],
      defined: rnd() < 0.4,
      moduleId: rnd() < 0.7 ? TOY.core : TOY.otherModule,
      effectiveTime: pick(TIMES),
      descriptions: descriptions(name, tag, rnd() < 0.2),
      ...extra({ sctid }),
    });
    list.push(sctid);
  };
  for (let i = 0; i < 25; i++) make(structures, TOY.structure, 'body structure', () => ({}));
  for (let i = 0; i < 15; i++)
    make(substances, TOY.substance, 'substance', () => ({
      concrete: rnd() < 0.5 ? [[0, TOY.strength, Math.round(rnd() * 1000) / 10] as const, ...(rnd() < 0.5 ? [[1, TOY.tradeName, pick(['PANADOL', 'Panadol extra', 'ASPIRIN'])] as const] : [])] : [],
    }));
  for (let i = 0; i < 70; i++)
    make(findings, TOY.finding, 'finding', () => {
      const attributes: Array<[number, string, string]> = [];
      const n = Math.floor(rnd() * 5);
      for (let k = 0; k < n; k++) {
        const group = pick([0, 1, 1, 2, 2, 3]);
        const kind = rnd();
        if (kind < 0.35) attributes.push([group, TOY.findingSite, pick(structures)]);
        else if (kind < 0.6) attributes.push([group, TOY.morphology, pick(structures)]);
        else if (kind < 0.8) attributes.push([group, TOY.causativeAgent, pick(substances)]);
        else if (findings.length) attributes.push([group, TOY.dueTo, pick(findings)]);
      }
      const concrete: Array<[number, string, number | string | boolean]> = [];
      if (rnd() < 0.3) concrete.push([pick([0, 1, 2]), TOY.strength, pick([1, 2.5, 500, 800, -3])]);
      if (rnd() < 0.2) concrete.push([0, TOY.inScheme, rnd() < 0.5]);
      if (rnd() < 0.2) concrete.push([pick([0, 1]), TOY.tradeName, pick(['PANADOL', 'Panadol extra', 'ASPIRIN'])]);
      return { attributes: [...new Map(attributes.map((a) => [a.join('|'), a])).values()], concrete };
    });
  // inactive concepts: no relationships, associations to active findings
  const associations: Array<[string, string, string]> = [];
  const inactive: string[] = [];
  for (let i = 0; i < 8; i++) {
    const sctid = String(next++);
    inactive.push(sctid);
    concepts.push({ sctid, active: false, moduleId: TOY.core, effectiveTime: 20230101, descriptions: descriptions(`retired ${pick(WORDS)} ${i}`, 'finding', false) });
    associations.push([i % 2 ? TOY.sameAs : TOY.replacedBy, sctid, pick(findings)]);
  }
  const simple: MemoryMember[] = [];
  for (let i = 0; i < 20; i++) simple.push({ referencedComponentId: pick(findings), active: rnd() < 0.9, effectiveTime: pick(TIMES), moduleId: rnd() < 0.5 ? TOY.core : TOY.otherModule });
  simple.push({ referencedComponentId: inactive[0] });
  const map: MemoryMember[] = [];
  for (let i = 0; i < 15; i++)
    map.push({
      referencedComponentId: pick(findings),
      active: rnd() < 0.85,
      effectiveTime: pick(TIMES),
      fields: { mapTarget: pick(['J45.9', 'J45.0', 'K29.7', 'I21']), mapGroup: pick([1, 2]), mapPriority: pick([1, 2, 3]), targetComponentId: pick(structures), mapAdvice: pick([true, false]) },
    });
  return { concepts, refsets: { [TOY.simpleRefset]: simple, [TOY.mapRefset]: map }, associations };
}
