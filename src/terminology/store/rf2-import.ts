import type { CodeSystem } from '@medplum/fhirtypes';
import type { Database } from '../../core/database.js';
import { badRequest } from '../../fhir/outcome.js';
import type { TerminologyEnv } from '../types.js';
import { bulkInsert, BATCH_ROWS } from './bulk-insert.js';
import { insertRowBatch } from './code-system-store.js';
import { finishLarge, progressBar, type ImportOptions, type ImportSummary, type ProgressBar } from './import-file.js';
import { DEFAULT_MAX_LINE, ReleaseFileError } from './release-file-error.js';
import { rf2Files, rf2Rows, type Rf2File, type Rf2Kind } from './rf2-files.js';
import { StagedCodeSystem } from './staged-import.js';
import type { ConceptRow, DesignationRow } from '../providers/fhir/code-system-rows.js';
import { DESCRIPTION_MARKER, EDITION_NAMES, editionTitle, SCT_PROPERTIES, SCT_SYSTEM, SCT_USE_DISPLAY, SCTID, sctVersionUri } from '../providers/snomed/sct-meta.js';

/**
 * `lattice import --format rf2 <folder or .zip>` (docs/terminology.md#snomed-ct): one SNOMED CT
 * edition from its RF2 Snapshot files, as one CodeSystem `http://snomed.info/sct` whose version
 * is the edition's version URI, indexed through a staged index and switched in atomically like
 * any large import (staged-import.ts): concepts, descriptions (designations with language and
 * use; the en-US preferred term is the display), the inferred is-a hierarchy, and in the SNOMED
 * CT tables (migration 430) the other relationships with their groups, concrete values, refset
 * members (association targets included) and description acceptability.
 *
 * Memory: the files are streamed; what is kept between files is per concept (SCTID → id, flags,
 * the display chosen so far), the description → acceptability map of the language refsets, and
 * the is-a edges. Rows go to the database a batch at a time as they are read.
 */

export interface Rf2Options extends ImportOptions {
  /** An unpublished edition: its version URI is `http://snomed.info/xsct/…`. */
  unpublished?: boolean;
}

/** How strongly a description is the display: higher wins (en-US preferred synonym first). */
const RANK_FSN = 1;
const RANK_SYNONYM = 2;
const RANK_PREFERRED = 3;
const RANK_US_PREFERRED = 4;

interface Concepts {
  ids: Map<string, number>;
  codes: string[];
  active: Uint8Array;
  defined: Uint8Array;
  module: string[];
  effective: string[];
  display: Array<string | undefined>;
  rank: Uint8Array;
  definition: Array<string | undefined>;
}

export async function importRf2(path: string, env: TerminologyEnv, options: Rf2Options = {}): Promise<ImportSummary> {
  const started = Date.now();
  const files = await rf2Files(path);
  const bar = progressBar(options.out ?? process.stderr);
  const of = (kind: Rf2Kind) => files.filter((f) => f.kind === kind);
  if (of('concept').length === 0) throw badRequest(`No RF2 Snapshot Concept file (sct2_Concept_Snapshot…) found in ${path}`);

  const reading: Reading = { maxLine: env.config?.txImportMaxLine ?? DEFAULT_MAX_LINE, file: '', position: { line: 0 } };
  const concepts = await readConcepts(of('concept'), bar, reading);
  const n = concepts.codes.length - 1;
  const edition = await readEdition(of('moduleDependency'), concepts, bar, reading);
  const version = sctVersionUri(edition.module, edition.date, options.unpublished === true);
  const header: CodeSystem = {
    resourceType: 'CodeSystem',
    url: SCT_SYSTEM,
    version,
    name: 'SNOMED_CT',
    title: editionTitle(edition.name),
    status: 'active',
    date: `${edition.date.slice(0, 4)}-${edition.date.slice(4, 6)}-${edition.date.slice(6, 8)}`,
    publisher: 'SNOMED International',
    caseSensitive: true,
    // Descriptions are read with their language code; the display is in English (en-US preferred).
    language: 'en',
    hierarchyMeaning: 'is-a',
    compositional: true,
    valueSet: `${SCT_SYSTEM}?fhir_vs`,
    content: 'not-present',
    count: n,
    property: SCT_PROPERTIES,
  };

  const staged = await StagedCodeSystem.begin(env.db, header, options.projectId);
  try {
    const acceptability = await readLanguageRefsets(of('language'), bar, reading);
    await readDescriptions([...of('description'), ...of('textDefinition')], concepts, acceptability, staged, bar, reading);
    acceptability.map.clear();
    await writeConcepts(concepts, staged);
    const edges = await readRelationships(of('relationship'), concepts, staged, bar, reading);
    await readConcreteValues(of('concreteValues'), concepts, staged, bar, reading);
    await readRefsets(of('refset'), concepts, staged, bar, reading);
    const label = `${version} (${n.toLocaleString('en')} concepts)`;
    await finishLarge(env, header, staged, options, bar, undefined, () =>
      staged.complete((done, total) => bar(`${label} hierarchy`, done, total, 'concepts'), { concepts: n, edges }),
    );
  } catch (err) {
    await staged.abandon().catch(() => undefined);
    throw err;
  }
  bar.done();
  return { resources: 1, codeSystems: 1, valueSets: 0, concepts: n, skipped: 0, ms: Date.now() - started };
}

