import type { CodeSystem, CodeSystemConcept, CodeSystemConceptDesignation, CodeSystemConceptProperty } from '@medplum/fhirtypes';
import {
  ANSWER,
  ANSWER_LIST,
  ANSWERS_FOR,
  AXES,
  INACTIVE_STATUSES,
  LOINC_URL,
  TERM_STRING_COLUMNS,
  USE,
  loincProperties,
} from '../providers/loinc/loinc-model.js';
import type { TerminologyEnv } from '../types.js';
import { importEvents, progressBar, type ImportOptions, type ImportSummary } from './import-file.js';
import type { JsonStreamEvent } from './json-stream.js';
import { LoincRelease } from './loinc-release.js';
import { collectGarbage } from './heap.js';

/**
 * `lattice import --format loinc <folder or .zip>` (docs/terminology.md#loinc): turns a LOINC
 * release in its CSV layout into one CodeSystem `http://loinc.org` of the release's version,
 * written as a stream of JSON and imported by the ordinary import (import-file.ts), so it is
 * indexed staged and switched in atomically, and can be sent to a running server the same way
 * (`--url`).
 *
 * The accessory files are read first into maps keyed by code (part names, part links, answer
 * lists, consumer names, the hierarchy, the linguistic variants); then Loinc.csv is read as a
 * stream and each term is written with what the maps hold for it, followed by the parts, the
 * answer lists, the answers and the hierarchy's own nodes.
 */

export interface LoincImportOptions extends ImportOptions {
  /** The release version; else from the release's name (`Loinc_2.82`), else the newest VersionLastChanged of its terms. */
  version?: string;
}

interface Part {
  type: string;
  name: string;
  display: string;
  status: string;
}


const EN = 'en-US';
/** JSON is handed on in pieces of about this many characters. */
const PIECE = 64 * 1024;

/** Concepts handed to the import per batch (as json-stream.ts batches a parsed file). */
const BATCH = 2000;

/**
 * Imports the release at `path` into the database of `services`: the concepts go to the import
 * as objects (no JSON in between).
 */
export async function importLoinc(path: string, services: TerminologyEnv, options: LoincImportOptions = {}): Promise<ImportSummary> {
  const release = await LoincRelease.open(path, services.config?.txImportMaxLine);
  const { version, content } = await loincContent(release, options);
  async function* events(): AsyncGenerator<JsonStreamEvent> {
    let batch: unknown[] = [];
    for await (const item of content) {
      if ('resourceType' in item) {
        yield { kind: 'header', key: 'concept', header: item as unknown as Record<string, unknown>, bytes: 0 };
        continue;
      }
      batch.push(item);
      if (batch.length >= BATCH) {
        yield { kind: 'items', items: batch, bytes: 0 };
        batch = [];
      }
    }
    if (batch.length > 0) yield { kind: 'items', items: batch, bytes: 0 };
    yield { kind: 'end', tail: {}, bytes: 0 };
  }
  return importEvents(events(), services, { ...options, label: `LOINC ${version}` });
}

/**
 * The release as the JSON text of one CodeSystem, in pieces produced as the files are read
 * (what `--url` sends), with the version it states.
 */
export async function loincJson(
  release: LoincRelease,
  options: { version?: string; out?: NodeJS.WritableStream & { isTTY?: boolean } } = {},
): Promise<{ version: string; chunks: AsyncGenerator<string> }> {
  const { version, content } = await loincContent(release, options);
  async function* chunks(): AsyncGenerator<string> {
    let out = '';
    let first = true;
    for await (const item of content) {
      if ('resourceType' in item) {
        out += `${JSON.stringify(item).slice(0, -1)},"concept":[`;
        continue;
      }
      out += (first ? '' : ',') + JSON.stringify(item);
      first = false;
      if (out.length >= PIECE) {
        yield out;
        out = '';
      }
    }
    yield `${out}]}\n`;
  }
  return { version, chunks: chunks() };
}

