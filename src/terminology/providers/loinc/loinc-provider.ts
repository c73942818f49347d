import type { ValueSetComposeInclude, ValueSetComposeIncludeFilter } from '@medplum/fhirtypes';
import { msg } from '../../messages.js';
import type { CodeSystemInfo, Concept, Designation, StoredProperty } from '../../types.js';
import { escapeRegex, filterOp, invalidValueSet } from '../filters.js';
import type { CodeSystemProvider, ConceptSelection } from '../provider.js';
import { ANSWER_LIST, CLASSTYPE_NAMES, LOINC_PROPERTY, ON_REQUEST, PART_CODE, TERM_CODE } from './loinc-model.js';

/**
 * LOINC (docs/terminology.md#loinc): a loaded release is an ordinary indexed code system, read
 * through the provider the index gives (`inner`); this provider adds the meaning of the filters
 * LOINC's FHIR guidance defines, by rewriting each into filters the index already evaluates:
 *
 * - `ancestor` `=`/`in` X: the descendants of X in the multiaxial hierarchy (`concept descendent-of`);
 * - `copyright` `=` `LOINC` (terms without an external copyright notice) or `3rdParty` (with one);
 * - `LIST` `=` LL: the answers of the answer list; `answers-for` `=` LL or a term: the answers of
 *   that list, or of the term's lists;
 * - a part property (COMPONENT, SYSTEM, SCALE_TYP, CLASS, …: declared `code`) `=` a part code
 *   as stored, or a part name (ignoring case); `regex` on the part code or the part name;
 * - everything else (`parent`, `child`, `concept is-a`, STATUS, CLASSTYPE, ORDER_OBS, `exists`…)
 *   is passed on unchanged.
 *
 * A rewritten filter may be a union (part code OR part name): it becomes alternatives, each a
 * list of filters ANDed; the include's filters are evaluated one after another, each narrowing
 * the concepts the next is asked about.
 */
export class LoincProvider implements CodeSystemProvider {
  /** Release bookkeeping (VersionFirstReleased, …) only when asked for (docs/terminology.md#loinc). */
  readonly onRequestProperties = ON_REQUEST;
  /** A term names dozens of parts and lists: `$lookup` gives their codes alone. */
  readonly bareRelations = true;

  constructor(private readonly inner: CodeSystemProvider) {}

  get cs(): CodeSystemInfo {
    return this.inner.cs;
  }

  findConcepts(codes: string[]): Promise<Map<string, Concept>> {
    return this.inner.findConcepts(codes);
  }

  conceptsByIds(ids: number[]): Promise<Concept[]> {
    return this.inner.conceptsByIds(ids);
  }

  designations(ids: number[]): Promise<Map<number, Designation[]>> {
    return this.inner.designations(ids);
  }

  /** The stored properties; a CLASSTYPE value is described by what it stands for (`1`: `Laboratory class`). */
  async properties(id: number): Promise<StoredProperty[]> {
    return (await this.inner.properties(id)).map((p) => (p.code === 'CLASSTYPE' && CLASSTYPE_NAMES[p.value] ? { ...p, display: CLASSTYPE_NAMES[p.value] } : p));
  }

  neighbours(id: number, up: boolean): Promise<Concept[]> {
    return this.inner.neighbours(id, up);
  }

  isAncestor(ancestor: number, descendant: number): Promise<boolean> {
    return this.inner.isAncestor(ancestor, descendant);
  }

  async selected(selection: ConceptSelection, ids: number[]): Promise<Set<number>> {
    const plan = await this.plan(selection);
    if (!plan) return this.inner.selected(selection, ids);
    let current = ids;
    for (const alternatives of plan) {
      const admitted = new Set<number>();
      for (const filter of alternatives) {
        if (current.length === 0) break;
        for (const id of await this.inner.selected(this.filteredBy(selection, filter), current)) admitted.add(id);
      }
      current = current.filter((id) => admitted.has(id));
    }
    return this.inner.selected(this.rest(selection), current);
  }

  async enumerate(selection: ConceptSelection, within?: number[]): Promise<number[]> {
    const plan = await this.plan(selection);
    if (!plan) return this.inner.enumerate(selection, within);
    let current = within;
    for (const alternatives of plan) {
      const admitted = new Set<number>();
      for (const filter of alternatives) {
        if (current?.length === 0) break;
        for (const id of await this.inner.enumerate(this.filteredBy(selection, filter), current)) admitted.add(id);
      }
      current = [...admitted].sort((a, b) => a - b);
    }
    return this.inner.enumerate(this.rest(selection), current);
  }

  /** A selection of one list of filters (no concept list, inactive concepts too, no text). */
  private filteredBy(selection: ConceptSelection, filter: ValueSetComposeIncludeFilter[]): ConceptSelection {
    const { system, version } = selection.include;
    return { include: { system, version, filter }, path: selection.path, activeOnly: false };
  }

