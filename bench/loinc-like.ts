import { closeSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { join } from 'node:path';

/**
 * A made-up LOINC release in the release's CSV layout (docs/terminology.md#loinc), of any size,
 * for the LOINC import benchmark and the atomic-import test: terms with valid mod-10 check
 * digits, parts, part links, answer lists, the component hierarchy, consumer names and
 * linguistic variants. Nothing in it is LOINC content.
 */
export interface LoincLikeSize {
  terms: number;
  parts: number;
  /** Linguistic-variant files (languages); each has a row per term. */
  languages: number;
  answerLists: number;
}

/** The sizes of a real release: ~100k terms, ~150k parts, ~2M part links and variant rows. */
export const RELEASE_SIZE: LoincLikeSize = { terms: 100_000, parts: 150_000, languages: 13, answerLists: 5_000 };

/** The LOINC mod-10 check digit of a number. */
export function checkDigit(n: number): number {
  const s = String(n);
  let total = 0;
  for (let i = 0; i < s.length; i++) {
    let d = s.charCodeAt(s.length - 1 - i) - 48;
    if (i % 2 === 0) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    total += d;
  }
  return (10 - (total % 10)) % 10;
}

export const termCode = (i: number) => `${10_000 + i}-${checkDigit(10_000 + i)}`;
export const partCode = (i: number) => `LP${100_000 + i}-${checkDigit(100_000 + i)}`;
const listCode = (i: number) => `LL${1_000 + i}-${checkDigit(1_000 + i)}`;
const answerCode = (i: number) => `LA${10_000 + i}-${checkDigit(10_000 + i)}`;

const AXES: Array<[string, string]> = [
  ['COMPONENT', 'COMPONENT'],
  ['PROPERTY', 'PROPERTY'],
  ['TIME', 'TIME_ASPCT'],
  ['SYSTEM', 'SYSTEM'],
  ['SCALE', 'SCALE_TYP'],
  ['METHOD', 'METHOD_TYP'],
];
const LANGUAGES = ['de-DE', 'fr-FR', 'es-ES', 'it-IT', 'nl-NL', 'pt-BR', 'zh-CN', 'ru-RU', 'tr-TR', 'el-GR', 'et-EE', 'ko-KR', 'uk-UA', 'pl-PL', 'fr-CA', 'es-MX'];

const q = (v: string) => `"${v.replace(/"/g, '""')}"`;

/** A CSV file written in large pieces. */
class CsvFile {
  private fd: number;
  private buf = '';
  constructor(path: string, header: string[]) {
    this.fd = openSync(path, 'w');
    this.row(header);
  }
  row(values: string[]): void {
    this.buf += values.map(q).join(',') + '\r\n';
    if (this.buf.length > 1 << 20) this.flush();
  }
  close(): void {
    this.flush();
    closeSync(this.fd);
  }
  private flush(): void {
    writeSync(this.fd, this.buf);
    this.buf = '';
  }
}

/** Where the parts sit: the first axis parts, then the class parts, then the components. */
function layout(size: LoincLikeSize) {
  const axisParts = Math.min(6000, Math.floor(size.parts / 2));
  const classParts = 100;
  const componentCount = Math.max(1, size.parts - axisParts - classParts);
  const component = (t: number) => axisParts + classParts + (t % componentCount);
  return { axisParts, classParts, componentCount, component };
}

/**
 * The ancestors of term t in the release's component hierarchy, nearest first: its component
 * part, that component's class part, the hierarchy's root (as `writeLoincLike` writes them).
 */
export function termAncestors(size: LoincLikeSize, t: number): string[] {
  const { axisParts, classParts, component } = layout(size);
  const comp = component(t);
  return [partCode(comp), partCode(axisParts + ((comp - axisParts - classParts) % classParts)), partCode(size.parts)];
}

/**
 * Writes the release into `<dir>/Loinc_<version>/`; returns that folder. Part i of the first
 * 6 × 1000 parts is an axis value (axis i mod 6); the rest are further components, under
 * 100 class parts in the hierarchy; term t's component is part 6000 + (t mod (parts - 6000)).
 */
export function writeLoincLike(dir: string, size: LoincLikeSize, version: string): string {
  const root = join(dir, `Loinc_${version}`);
  const acc = join(root, 'AccessoryFiles');
  for (const d of ['LoincTable', 'AccessoryFiles/PartFile', 'AccessoryFiles/AnswerFile', 'AccessoryFiles/ComponentHierarchyBySystem', 'AccessoryFiles/ConsumerName', 'AccessoryFiles/LinguisticVariants']) {
    mkdirSync(join(root, d), { recursive: true });
  }
  const { axisParts, classParts, componentCount, component } = layout(size);
  const axisPart = (t: number, axis: number) => axis + 6 * ((t * 7 + axis) % Math.floor(axisParts / 6));
  const partName = (i: number) => `Part ${i} ${['alpha', 'beta', 'gamma', 'delta'][i % 4]}`;

  const loinc = new CsvFile(join(root, 'LoincTable/Loinc.csv'), [
    'LOINC_NUM', 'COMPONENT', 'PROPERTY', 'TIME_ASPCT', 'SYSTEM', 'SCALE_TYP', 'METHOD_TYP', 'CLASS', 'VersionLastChanged', 'CHNG_TYPE',
    'DefinitionDescription', 'STATUS', 'CLASSTYPE', 'SHORTNAME', 'ORDER_OBS', 'EXTERNAL_COPYRIGHT_NOTICE', 'LONG_COMMON_NAME',
    'EXAMPLE_UCUM_UNITS', 'RELATEDNAMES2', 'VersionFirstReleased', 'DisplayName',
  ]);
  const links = new CsvFile(join(acc, 'PartFile/LoincPartLink_Primary.csv'), ['LoincNumber', 'LongCommonName', 'PartNumber', 'PartName', 'PartCodeSystem', 'PartTypeName', 'LinkTypeName', 'Property']);
  const consumer = new CsvFile(join(acc, 'ConsumerName/ConsumerName.csv'), ['LoincNumber', 'ConsumerName']);
  const hierarchy = new CsvFile(join(acc, 'ComponentHierarchyBySystem/ComponentHierarchyBySystem.csv'), ['PATH_TO_ROOT', 'SEQUENCE', 'IMMEDIATE_PARENT', 'CODE', 'CODE_TEXT']);
  const languages = LANGUAGES.slice(0, size.languages);
  const variantIndex = new CsvFile(join(acc, 'LinguisticVariants/LinguisticVariants.csv'), ['ID', 'ISO_LANGUAGE', 'ISO_COUNTRY', 'LANGUAGE_NAME', 'PRODUCER']);
  const variants = languages.map((l, i) => {
    const [lang, country] = l.split('-');
    variantIndex.row([String(i + 1), lang, country, l, 'made up']);
    return new CsvFile(join(acc, `LinguisticVariants/${lang}${country}${i + 1}LinguisticVariant.csv`), [
      'LOINC_NUM', 'COMPONENT', 'PROPERTY', 'TIME_ASPCT', 'SYSTEM', 'SCALE_TYP', 'METHOD_TYP', 'CLASS', 'SHORTNAME', 'LONG_COMMON_NAME', 'RELATEDNAMES2', 'LinguisticVariantDisplayName',
    ]);
  });
  variantIndex.close();

  const rootCode = partCode(size.parts);
  hierarchy.row(['', '1', '', rootCode, '{component}']);
  for (let c = 0; c < classParts; c++) hierarchy.row([rootCode, String(c + 1), rootCode, partCode(axisParts + c), partName(axisParts + c)]);
  for (let k = 0; k < componentCount; k++) {
    const cls = axisParts + (k % classParts);
    hierarchy.row([`${rootCode}.${partCode(cls)}`, String(k + 1), partCode(cls), partCode(axisParts + classParts + k), partName(axisParts + classParts + k)]);
  }

  for (let t = 0; t < size.terms; t++) {
    const code = termCode(t);
    const comp = component(t);
    const axes = AXES.map((_, a) => (a === 0 ? comp : axisPart(t, a)));
    const name = `${partName(comp)} [${partName(axes[1])}] in ${partName(axes[3])} by ${partName(axes[5])}`;
    const status = t % 50 === 0 ? 'DEPRECATED' : t % 23 === 0 ? 'DISCOURAGED' : 'ACTIVE';
    loinc.row([
      code, partName(comp), partName(axes[1]), partName(axes[2]), partName(axes[3]), partName(axes[4]), partName(axes[5]), `CLASS${t % classParts}`,
      '2.80', 'MIN', t % 5 === 0 ? `Definition of term ${t}, "quoted", with a comma.` : '', status, String(1 + (t % 4)), `Short ${t}`,
      ['Both', 'Observation', 'Order'][t % 3], t % 97 === 0 ? 'Third-party notice' : '', name, t % 2 ? 'mg/dL' : '', `Related ${t}; synonyms; more words`, '2.10', '',
    ]);
    for (let a = 0; a < AXES.length; a++) {
      links.row([code, name, partCode(axes[a]), partName(axes[a]), 'http://loinc.org', AXES[a][0], 'Primary', `http://loinc.org/property/${AXES[a][1]}`]);
    }
    if (t % 2 === 0) consumer.row([code, `Consumer name ${t}`]);
    const [parent, cls] = termAncestors(size, t);
    hierarchy.row([`${rootCode}.${cls}.${parent}`, '1', parent, code, `Short ${t}`]);
    for (const [i, v] of variants.entries()) v.row([code, `K${t}`, 'P', 'Pt', 'S', 'Qn', '', '', t % 4 === i % 4 ? `Kurz ${t} ${i}` : '', `Langer Name ${t} ${languages[i]}`, '', '']);
  }
  loinc.close();
  links.close();
  consumer.close();
  hierarchy.close();
  for (const v of variants) v.close();

  const parts = new CsvFile(join(acc, 'PartFile/Part.csv'), ['PartNumber', 'PartTypeName', 'PartName', 'PartDisplayName', 'Status']);
  for (let i = 0; i < size.parts; i++) {
    const type = i < axisParts ? AXES[i % 6][0] : i < axisParts + classParts ? 'CLASS' : 'COMPONENT';
    parts.row([partCode(i), type, partName(i), `${partName(i)} (display)`, 'ACTIVE']);
  }
  parts.close();

  const lists = new CsvFile(join(acc, 'AnswerFile/AnswerList.csv'), ['AnswerListId', 'AnswerListName', 'AnswerListOID', 'ExtDefinedYN', 'AnswerStringId', 'SequenceNumber', 'DisplayText']);
  const listLinks = new CsvFile(join(acc, 'AnswerFile/LoincAnswerListLink.csv'), ['LoincNumber', 'LongCommonName', 'AnswerListId', 'AnswerListName', 'AnswerListLinkType', 'ApplicableContext']);
  for (let l = 0; l < size.answerLists; l++) {
    for (let s = 0; s < 5; s++) {
      const a = (l * 3 + s) % (size.answerLists * 4);
      lists.row([listCode(l), `List ${l}`, '', 'N', answerCode(a), String(s + 1), `Answer ${a}`]);
    }
    listLinks.row([termCode((l * 13) % size.terms), '', listCode(l), `List ${l}`, 'NORMATIVE', '']);
  }
  lists.close();
  listLinks.close();
  return root;
}