/** The release as its CodeSystem header (first) and then its concepts, one at a time. */
async function loincContent(
  release: LoincRelease,
  options: { version?: string; out?: NodeJS.WritableStream & { isTTY?: boolean } },
): Promise<{ version: string; content: AsyncGenerator<CodeSystem | CodeSystemConcept> }> {
  const table = release.find('LoincTable/Loinc.csv');
  if (!table) throw new Error(`${release.path} is not a LOINC release: it has no LoincTable/Loinc.csv`);
  const version = options.version ?? release.versionFromName() ?? (await newestVersion(release));
  if (!version) throw new Error(`The version of ${release.path} is unknown: give it with --version`);
  const loincTable = table;
  const bar = progressBar(options.out ?? process.stderr);
  const total = release.totalBytes;
  const progress = () => bar(`LOINC ${version}`, release.bytesRead, total, 'bytes read');

  let rows = 0;
  // The loader's maps hold some 0.4 GB for a release: garbage is collected every 200,000
  // records read and every 25,000 concepts written, which keeps the peak near twice that
  // (docs/terminology.md#loinc).
  release.onRows = collectGarbage;
  async function* content(): AsyncGenerator<CodeSystem | CodeSystemConcept> {
    // Texts kept until their code is written (variants, consumer names) live in one arena.
    const texts = new TextArena();
    // Parts: names, and CLASS parts by name (Loinc.csv names a term's class, not its part).
    const parts = new Map<string, Part>();
    const classParts = new Map<string, string>();
    const partFile = release.find('PartFile/Part.csv');
    if (partFile) {
      for await (const r of release.records(partFile)) {
        if (!r.PartNumber) continue;
        parts.set(r.PartNumber, { type: r.PartTypeName, name: r.PartName, display: r.PartDisplayName, status: r.Status });
        if (r.PartTypeName === 'CLASS' && r.PartName) classParts.set(r.PartName, r.PartNumber);
      }
      progress();
    }
    // Part links: the properties a term's parts are values of.
    const links = new Map<string, string[]>(); // [property, part, name (or ''), …]
    const interned = new Map<string, string>();
    const intern = (v: string) => interned.get(v) ?? (interned.set(v, v), v);
    const partProperties = new Set<string>([...AXES, 'CLASS']);
    const linkFile = release.find('PartFile/LoincPartLink_Primary.csv');
    if (linkFile) {
      for await (const r of release.records(linkFile)) {
        if (!r.LoincNumber || !r.PartNumber) continue;
        const property = propertyCode(r.Property) ?? r.PartTypeName;
        if (!property) continue;
        partProperties.add(property);
        let list = links.get(r.LoincNumber);
        if (!list) links.set(r.LoincNumber, (list = []));
        // The part's name from Part.csv when it has it (the link file's text is then not kept).
        list.push(intern(property), r.PartNumber, parts.has(r.PartNumber) ? '' : texts.copy(r.PartName));
      }
      progress();
    }
    // Answer lists and answers.
    const lists = new Map<string, { name: string; answers: string[]; terms: string[] }>();
    const answers = new Map<string, { display: string; lists: string[] }>();
    const termLists = new Map<string, string[]>();
    const answerFile = release.find('AnswerFile/AnswerList.csv');
    if (answerFile) {
      for await (const r of release.records(answerFile)) {
        if (!r.AnswerListId) continue;
        let list = lists.get(r.AnswerListId);
        if (!list) lists.set(r.AnswerListId, (list = { name: r.AnswerListName, answers: [], terms: [] }));
        const la = r.AnswerStringId;
        if (!la) continue;
        list.answers.push(la);
        let answer = answers.get(la);
        if (!answer) answers.set(la, (answer = { display: r.DisplayText, lists: [] }));
        if (!answer.lists.includes(r.AnswerListId)) answer.lists.push(r.AnswerListId);
      }
      progress();
    }
    const answerLinkFile = release.find('AnswerFile/LoincAnswerListLink.csv');
    if (answerLinkFile) {
      for await (const r of release.records(answerLinkFile)) {
        if (!r.LoincNumber || !r.AnswerListId) continue;
        let forTerm = termLists.get(r.LoincNumber);
        if (!forTerm) termLists.set(r.LoincNumber, (forTerm = []));
        if (!forTerm.includes(r.AnswerListId)) forTerm.push(r.AnswerListId);
        let list = lists.get(r.AnswerListId);
        if (!list) lists.set(r.AnswerListId, (list = { name: r.AnswerListName, answers: [], terms: [] }));
        if (!list.terms.includes(r.LoincNumber)) list.terms.push(r.LoincNumber);
      }
      progress();
    }
    // Consumer names and linguistic variants: designations of the terms.
    const designations = new Map<string, Array<string | number>>(); // [language, use, text ref, …]
    const designate = (code: string, language: string, use: string, value: string) => {
      let list = designations.get(code);
      if (!list) designations.set(code, (list = []));
      list.push(intern(language), use, texts.add(value));
    };
    const consumerFile = release.find('ConsumerName/ConsumerName.csv');
    if (consumerFile) {
      for await (const r of release.records(consumerFile)) {
        if (r.LoincNumber && r.ConsumerName) designate(r.LoincNumber, EN, USE.consumerName, r.ConsumerName);
      }
      progress();
    }
    const variantIndex = release.find('LinguisticVariants/LinguisticVariants.csv');
    if (variantIndex) {
      const languages = new Map<string, string>();
      for await (const r of release.records(variantIndex)) {
        if (r.ID && r.ISO_LANGUAGE) languages.set(`${r.ISO_LANGUAGE}${r.ISO_COUNTRY}${r.ID}`.toLowerCase(), r.ISO_COUNTRY ? `${r.ISO_LANGUAGE}-${r.ISO_COUNTRY}` : r.ISO_LANGUAGE);
      }
      for (const file of release.findAll('LinguisticVariants', /LinguisticVariant\.csv$/i)) {
        const key = /([A-Za-z]+[0-9]+)LinguisticVariant\.csv$/i.exec(file.name.split('/').pop() as string)?.[1]?.toLowerCase();
        const language = key ? languages.get(key) : undefined;
        if (!language) continue;
        for await (const r of release.records(file)) {
          if (!r.LOINC_NUM) continue;
          if (r.LONG_COMMON_NAME) designate(r.LOINC_NUM, language, USE.longCommonName, r.LONG_COMMON_NAME);
          if (r.SHORTNAME) designate(r.LOINC_NUM, language, USE.shortName, r.SHORTNAME);
          if (r.LinguisticVariantDisplayName) designate(r.LOINC_NUM, language, USE.variantDisplayName, r.LinguisticVariantDisplayName);
        }
        progress();
      }
    }
    // The multiaxial hierarchy: parents of terms and parts, and its own nodes' texts.
    const parents = new Map<string, string[]>();
    const nodeText = new Map<string, number>();
    const hierarchyFile = release.find('ComponentHierarchyBySystem/ComponentHierarchyBySystem.csv');
    if (hierarchyFile) {
      for await (const r of release.records(hierarchyFile)) {
        if (!r.CODE) continue;
        if (!nodeText.has(r.CODE)) nodeText.set(r.CODE, texts.add(r.CODE_TEXT));
        if (!r.IMMEDIATE_PARENT || r.IMMEDIATE_PARENT === r.CODE) continue;
        let list = parents.get(r.CODE);
        if (!list) parents.set(r.CODE, (list = []));
        if (!list.includes(r.IMMEDIATE_PARENT)) list.push(r.IMMEDIATE_PARENT);
      }
      progress();
    }

    const header: CodeSystem = {
      resourceType: 'CodeSystem',
      url: LOINC_URL,
      version,
      name: 'LOINC',
      title: 'LOINC Code System',
      status: 'active',
      language: 'en-US',
      publisher: 'Regenstrief Institute, Inc.',
      copyright: 'This content is from LOINC (https://loinc.org), copyright Regenstrief Institute, Inc. and the LOINC Committee, available under the LOINC license (https://loinc.org/license).',
      caseSensitive: false,
      hierarchyMeaning: 'is-a',
      compositional: false,
      versionNeeded: false,
      content: 'complete',
      property: loincProperties([...partProperties]),
    };
    yield header;
    const written = new Set<string>();
    const linkedParts = new Map<string, string>();
    const hierarchy = (code: string, property: CodeSystemConceptProperty[]) => {
      for (const p of parents.get(code) ?? []) property.push({ code: 'parent', valueCode: p });
    };

    for await (const r of release.records(loincTable)) {
      const code = r.LOINC_NUM;
      if (!code || written.has(code)) continue;
      written.add(code);
      const property: CodeSystemConceptProperty[] = [];
      const linked = links.get(code) ?? [];
      const linkedProperties = new Set<string>();
      for (let i = 0; i < linked.length; i += 3) {
        const [prop, part] = [linked[i], linked[i + 1]];
        const name = parts.get(part)?.name || linked[i + 2];
        linkedProperties.add(prop);
        property.push({ code: prop, valueCode: part });
        // A part Part.csv does not list becomes a code with the link's name.
        if (!parts.has(part) && name && !linkedParts.has(part)) linkedParts.set(part, name);
      }
      // Axes the part links leave out keep the text of Loinc.csv.
      for (const axis of AXES) if (!linkedProperties.has(axis) && r[axis]) property.push({ code: axis, valueString: r[axis] });
      if (r.CLASS && !linkedProperties.has('CLASS')) {
        const part = classParts.get(r.CLASS);
        property.push(part ? { code: 'CLASS', valueCode: part } : { code: 'CLASS', valueString: r.CLASS });
      }
      for (const column of TERM_STRING_COLUMNS) if (r[column]) property.push({ code: column, valueString: r[column] });
      if (INACTIVE_STATUSES.has(r.STATUS)) property.push({ code: 'inactive', valueBoolean: true });
      for (const ll of termLists.get(code) ?? []) property.push({ code: ANSWER_LIST, valueCode: ll });
      hierarchy(code, property);
      const designation: CodeSystemConceptDesignation[] = [];
      if (r.LONG_COMMON_NAME) designation.push(loincDesignation(EN, USE.longCommonName, r.LONG_COMMON_NAME));
      if (r.SHORTNAME) designation.push(loincDesignation(EN, USE.shortName, r.SHORTNAME));
      if (r.DisplayName) designation.push(loincDesignation(EN, USE.displayName, r.DisplayName));
      const held = designations.get(code) ?? [];
      for (let i = 0; i < held.length; i += 3) designation.push(loincDesignation(held[i] as string, held[i + 1] as string, texts.get(held[i + 2] as number)));
      designations.delete(code);
      yield {
        code,
        display: r.LONG_COMMON_NAME || [r.COMPONENT, r.PROPERTY, r.TIME_ASPCT, r.SYSTEM, r.SCALE_TYP, r.METHOD_TYP].filter(Boolean).join(':'),
        ...(r.DefinitionDescription ? { definition: r.DefinitionDescription } : {}),
        ...(designation.length ? { designation } : {}),
        property,
      };
      if (++rows % 1000 === 0) progress();
      if (rows % 25_000 === 0) collectGarbage();
    }
    links.clear();
    termLists.clear();
    designations.clear();

    for (const [code, part] of parts) {
      if (written.has(code)) continue;
      written.add(code);
      const property: CodeSystemConceptProperty[] = [];
      if (part.status) property.push({ code: 'STATUS', valueString: part.status });
      if (INACTIVE_STATUSES.has(part.status)) property.push({ code: 'inactive', valueBoolean: true });
      hierarchy(code, property);
      yield {
        code,
        display: part.name || part.display,
        ...(part.display ? { designation: [loincDesignation(EN, USE.displayName, part.display)] } : {}),
        property,
      };
    }
    parts.clear();
    for (const [code, name] of linkedParts) {
      if (written.has(code)) continue;
      written.add(code);
      const property: CodeSystemConceptProperty[] = [];
      hierarchy(code, property);
      yield { code, display: name, ...(property.length ? { property } : {}) };
    }
    linkedParts.clear();
    for (const [code, list] of lists) {
      if (written.has(code)) continue;
      written.add(code);
      const property: CodeSystemConceptProperty[] = [
        ...list.answers.map((a) => ({ code: ANSWER, valueCode: a })),
        ...list.terms.map((t) => ({ code: ANSWERS_FOR, valueCode: t })),
      ];
      yield { code, display: list.name, property };
    }
    for (const [code, answer] of answers) {
      if (written.has(code)) continue;
      written.add(code);
      yield { code, display: answer.display, property: answer.lists.map((l) => ({ code: ANSWER_LIST, valueCode: l })) };
    }
    // Nodes of the hierarchy that no other file defines (its root, grouping nodes).
    for (const [code, ref] of nodeText) {
      const text = texts.get(ref);
      if (written.has(code)) continue;
      written.add(code);
      const property: CodeSystemConceptProperty[] = [];
      hierarchy(code, property);
      yield { code, display: text, ...(property.length ? { property } : {}) };
    }
    progress();
    bar.done();
  }
  return { version, content: content() };
}