/** Where the rows being read are, for the messages of the checks; and the bound on a line. */
interface Reading {
  maxLine: number;
  file: string;
  position: { line: number };
}

/** Reads every row of the files of one kind, with a progress bar per file. */
async function* rowsOf(files: Rf2File[], bar: ProgressBar, reading: Reading): AsyncIterable<string[]> {
  for (const file of files) {
    let header = true;
    reading.file = file.name;
    for await (const row of rf2Rows(file, (bytes) => bar(file.name, bytes, file.size, 'bytes'), { maxLine: reading.maxLine, position: reading.position })) {
      if (header) {
        header = false;
        continue;
      }
      yield row;
    }
  }
}

async function readConcepts(files: Rf2File[], bar: ProgressBar, reading: Reading): Promise<Concepts> {
  const ids = new Map<string, number>();
  const codes: string[] = [''];
  const active: number[] = [0];
  const defined: number[] = [0];
  const module: string[] = [''];
  const effective: string[] = [''];
  // id effectiveTime active moduleId definitionStatusId
  for await (const [id, effectiveTime, isActive, moduleId, definitionStatus] of rowsOf(files, bar, reading)) {
    if (!id || ids.has(id)) continue;
    ids.set(id, codes.length);
    codes.push(id);
    active.push(isActive === '1' ? 1 : 0);
    defined.push(definitionStatus === SCTID.defined ? 1 : 0);
    module.push(moduleId);
    effective.push(effectiveTime);
  }
  const count = codes.length;
  return {
    ids,
    codes,
    active: Uint8Array.from(active),
    defined: Uint8Array.from(defined),
    module,
    effective,
    display: new Array<string | undefined>(count),
    rank: new Uint8Array(count),
    definition: new Array<string | undefined>(count),
  };
}

/**
 * The edition (docs/terminology.md#snomed-ct): the module of the ModuleDependency refset that
 * no other module depends on, at its newest source effective time; without that refset, the
 * most common module of the concepts at their newest effective time.
 */