  /** The selection without its filters (its concept list, active only and text stay). */
  private rest(selection: ConceptSelection): ConceptSelection {
    const include: ValueSetComposeInclude = { ...selection.include };
    delete include.filter;
    return { ...selection, include };
  }

  /**
   * Per filter of the include, its alternatives (each a list of index filters), or undefined
   * when no filter needs LOINC's meaning (the include goes to the index as it is).
   */
  private async plan(selection: ConceptSelection): Promise<ValueSetComposeIncludeFilter[][][] | undefined> {
    const filters = selection.include.filter ?? [];
    const plans: ValueSetComposeIncludeFilter[][][] = [];
    let rewritten = false;
    for (const [j, f] of filters.entries()) {
      const alternatives = await this.rewrite(f, `${selection.path}.filter[${j}]`);
      if (alternatives) rewritten = true;
      plans.push(alternatives ?? [[f]]);
    }
    return rewritten ? plans : undefined;
  }

  /** The alternatives of one filter, or undefined to pass it on unchanged. */
  private async rewrite(f: ValueSetComposeIncludeFilter, path: string): Promise<ValueSetComposeIncludeFilter[][] | undefined> {
    const op = filterOp(f) ?? '';
    const property = f.property ?? '';
    const value = f.value ?? '';
    if (value === '') return undefined; // the index gives the error of a filter without a value
    const values = () => value.split(',').map((v) => v.trim()).filter(Boolean);
    switch (property) {
      case 'ancestor':
        if (op !== '=' && op !== 'in') throw unsupported(this.cs, property, op, path);
        return (op === '=' ? [value] : values()).map((v) => [{ property: 'concept', op: 'descendent-of', value: v }]);
      case 'copyright':
        if (op !== '=') throw unsupported(this.cs, property, op, path);
        if (value === 'LOINC') return [[codeRegex(TERM_CODE), { property: 'EXTERNAL_COPYRIGHT_NOTICE', op: 'exists', value: 'false' }]];
        if (value === '3rdParty') return [[{ property: 'EXTERNAL_COPYRIGHT_NOTICE', op: 'exists', value: 'true' }]];
        throw invalidValueSet(`The value '${value}' of the LOINC copyright filter is not LOINC or 3rdParty`, path);
      case 'LIST':
        if (op !== '=') throw unsupported(this.cs, property, op, path);
        return answersOf([value]);
      case 'answers-for': {
        if (op !== '=') throw unsupported(this.cs, property, op, path);
        if (!TERM_CODE.test(value)) return answersOf([value]);
        const term = (await this.inner.findConcepts([value])).get(value);
        const lists = term ? (await this.inner.properties(term.id)).filter((p) => p.code === ANSWER_LIST).map((p) => p.value) : [];
        return answersOf(lists);
      }
    }
    const declared = this.cs.propertyDefs.find((d) => d.code === property);
    const partProperty = declared?.type === 'code' && declared.uri?.startsWith(LOINC_PROPERTY) === true;
    if (!partProperty || (op !== '=' && op !== 'regex')) return undefined;
    if (op === '=' && PART_CODE.test(value)) return undefined;
    // A part property by the part's name: the parts so named, and text values so written.
    const pattern = op === '=' ? caseless(value) : value;
    const parts = await this.partsNamed(pattern, path);
    const alternatives: ValueSetComposeIncludeFilter[][] = [[{ property, op: 'regex', value: pattern }]];
    if (parts.length > 0) alternatives.push([{ property, op: 'in', value: parts.join(',') }]);
    return alternatives;
  }

  /** Codes of the parts whose name (display) matches `pattern` (whole). */
  private async partsNamed(pattern: string, path: string): Promise<string[]> {
    const ids = await this.inner.enumerate({
      include: { system: this.cs.url, filter: [codeRegex(PART_CODE), { property: 'display', op: 'regex', value: pattern }] },
      path,
      activeOnly: false,
    });
    return (await this.inner.conceptsByIds(ids)).map((c) => c.code);
  }
}

/** The answers (LA codes) in any of `lists`: answers name their lists in the AnswerList property. */
function answersOf(lists: string[]): ValueSetComposeIncludeFilter[][] {
  return lists.map((ll) => [codeRegex(/^LA[0-9]+-[0-9]$/), { property: ANSWER_LIST, op: '=', value: ll }]);
}

function codeRegex(re: RegExp): ValueSetComposeIncludeFilter {
  return { property: 'concept', op: 'regex', value: re.source.replace(/^\^/, '').replace(/\$$/, '') };
}

/** A regular expression that matches `text` exactly, ignoring case. */
function caseless(text: string): string {
  let out = '';
  for (const ch of text) {
    const lower = ch.toLowerCase();
    const upper = ch.toUpperCase();
    out += lower !== upper && lower.length === 1 && upper.length === 1 ? `[${lower}${upper}]` : escapeRegex(ch);
  }
  return out;
}

function unsupported(cs: CodeSystemInfo, property: string, op: string, path: string) {
  return invalidValueSet(msg.filterNotSupported(cs.url, property, op), path);
}