function loincDesignation(language: string, use: string, value: string): CodeSystemConceptDesignation {
  return { language, use: { system: LOINC_URL, code: use, display: use }, value };
}

/** `http://loinc.org/property/COMPONENT` → `COMPONENT`. */
function propertyCode(uri: string | undefined): string | undefined {
  if (!uri) return undefined;
  const i = uri.lastIndexOf('/');
  return i >= 0 ? uri.slice(i + 1) || undefined : uri;
}

/** The newest VersionLastChanged of the release's terms (a release without a stated version). */
async function newestVersion(release: LoincRelease): Promise<string | undefined> {
  const table = release.find('LoincTable/Loinc.csv');
  if (!table) return undefined;
  let newest: string | undefined;
  for await (const r of release.records(table)) {
    const v = r.VersionLastChanged;
    if (v && (!newest || compareVersions(v, newest) > 0)) newest = v;
  }
  release.bytesRead = 0;
  return newest;
}

function compareVersions(a: string, b: string): number {
  const pa = a.split('.').map(Number);
  const pb = b.split('.').map(Number);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

/**
 * Texts held while the release is read, as UTF-8 in large buffers addressed by number: a
 * string cut from a CSV chunk would keep the whole chunk alive (and a two-byte string takes
 * twice its UTF-8 size), which for the linguistic variants of a release is gigabytes.
 */
class TextArena {
  private readonly blocks: Buffer[] = [];
  private block = Buffer.alloc(0);
  private used = 0;
  private static readonly BLOCK = 16 * 1024 * 1024;
  /** Texts of 2^20 bytes and more are kept as strings (none in a release; a guard). */
  private readonly large: string[] = [];

  /** Stores `text`; returns its reference. */
  add(text: string): number {
    const bytes = Buffer.byteLength(text);
    if (bytes >= 1 << 20) {
      this.large.push(text);
      return -this.large.length;
    }
    if (this.used + bytes > this.block.length) {
      this.block = Buffer.allocUnsafe(TextArena.BLOCK);
      this.blocks.push(this.block);
      this.used = 0;
    }
    const at = this.used;
    this.block.write(text, at);
    this.used += bytes;
    // block (11 bits) | offset in block (24 bits) | length (20 bits): 55 bits, a safe integer
    return ((this.blocks.length - 1) * 2 ** 24 + at) * 2 ** 20 + bytes;
  }

  get(ref: number): string {
    if (ref < 0) return this.large[-ref - 1];
    const bytes = ref % 2 ** 20;
    const pos = Math.floor(ref / 2 ** 20);
    const at = pos % 2 ** 24;
    return this.blocks[Math.floor(pos / 2 ** 24)].toString('utf8', at, at + bytes);
  }

  /** A copy of `text` that does not keep the chunk it was cut from. */
  copy(text: string): string {
    return text === '' ? '' : this.get(this.add(text));
  }
}