async function readEdition(files: Rf2File[], concepts: Concepts, bar: ProgressBar, reading: Reading): Promise<{ module: string; date: string; name: string | undefined }> {
  const sources = new Map<string, string>();
  const targets = new Set<string>();
  const dependsOn = new Map<string, string[]>();
  // id effectiveTime active moduleId refsetId referencedComponentId sourceEffectiveTime targetEffectiveTime
  for await (const row of rowsOf(files, bar, reading)) {
    if (row[2] !== '1') continue;
    const [module, target, sourceTime] = [row[3], row[5], row[6] ?? row[1]];
    if ((sources.get(module) ?? '') < sourceTime) sources.set(module, sourceTime);
    if (target !== module) {
      targets.add(target);
      dependsOn.set(module, [...(dependsOn.get(module) ?? []), target]);
    }
  }
  // The edition's name: its module's, else that of the nearest published edition it depends on.
  const nameOf = (module: string): string | undefined => {
    const seen = new Set<string>();
    for (let level = [module]; level.length > 0; level = level.flatMap((m) => dependsOn.get(m) ?? []).filter((m) => !seen.has(m))) {
      const known = level.find((m) => EDITION_NAMES[m]);
      if (known) return EDITION_NAMES[known];
      for (const m of level) seen.add(m);
    }
    return undefined;
  };
  const tops = [...sources.entries()].filter(([m]) => !targets.has(m)).sort((a, b) => (a[1] < b[1] ? 1 : a[1] > b[1] ? -1 : a[0] < b[0] ? -1 : 1));
  if (tops.length > 0) return { module: tops[0][0], date: tops[0][1], name: nameOf(tops[0][0]) };
  const counts = new Map<string, number>();
  let date = '';
  for (let id = 1; id < concepts.codes.length; id++) {
    counts.set(concepts.module[id], (counts.get(concepts.module[id]) ?? 0) + 1);
    if (concepts.effective[id] > date) date = concepts.effective[id];
  }
  const module = [...counts.entries()].sort((a, b) => b[1] - a[1])[0]?.[0] ?? SCTID.coreModule;
  return { module, date: date || '00000000', name: EDITION_NAMES[module] };
}

interface Acceptability {
  /** Language refset SCTIDs, by their position in the bit field. */
  refsets: string[];
  /** description SCTID → two bits per refset: 1 acceptable, 2 preferred. */
  map: Map<string, number>;
}

async function readLanguageRefsets(files: Rf2File[], bar: ProgressBar, reading: Reading): Promise<Acceptability> {
  const refsets: string[] = [];
  const map = new Map<string, number>();
  // id effectiveTime active moduleId refsetId referencedComponentId acceptabilityId
  for await (const row of rowsOf(files, bar, reading)) {
    if (row[2] !== '1') continue;
    let r = refsets.indexOf(row[4]);
    if (r < 0) {
      if (refsets.length >= 26) continue; // beyond 52 bits of a number; more dialects than any edition has
      r = refsets.push(row[4]) - 1;
    }
    const value = row[6] === SCTID.preferred ? 2 : 1;
    map.set(row[5], (map.get(row[5]) ?? 0) + value * 4 ** r);
  }
  return { refsets, map };
}

async function readDescriptions(files: Rf2File[], concepts: Concepts, acc: Acceptability, staged: StagedCodeSystem, bar: ProgressBar, reading: Reading): Promise<void> {
  let designations: DesignationRow[] = [];
  let accepted: Array<[number, string, string, string, boolean]> = [];
  const usIndex = acc.refsets.indexOf(SCTID.usEnglish);
  const flush = async () => {
    const d = designations;
    const a = accepted;
    designations = [];
    accepted = [];
    await staged.addRows(async (q, key) => {
      await insertRowBatch(q, key, { firstId: 1, concepts: [], properties: [], designations: d });
      await bulkInsert<[number, string, string, string, boolean]>(
        q,
        'tx_sct_acceptability',
        { cs_key: { type: 'int', value: key } },
        [
          { name: 'concept', type: 'int', value: (r) => r[0] },
          { name: 'description', type: 'text', value: (r) => r[1] },
          { name: 'term', type: 'text', value: (r) => r[2] },
          { name: 'refset', type: 'text', value: (r) => r[3] },
          { name: 'preferred', type: 'boolean', value: (r) => r[4] },
        ],
        a.length,
        (i) => a[i],
      );
    });
  };
  // id effectiveTime active moduleId conceptId languageCode typeId term caseSignificanceId
  // The marker of each acceptability combination (few distinct ones), built once.
  const markers = new Map<number, string | undefined>();
  const markerOf = (bits: number, active: boolean): string | undefined => {
    const key = active ? bits : -1;
    if (!markers.has(key)) {
      const tokens: string[] = active ? [] : ['inactive'];
      for (let r = 0, b = bits; b > 0; r++, b = Math.floor(b / 4)) if (b % 4 > 0) tokens.push(`${b % 4 === 2 ? 'p' : 'a'}${acc.refsets[r]}`);
      markers.set(key, tokens.length > 0 ? JSON.stringify([{ url: DESCRIPTION_MARKER, valueString: tokens.join(' ') }]) : undefined);
    }
    return markers.get(key);
  };
  for await (const [descriptionId, , active, , conceptId, languageCode, typeId, term] of rowsOf(files, bar, reading)) {
    const id = concepts.ids.get(conceptId);
    // A description of a concept the release does not have: a Concept file cut short, or files of two releases.
    if (id === undefined) throw new ReleaseFileError(reading.file, reading.position.line, `description ${descriptionId} is of concept ${conceptId}, which no Concept file of the release has`);
    const bits = active === '1' ? (acc.map.get(descriptionId) ?? 0) : 0;
    const extension = markerOf(bits, active === '1');
    designations.push({
      concept: id,
      language: languageCode,
      useSystem: SCT_SYSTEM,
      useCode: typeId,
      useDisplay: SCT_USE_DISPLAY[typeId],
      value: term,
      ...(extension ? { extension } : {}),
    });
    // An inactive description is kept as a former display only (docs/terminology.md#answers).
    if (active !== '1') {
      if (designations.length >= BATCH_ROWS) await flush();
      continue;
    }
    for (let r = 0, b = bits; b > 0; r++, b = Math.floor(b / 4)) {
      const v = b % 4;
      if (v > 0) accepted.push([id, descriptionId, term, acc.refsets[r], v === 2]);
    }
    if (typeId === SCTID.definition) {
      if (!concepts.definition[id] || (usIndex >= 0 && Math.floor(bits / 4 ** usIndex) % 4 === 2)) concepts.definition[id] = term;
    } else {
      const rank =
        typeId === SCTID.fsn
          ? RANK_FSN
          : usIndex >= 0 && Math.floor(bits / 4 ** usIndex) % 4 === 2
            ? RANK_US_PREFERRED
            : hasPreferred(bits)
              ? RANK_PREFERRED
              : RANK_SYNONYM;
      if (rank > concepts.rank[id]) {
        concepts.rank[id] = rank;
        concepts.display[id] = term;
      }
    }
    if (designations.length >= BATCH_ROWS) await flush();
  }
  await flush();
}

