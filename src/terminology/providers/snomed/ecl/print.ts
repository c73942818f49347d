import type { Acceptability, AttributeValue, Cardinality, ConceptFilter, ConceptSetOperand, DescriptionFilter, Expression, MemberFilter, Refinement, SearchTerm } from './ast.js';

/**
 * Prints a syntax tree back as ECL, fully parenthesised and without terms or comments
 * (docs/terminology.md#snomed-ct-expression-constraints-ecl). Parsing the output gives the same
 * tree (positions aside). With `normalise`, the operands of AND and OR are sorted, so equivalent
 * spellings print alike: the evaluator's cache key.
 */
export function printEcl(e: Expression, normalise = false): string {
  return new Printer(normalise).expr(e);
}

const HIERARCHY_SYMBOL: Record<string, string> = {
  descendantOf: '<',
  descendantOrSelfOf: '<<',
  childOf: '<!',
  childOrSelfOf: '<<!',
  ancestorOf: '>',
  ancestorOrSelfOf: '>>',
  parentOf: '>!',
  parentOrSelfOf: '>>!',
  top: '!!>',
  bottom: '!!<',
};

class Printer {
  constructor(private readonly normalise: boolean) {}

  private list(parts: string[]): string[] {
    return this.normalise ? [...new Set(parts)].sort() : parts;
  }

  /** A subExpressionConstraint operand: atoms bare, anything else in parentheses. */
  private operand(e: Expression): string {
    switch (e.type) {
      case 'concept':
      case 'any':
      case 'alternateIdentifier':
        return this.expr(e);
      default:
        return `(${this.expr(e)})`;
    }
  }

  expr(e: Expression): string {
    switch (e.type) {
      case 'concept':
        return e.sctid;
      case 'any':
        return '*';
      case 'alternateIdentifier':
        return `"${e.scheme}#${e.code}"`;
      case 'hierarchy':
        return `${HIERARCHY_SYMBOL[e.operator]} ${this.operand(e.operand)}`;
      case 'memberOf': {
        const fields = e.fields === undefined ? '' : e.fields === '*' ? ' [*]' : ` [${e.fields.join(', ')}]`;
        const filters = e.memberFilters.map((block) => ` {{ M ${block.map((f) => this.memberFilter(f)).join(', ')} }}`).join('');
        return `^${fields} ${this.operand(e.refsets)}${filters}`;
      }
      case 'and':
      case 'or':
        return this.list(e.operands.map((o) => this.operand(o))).join(e.type === 'and' ? ' AND ' : ' OR ');
      case 'minus':
        return `${this.operand(e.left)} MINUS ${this.operand(e.right)}`;
      case 'refined':
        return `${this.operand(e.focus)} : ${this.refinement(e.refinement)}`;
      case 'dotted':
        return `${this.operand(e.focus)} . ${this.operand(e.attribute)}`;
      case 'filtered': {
        const f = e.filter;
        const body =
          f.kind === 'description' ? `D ${this.list(f.filters.map((x) => this.descriptionFilter(x))).join(', ')}` : `C ${this.list(f.filters.map((x) => this.conceptFilter(x))).join(', ')}`;
        return `${this.operand(e.focus)} {{ ${body} }}`;
      }
      case 'history': {
        const suffix = e.subset ? ` (${this.expr(e.subset)})` : e.profile ? `-${e.profile.toUpperCase()}` : '';
        return `${this.operand(e.focus)} {{ + HISTORY${suffix} }}`;
      }
    }
  }

  private refinement(r: Refinement): string {
    switch (r.type) {
      case 'refinementAnd':
      case 'refinementOr':
        return this.list(r.operands.map((o) => `(${this.refinement(o)})`)).join(r.type === 'refinementAnd' ? ' AND ' : ' OR ');
      case 'group':
        return `${card(r.cardinality)}{ ${this.refinement(r.attributes)} }`;
      case 'attribute':
        return `${card(r.cardinality)}${r.reverse ? 'R ' : ''}${this.operand(r.name)} ${this.value(r.value)}`;
    }
  }