function hasPreferred(bits: number): boolean {
  for (let b = bits; b > 0; b = Math.floor(b / 4)) if (b % 4 === 2) return true;
  return false;
}

/** Concept rows 1..n (in release order), and their module, effective time and definition status. */
async function writeConcepts(c: Concepts, staged: StagedCodeSystem): Promise<void> {
  const n = c.codes.length - 1;
  const step = BATCH_ROWS / 2;
  for (let from = 1; from <= n; from += step) {
    const to = Math.min(n, from + step - 1);
    const rows: ConceptRow[] = [];
    for (let id = from; id <= to; id++) {
      rows.push({ code: c.codes[id], display: c.display[id], definition: c.definition[id], inactive: c.active[id] === 0, abstract: false, status: undefined });
    }
    await staged.addRows(async (q, key) => {
      await insertRowBatch(q, key, { firstId: from, concepts: rows, properties: [], designations: [] });
      await bulkInsert<number>(
        q,
        'tx_sct_concept',
        { cs_key: { type: 'int', value: key } },
        [
          { name: 'id', type: 'int', value: (id) => id },
          { name: 'module', type: 'text', value: (id) => c.module[id] },
          { name: 'effective', type: 'int', value: (id) => (/^\d{8}$/.test(c.effective[id]) ? Number(c.effective[id]) : 0) },
          { name: 'defined', type: 'boolean', value: (id) => c.defined[id] === 1 },
        ],
        to - from + 1,
        (i) => from + i,
      );
    });
  }
}