  private value(v: AttributeValue): string {
    switch (v.kind) {
      case 'expression':
        return `${v.operator} ${this.operand(v.value)}`;
      case 'number':
        return `${v.operator} #${v.text}`;
      case 'string':
        return `${v.operator} ${terms(v.value)}`;
      case 'boolean':
        return `${v.operator} ${v.value}`;
    }
  }

  private conceptSet(v: ConceptSetOperand): string {
    return v.kind === 'set' ? `(${this.list(v.concepts.map((c) => c.sctid)).join(' ')})` : this.operand(v.value);
  }

  private descriptionFilter(f: DescriptionFilter): string {
    switch (f.type) {
      case 'term':
        return `term ${f.operator} ${terms(f.terms)}`;
      case 'language':
        return `language ${f.operator} (${this.list([...f.codes]).join(' ')})`;
      case 'typeId':
        return `typeId ${f.operator} ${this.conceptSet(f.value)}`;
      case 'typeToken':
        return `type ${f.operator} (${this.list([...f.tokens]).join(' ')})`;
      case 'dialect': {
        const acc = f.acceptability ? ` ${acceptability(f.acceptability)}` : '';
        if (f.expression) return `dialectId ${f.operator} ${this.operand(f.expression)}${acc}`;
        const entries = f.dialects.map((d) => `${d.alias ?? d.concept?.sctid}${d.acceptability ? ` ${acceptability(d.acceptability)}` : ''}`);
        return `${f.dialects[0]?.alias !== undefined ? 'dialect' : 'dialectId'} ${f.operator} (${entries.join(' ')})${acc}`;
      }
      case 'id':
        return `id ${f.operator} (${this.list([...f.ids]).join(' ')})`;
      default:
        return this.shared(f);
    }
  }

  private conceptFilter(f: ConceptFilter): string {
    switch (f.type) {
      case 'definitionStatusId':
        return `definitionStatusId ${f.operator} ${this.conceptSet(f.value)}`;
      case 'definitionStatusToken':
        return `definitionStatus ${f.operator} (${this.list([...f.tokens]).join(' ')})`;
      default:
        return this.shared(f);
    }
  }

  private memberFilter(f: MemberFilter): string {
    if (f.type !== 'field') return this.shared(f);
    const v = f.value;
    const value =
      v.kind === 'expression'
        ? this.operand(v.value)
        : v.kind === 'number'
          ? `#${v.value}`
          : v.kind === 'string'
            ? terms(v.value)
            : v.kind === 'boolean'
              ? String(v.value)
              : `(${v.value.map(time).join(' ')})`;
    return `${f.field} ${f.operator} ${value}`;
  }

  private shared(f: Extract<DescriptionFilter, { type: 'module' | 'effectiveTime' | 'active' }>): string {
    switch (f.type) {
      case 'module':
        return `moduleId ${f.operator} ${this.conceptSet(f.value)}`;
      case 'effectiveTime':
        return `effectiveTime ${f.operator} (${f.times.map(time).join(' ')})`;
      case 'active':
        return `active ${f.operator} ${f.value ? 1 : 0}`;
    }
  }
}

function card(c: Cardinality | undefined): string {
  return c ? `[${c.min}..${c.max ?? '*'}] ` : '';
}

function time(t: number): string {
  return t === 0 ? '""' : `"${t}"`;
}

function terms(list: readonly SearchTerm[]): string {
  return `(${list.map((t) => (t.mode === 'wild' ? `wild:"${t.text}"` : `${t.keyword ? 'match:' : ''}"${t.text}"`)).join(' ')})`;
}

function acceptability(a: Acceptability): string {
  return a.kind === 'tokens' ? `(${a.tokens.join(' ')})` : `(${a.concepts.map((c) => c.sctid).join(' ')})`;
}