/** Active inferred (and additional) relationships: |is a| edges returned, the rest written with their groups. */
async function readRelationships(files: Rf2File[], c: Concepts, staged: StagedCodeSystem, bar: ProgressBar, reading: Reading): Promise<Array<[number, number]>> {
  const edges: Array<[number, number]> = [];
  const seen = new Set<number>();
  let rows: number[] = [];
  const flush = async () => {
    const r = rows;
    rows = [];
    await staged.addRows((q, key) =>
      bulkInsert<number>(
        q,
        'tx_sct_relationship',
        { cs_key: { type: 'int', value: key } },
        [
          { name: 'source', type: 'int', value: (i) => r[i * 4] },
          { name: 'type', type: 'int', value: (i) => r[i * 4 + 1] },
          { name: 'destination', type: 'int', value: (i) => r[i * 4 + 2] },
          { name: 'grp', type: 'int', value: (i) => r[i * 4 + 3] },
        ],
        r.length / 4,
        (i) => i,
      ),
    );
  };
  // id effectiveTime active moduleId sourceId destinationId relationshipGroup typeId characteristicTypeId modifierId
  for await (const [, , active, , sourceId, destinationId, group, typeId, characteristic] of rowsOf(files, bar, reading)) {
    if (active !== '1' || characteristic === SCTID.stated) continue;
    const source = c.ids.get(sourceId);
    const destination = c.ids.get(destinationId);
    if (source === undefined || destination === undefined) continue;
    if (typeId === SCTID.isA) {
      const k = source * 0x200000 + destination;
      if (source === destination || seen.has(k)) continue;
      seen.add(k);
      edges.push([source, destination]);
      continue;
    }
    // An attribute whose type the release does not have as a concept cannot be named: left out.
    const type = c.ids.get(typeId);
    if (type === undefined) continue;
    rows.push(source, type, destination, Number(group) || 0);
    if (rows.length >= BATCH_ROWS * 4) await flush();
  }
  await flush();
  return edges;
}

async function readConcreteValues(files: Rf2File[], c: Concepts, staged: StagedCodeSystem, bar: ProgressBar, reading: Reading): Promise<void> {
  const rows: Array<[number, number, number, string]> = [];
  // id effectiveTime active moduleId sourceId value relationshipGroup typeId characteristicTypeId modifierId
  for await (const [, , active, , sourceId, value, group, typeId, characteristic] of rowsOf(files, bar, reading)) {
    if (active !== '1' || characteristic === SCTID.stated) continue;
    const source = c.ids.get(sourceId);
    const type = c.ids.get(typeId);
    if (source === undefined || type === undefined || value === undefined) continue;
    rows.push([source, type, Number(group) || 0, value]);
  }
  await staged.addRows((q, key) =>
    bulkInsert<[number, number, number, string]>(
      q,
      'tx_sct_concrete',
      { cs_key: { type: 'int', value: key } },
      [
        { name: 'source', type: 'int', value: (r) => r[0] },
        { name: 'type', type: 'int', value: (r) => r[1] },
        { name: 'grp', type: 'int', value: (r) => r[2] },
        { name: 'value', type: 'text', value: (r) => r[3] },
      ],
      rows.length,
      (i) => rows[i],
    ),
  );
}

/** Active members referencing concepts, with the target concept of association refsets. */
async function readRefsets(files: Rf2File[], c: Concepts, staged: StagedCodeSystem, bar: ProgressBar, reading: Reading): Promise<void> {
  let rows: number[] = [];
  const flush = async () => {
    const r = rows;
    rows = [];
    await staged.addRows((q: Database, key) =>
      bulkInsert<number>(
        q,
        'tx_sct_member',
        { cs_key: { type: 'int', value: key } },
        [
          { name: 'refset', type: 'int', value: (i) => r[i * 3] },
          { name: 'referenced', type: 'int', value: (i) => r[i * 3 + 1] },
          { name: 'target', type: 'int', value: (i) => (r[i * 3 + 2] > 0 ? r[i * 3 + 2] : null) },
        ],
        r.length / 3,
        (i) => i,
      ),
    );
  };
  for (const file of files) {
    let targetColumn = -1;
    let header = true;
    // id effectiveTime active moduleId refsetId referencedComponentId [fields…]
    for await (const row of rf2Rows(file, (bytes) => bar(file.name, bytes, file.size, 'bytes'), { maxLine: reading.maxLine })) {
      if (header) {
        header = false;
        targetColumn = row.indexOf('targetComponentId');
        continue;
      }
      if (row[2] !== '1') continue;
      const refset = c.ids.get(row[4]);
      const referenced = c.ids.get(row[5]);
      if (refset === undefined || referenced === undefined) continue;
      rows.push(refset, referenced, targetColumn > 0 ? (c.ids.get(row[targetColumn]) ?? 0) : 0);
      if (rows.length >= BATCH_ROWS * 3) await flush();
    }
  }
  await flush();
}
