import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Attribute, AttributeValue, Cardinality, ComparisonOperator, ConceptFilter, DescriptionFilter, Expression, HierarchyOperator, MemberFilter, Refinement, SearchTerm } from './ast.js';
import { SCT } from './graph.js';
import { ECL_DEFAULT_BUDGET, EclTooCostlyError, clearEclCache, eclNeeds, evaluateEcl, unknownEclConcepts } from './evaluate.js';
import { MemoryGraph, type MemoryConcept, type MemoryEdition } from './memory-graph.js';
import { parseEcl } from './parser.js';
import { printEcl } from './print.js';
import { TOY, seeded, toyEdition } from './toy-edition.js';

// ---- the brute-force evaluator: the definitions, concept by concept, on the raw edition ---------

const DIALECTS: Record<string, string> = { 'en-us': TOY.enUs, 'en-gb': TOY.enGb };

class Brute {
  readonly byId = new Map<string, MemoryConcept>();
  readonly universe: string[];
  readonly active: string[];

  constructor(readonly ed: MemoryEdition) {
    for (const c of ed.concepts) this.byId.set(c.sctid, c);
    this.universe = ed.concepts.map((c) => c.sctid);
    this.active = this.universe.filter((s) => this.isActive(s));
  }

  isActive(s: string): boolean {
    const c = this.byId.get(s);
    return !!c && c.active !== false;
  }
  parents(s: string): string[] {
    return this.isActive(s) ? [...(this.byId.get(s)?.parents ?? [])] : [];
  }
  /** Is `a` a proper ancestor of `c`? */
  above(a: string, c: string, seen = new Set<string>()): boolean {
    for (const p of this.parents(c)) {
      if (p === a) return true;
      if (!seen.has(p)) {
        seen.add(p);
        if (this.above(a, p, seen)) return true;
      }
    }
    return false;
  }
  rels(s: string): Array<readonly [number, string, string]> {
    return this.isActive(s) ? [...(this.byId.get(s)?.attributes ?? [])] : [];
  }
  concrete(s: string): Array<readonly [number, string, number | string | boolean]> {
    return this.isActive(s) ? [...(this.byId.get(s)?.concrete ?? [])] : [];
  }

  eval(e: Expression): Set<string> {
    const S = this.active;
    switch (e.type) {
      case 'concept':
        return new Set(this.byId.has(e.sctid) ? [e.sctid] : []);
      case 'any':
        return new Set(S);
      case 'alternateIdentifier':
        return new Set();
      case 'hierarchy': {
        const X = this.eval(e.operand);
        const op: HierarchyOperator = e.operator;
        const xs = [...X];
        const pick = (f: (c: string) => boolean) => new Set(this.universe.filter(f));
        switch (op) {
          case 'descendantOf':
            return pick((c) => xs.some((x) => this.above(x, c)));
          case 'descendantOrSelfOf':
            return pick((c) => X.has(c) || xs.some((x) => this.above(x, c)));
          case 'childOf':
            return pick((c) => this.parents(c).some((p) => X.has(p)));
          case 'childOrSelfOf':
            return pick((c) => X.has(c) || this.parents(c).some((p) => X.has(p)));
          case 'ancestorOf':
            return pick((c) => xs.some((x) => this.above(c, x)));
          case 'ancestorOrSelfOf':
            return pick((c) => X.has(c) || xs.some((x) => this.above(c, x)));
          case 'parentOf':
            return pick((c) => xs.some((x) => this.parents(x).includes(c)));
          case 'parentOrSelfOf':
            return pick((c) => X.has(c) || xs.some((x) => this.parents(x).includes(c)));
          case 'top':
            return new Set(xs.filter((x) => !xs.some((y) => this.above(y, x))));
          case 'bottom':
            return new Set(xs.filter((x) => !xs.some((y) => this.above(x, y))));
        }
        break;
      }
      case 'memberOf': {
        const R = e.refsets.type === 'any' ? new Set(Object.keys(this.ed.refsets ?? {})) : this.meta(e.refsets);
        const out = new Set<string>();
        for (const r of R) {
          const rows = this.ed.refsets?.[r];
          if (!rows) continue;
          const saysActive = e.memberFilters.some((b) => b.some((f) => f.type === 'active'));
          for (const m of rows) {
            if (!saysActive && m.active === false) continue;
            if (!e.memberFilters.every((b) => b.every((f) => this.memberFilter(f, m)))) continue;
            const values = e.fields === undefined ? [m.referencedComponentId] : e.fields === '*' ? Object.values(m.fields ?? {}) : e.fields.map((f) => (f === 'referencedComponentId' ? m.referencedComponentId : m.fields?.[f]));
            for (const v of values) if (typeof v === 'string' && this.byId.has(v)) out.add(v);
          }
        }
        return out;
      }
      case 'and': {
        const sets = e.operands.map((o) => this.eval(o));
        return new Set(this.universe.filter((c) => sets.every((s) => s.has(c))));
      }
      case 'or': {
        const sets = e.operands.map((o) => this.eval(o));
        return new Set(this.universe.filter((c) => sets.some((s) => s.has(c))));
      }
      case 'minus': {
        const a = this.eval(e.left);
        const b = this.eval(e.right);
        return new Set([...a].filter((c) => !b.has(c)));
      }
      case 'refined': {
        const F = this.eval(e.focus);
        return new Set([...F].filter((c) => this.satisfies(c, e.refinement, undefined)));
      }
      case 'dotted': {
        const F = this.eval(e.focus);
        const T = this.eval(e.attribute);
        return new Set(this.universe.filter((d) => [...F].some((c) => this.rels(c).some(([, t, x]) => T.has(t) && x === d))));
      }
      case 'filtered': {
        const F = this.eval(e.focus);
        const f = e.filter;
        if (f.kind === 'concept')
          return new Set(
            [...F].filter((c) =>
              f.filters.every((x) => {
                const con = this.byId.get(c)!;
                const eq = x.operator === '=';
                switch (x.type) {
                  case 'active':
                    return (this.isActive(c) === x.value) === eq;
                  case 'definitionStatusToken':
                    return x.tokens.includes(con.defined ? 'defined' : 'primitive') === eq;
                  case 'definitionStatusId':
                    return this.operandSet(x.value).has(con.defined ? SCT.defined : SCT.primitive) === eq;
                  case 'module':
                    return this.operandSet(x.value).has(con.moduleId ?? TOY.core) === eq;
                  case 'effectiveTime':
                    return time(con.effectiveTime ?? 0, x.operator, x.times);
                }
              }),
            ),
          );
        return new Set([...F].filter((c) => (this.byId.get(c)?.descriptions ?? []).some((d) => this.descriptionPasses(d, f.filters))));
      }
      case 'history': {
        const F = this.eval(e.focus);
        const allowed = e.subset ? this.meta(e.subset) : e.profile === 'min' ? new Set([TOY.sameAs]) : e.profile === 'mod' ? new Set([TOY.sameAs, TOY.replacedBy, '900000000000528000', '1186921001']) : undefined;
        const out = new Set(F);
        for (const [r, s, t] of this.ed.associations ?? []) if (F.has(t) && (!allowed || allowed.has(r))) out.add(s);
        return out;
      }
    }
    throw new Error('unreachable');
  }

  operandSet(v: { kind: 'set'; concepts: readonly { sctid: string }[] } | { kind: 'expression'; value: Expression }): Set<string> {
    return v.kind === 'set' ? new Set(v.concepts.map((c) => c.sctid)) : this.meta(v.value);
  }

  /** Where an operand names metadata (refsets, modules, dialects…): evaluated like any other. */
  meta(e: Expression): Set<string> {
    return this.eval(e);
  }

  memberFilter(f: MemberFilter, m: NonNullable<MemoryEdition['refsets']>[string][number]): boolean {
    const eq = f.operator === '=';
    switch (f.type) {
      case 'active':
        return ((m.active !== false) === f.value) === eq;
      case 'module':
        return this.operandSet(f.value).has(m.moduleId ?? TOY.core) === eq;
      case 'effectiveTime':
        return time(m.effectiveTime ?? 0, f.operator, f.times);
      case 'field': {
        const x = f.field === 'referencedComponentId' ? m.referencedComponentId : m.fields?.[f.field];
        const v = f.value;
        if (v.kind === 'expression') return (typeof x === 'string' && this.eval(v.value).has(x)) === eq;
        if (v.kind === 'number') return typeof x === 'number' && num(x, f.operator, v.value);
        if (v.kind === 'boolean') return (x === v.value) === eq;
        if (v.kind === 'time') return time(typeof x === 'number' ? x : 0, f.operator, v.value);
        return (typeof x === 'string' && v.value.some((t) => stringMatches(t, x))) === eq;
      }
    }
  }

  descriptionPasses(d: NonNullable<MemoryConcept['descriptions']>[number], filters: readonly DescriptionFilter[]): boolean {
    if (!filters.some((f) => f.type === 'active') && d.active === false) return false;
    return filters.every((f) => {
      const eq = f.operator === '=';
      switch (f.type) {
        case 'term':
          return f.terms.some((t) => termMatches(t, d.term)) === eq;
        case 'language':
          return f.codes.includes(d.languageCode ?? 'en') === eq;
        case 'typeToken': {
          const type = d.typeId ?? SCT.synonym;
          const token = type === SCT.fsn ? 'fsn' : type === SCT.synonym ? 'syn' : 'def';
          return f.tokens.includes(token) === eq;
        }
        case 'typeId':
          return this.operandSet(f.value).has(d.typeId ?? SCT.synonym) === eq;
        case 'dialect': {
          const acc = d.acceptability ?? {};
          const tokenOf = (a: 'preferred' | 'acceptable') => (a === 'preferred' ? 'prefer' : 'accept');
          const allowed = (list: { kind: 'tokens'; tokens: readonly string[] } | { kind: 'concepts'; concepts: readonly { sctid: string }[] } | undefined, a: 'preferred' | 'acceptable') =>
            !list || (list.kind === 'tokens' ? list.tokens.includes(tokenOf(a)) : list.concepts.some((c) => c.sctid === (a === 'preferred' ? SCT.preferred : SCT.acceptable)));
          let hit = false;
          if (f.expression) for (const r of this.meta(f.expression)) if (acc[r] && allowed(f.acceptability, acc[r])) hit = true;
          for (const e of f.dialects) {
            const r = e.alias !== undefined ? DIALECTS[e.alias] : e.concept?.sctid;
            if (r && acc[r] && allowed(e.acceptability ?? f.acceptability, acc[r])) hit = true;
          }
          return hit === eq;
        }
        case 'module':
          return this.operandSet(f.value).has(d.moduleId ?? TOY.core) === eq;
        case 'effectiveTime':
          return time(d.effectiveTime ?? 0, f.operator, f.times);
        case 'active':
          return ((d.active !== false) === f.value) === eq;
        case 'id':
          return f.ids.includes(d.sctid) === eq;
      }
    });
  }

  /** The role groups: a key per non-zero group, and one per ungrouped item. */
  groups(c: string): string[] {
    const keys = new Set<string>();
    this.rels(c).forEach(([g], i) => keys.add(g === 0 ? `r${i}` : `g${g}`));
    this.concrete(c).forEach(([g], i) => keys.add(g === 0 ? `c${i}` : `g${g}`));
    return [...keys];
  }

  satisfies(c: string, r: Refinement, group: string | undefined): boolean {
    switch (r.type) {
      case 'refinementAnd':
        return r.operands.every((o) => this.satisfies(c, o, group));
      case 'refinementOr':
        return r.operands.some((o) => this.satisfies(c, o, group));
      case 'group': {
        const n = this.groups(c).filter((g) => this.satisfies(c, r.attributes, g)).length;
        return within(n, r.cardinality);
      }
      case 'attribute':
        return within(this.count(c, r, group), r.cardinality);
    }
  }

  count(c: string, a: Attribute, group: string | undefined): number {
    const T = this.eval(a.name);
    const v = a.value;
    if (v.kind !== 'expression') {
      return this.concrete(c).filter(([g, t, x], i) => (group === undefined || (g === 0 ? `c${i}` : `g${g}`) === group) && T.has(t) && concreteMatches(v, x)).length;
    }
    const V = this.eval(v.value);
    const eq = v.operator === '=';
    if (a.reverse) {
      let n = 0;
      for (const s of this.active) for (const [, t, d] of this.rels(s)) if (d === c && T.has(t) && V.has(s) === eq) n++;
      return n;
    }
    return this.rels(c).filter(([g, t, d], i) => (group === undefined || (g === 0 ? `r${i}` : `g${g}`) === group) && T.has(t) && V.has(d) === eq).length;
  }
}

function within(n: number, c: Cardinality | undefined): boolean {
  return n >= (c?.min ?? 1) && n <= (c?.max ?? Infinity);
}

function num(x: number, op: ComparisonOperator, y: number): boolean {
  return op === '=' ? x === y : op === '!=' ? x !== y : op === '<' ? x < y : op === '<=' ? x <= y : op === '>' ? x > y : x >= y;
}

function time(t: number, op: ComparisonOperator, times: readonly number[]): boolean {
  if (op === '=') return times.includes(t);
  if (op === '!=') return !times.includes(t);
  return times.every((y) => num(t, op, y));
}

function termMatches(t: SearchTerm, term: string): boolean {
  if (t.mode === 'wild') {
    const source = t.segments.map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('[\\s\\S]*');
    return new RegExp(`^${source}$`, 'iu').test(term);
  }
  const words = term.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
  const wanted = t.words.join(' ').toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
  if (!wanted.length) return term.toLowerCase().includes(t.words.join(' ').toLowerCase());
  return wanted.every((w) => words.some((x) => x.slice(0, w.length) === w));
}

function stringMatches(t: SearchTerm, value: string): boolean {
  if (t.mode === 'match' && !t.keyword) return value === t.text.replace(/\\(["\\])/g, '$1');
  return termMatches(t, value);
}

function concreteMatches(v: Exclude<AttributeValue, { kind: 'expression' }>, x: number | string | boolean): boolean {
  if (v.kind === 'number') return typeof x === 'number' && num(x, v.operator, v.value);
  if (v.kind === 'boolean') return typeof x === 'boolean' && (x === v.value) === (v.operator === '=');
  return typeof x === 'string' && v.value.some((t) => stringMatches(t, x)) === (v.operator === '=');
}

// ---- random expressions ----------------------------------------------------------------------

function generator(ed: MemoryEdition, seed: number) {
  const rnd = seeded(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)];
  const all = ed.concepts.map((c) => c.sctid);
  const ref = (sctid: string): Expression => ({ type: 'concept', pos: 0, sctid });
  const tops = [TOY.finding, TOY.structure, TOY.substance, TOY.root, TOY.associatedWith];
  const ops: HierarchyOperator[] = ['descendantOf', 'descendantOrSelfOf', 'childOf', 'childOrSelfOf', 'ancestorOf', 'ancestorOrSelfOf', 'parentOf', 'parentOrSelfOf', 'top', 'bottom'];
  const cards: Array<Cardinality | undefined> = [undefined, undefined, { min: 0, max: 0 }, { min: 0, max: 1 }, { min: 1, max: 1 }, { min: 1 }, { min: 2 }, { min: 0 }];
  const term = (): SearchTerm =>
    rnd() < 0.7 ? { mode: 'match', keyword: rnd() < 0.5, text: pick(['heart', 'he', 'card', 'lung ed', 'PANADOL', 'colour', 'J45.9', 'old']), words: [] } : { mode: 'wild', text: '', segments: pick([['', 'itis'], ['c', 'r', ''], ['PANADOL'], ['', 'a', '']]) };
  const fixWords = (t: SearchTerm): SearchTerm => (t.mode === 'match' ? { ...t, words: t.text.split(' ') } : { ...t, text: t.segments.join('*') });
  const simple = (): Expression => (rnd() < 0.5 ? ref(pick(all)) : { type: 'hierarchy', pos: 0, operator: pick(ops), operand: ref(rnd() < 0.6 ? pick(tops) : pick(all)) });
  const attribute = (depth: number): Refinement => {
    const reverse = rnd() < 0.1;
    const name = pick<Expression>([ref(TOY.findingSite), ref(TOY.morphology), ref(TOY.causativeAgent), { type: 'hierarchy', pos: 0, operator: 'descendantOrSelfOf', operand: ref(TOY.associatedWith) }, { type: 'any', pos: 0 }, ref(TOY.strength), ref(TOY.tradeName), ref(TOY.inScheme)]);
    const k = rnd();
    let value: AttributeValue;
    if (k < 0.6) value = { kind: 'expression', operator: rnd() < 0.8 ? '=' : '!=', value: rnd() < 0.2 ? { type: 'any', pos: 0 } : depth > 0 && rnd() < 0.2 ? expr(depth - 1) : simple() };
    else if (k < 0.8) {
      const n = pick([1, 2.5, 500, 800, -3, 0]);
      value = { kind: 'number', operator: pick(['=', '!=', '<', '<=', '>', '>='] as const), value: n, text: String(n) };
    } else if (k < 0.9) value = { kind: 'string', operator: rnd() < 0.8 ? '=' : '!=', value: [fixWords(term())] };
    else value = { kind: 'boolean', operator: rnd() < 0.8 ? '=' : '!=', value: rnd() < 0.5 };
    const cardinality = pick(cards);
    return { type: 'attribute', pos: 0, reverse: reverse && value.kind === 'expression', name, value, ...(cardinality ? { cardinality } : {}) };
  };
  const refinement = (depth: number, inGroup: boolean): Refinement => {
    const k = rnd();
    if (depth > 0 && k < 0.25) return { type: rnd() < 0.5 ? 'refinementAnd' : 'refinementOr', pos: 0, operands: [refinement(depth - 1, inGroup), refinement(depth - 1, inGroup)] };
    if (!inGroup && depth > 0 && k < 0.5) {
      const cardinality = pick(cards);
      return { type: 'group', pos: 0, attributes: refinement(depth - 1, true), ...(cardinality ? { cardinality } : {}) };
    }
    return attribute(depth);
  };
  const descriptionFilter = (): DescriptionFilter => {
    const k = rnd();
    const operator = rnd() < 0.8 ? '=' : '!=';
    if (k < 0.35) return { type: 'term', pos: 0, operator, terms: [fixWords(term()), ...(rnd() < 0.3 ? [fixWords(term())] : [])] };
    if (k < 0.45) return { type: 'language', pos: 0, operator, codes: [pick(['en', 'sv'])] };
    if (k < 0.55) return { type: 'typeToken', pos: 0, operator, tokens: [pick(['fsn', 'syn', 'def'] as const)] };
    if (k < 0.7)
      return {
        type: 'dialect',
        pos: 0,
        operator,
        dialects: [{ alias: pick(['en-us', 'en-gb']), ...(rnd() < 0.4 ? { acceptability: { kind: 'tokens' as const, tokens: [pick(['prefer', 'accept'] as const)] } } : {}) }],
        ...(rnd() < 0.2 ? { acceptability: { kind: 'concepts' as const, concepts: [{ type: 'concept' as const, pos: 0, sctid: SCT.preferred }] } } : {}),
      };
    if (k < 0.8) return { type: 'active', pos: 0, operator, value: rnd() < 0.5 };
    if (k < 0.9) return { type: 'effectiveTime', pos: 0, operator: pick(['=', '!=', '<', '>='] as const), times: [pick([20200131, 20210731, 0])] };
    return { type: 'typeId', pos: 0, operator, value: { kind: 'set', concepts: [{ type: 'concept', pos: 0, sctid: SCT.fsn }, { type: 'concept', pos: 0, sctid: SCT.definition }] } };
  };
  const memberFilter = (): MemberFilter => {
    const k = rnd();
    if (k < 0.3) return { type: 'field', pos: 0, field: 'mapTarget', operator: rnd() < 0.8 ? '=' : '!=', value: { kind: 'string', value: [fixWords(term())] } };
    if (k < 0.5) return { type: 'field', pos: 0, field: 'mapGroup', operator: pick(['=', '!=', '<', '>='] as const), value: { kind: 'number', value: pick([1, 2]) } };
    if (k < 0.6) return { type: 'field', pos: 0, field: 'targetComponentId', operator: '=', value: { kind: 'expression', value: { type: 'hierarchy', pos: 0, operator: 'descendantOf', operand: ref(TOY.structure) } } };
    if (k < 0.7) return { type: 'field', pos: 0, field: 'mapAdvice', operator: '=', value: { kind: 'boolean', value: rnd() < 0.5 } };
    if (k < 0.85) return { type: 'active', pos: 0, operator: '=', value: rnd() < 0.5 };
    return { type: 'module', pos: 0, operator: rnd() < 0.5 ? '=' : '!=', value: { kind: 'expression', value: ref(TOY.core) } };
  };
  const expr = (depth: number): Expression => {
    if (depth <= 0) return simple();
    const k = rnd();
    if (k < 0.1) return simple();
    if (k < 0.2) return { type: 'hierarchy', pos: 0, operator: pick(ops), operand: expr(depth - 1) };
    if (k < 0.32) return { type: rnd() < 0.5 ? 'and' : 'or', pos: 0, operands: [expr(depth - 1), expr(depth - 1), ...(rnd() < 0.3 ? [expr(depth - 1)] : [])] };
    if (k < 0.4) return { type: 'minus', pos: 0, left: expr(depth - 1), right: expr(depth - 1) };
    if (k < 0.62) return { type: 'refined', pos: 0, focus: rnd() < 0.7 ? { type: 'hierarchy', pos: 0, operator: 'descendantOrSelfOf', operand: ref(pick([TOY.finding, TOY.substance])) } : expr(depth - 1), refinement: refinement(2, false) };
    if (k < 0.7) return { type: 'dotted', pos: 0, focus: expr(depth - 1), attribute: pick<Expression>([ref(TOY.findingSite), { type: 'hierarchy', pos: 0, operator: 'descendantOrSelfOf', operand: ref(TOY.associatedWith) }, { type: 'any', pos: 0 }]) };
    if (k < 0.8)
      return {
        type: 'filtered',
        pos: 0,
        focus: expr(depth - 1),
        filter: { kind: 'description', filters: [descriptionFilter(), ...(rnd() < 0.4 ? [descriptionFilter()] : [])] },
      };
    if (k < 0.86) {
      const filters = [
        pick<ConceptFilter>([
          { type: 'active', pos: 0, operator: '=', value: rnd() < 0.5 },
          { type: 'definitionStatusToken', pos: 0, operator: rnd() < 0.7 ? '=' : '!=', tokens: [pick(['primitive', 'defined'] as const)] },
          { type: 'module', pos: 0, operator: '=', value: { kind: 'set', concepts: [{ type: 'concept', pos: 0, sctid: TOY.otherModule }, { type: 'concept', pos: 0, sctid: '123456' }] } },
          { type: 'effectiveTime', pos: 0, operator: pick(['>', '<=', '='] as const), times: [20210731] },
          { type: 'definitionStatusId', pos: 0, operator: '=', value: { kind: 'expression', value: ref(SCT.defined) } },
        ]),
      ];
      return { type: 'filtered', pos: 0, focus: expr(depth - 1), filter: { kind: 'concept', filters } };
    }
    if (k < 0.94) {
      const map = rnd() < 0.5;
      const fields = map && rnd() < 0.4 ? { fields: pick<readonly string[] | '*'>([['targetComponentId'], '*', ['referencedComponentId', 'targetComponentId']]) } : {};
      return {
        type: 'memberOf',
        pos: 0,
        refsets: rnd() < 0.15 ? { type: 'any', pos: 0 } : ref(map ? TOY.mapRefset : TOY.simpleRefset),
        memberFilters: rnd() < 0.5 ? [[memberFilter(), ...(rnd() < 0.3 ? [memberFilter()] : [])]] : [],
        ...fields,
      };
    }
    return { type: 'history', pos: 0, focus: expr(depth - 1), ...(rnd() < 0.7 ? { profile: pick(['min', 'mod', 'max'] as const) } : rnd() < 0.5 ? { subset: ref(TOY.sameAs) } : {}) };
  };
  return expr;
}

// ---- tests -------------------------------------------------------------------------------------

const edition = toyEdition(7);
const graph = new MemoryGraph(edition);
const brute = new Brute(edition);

async function sctids(e: Expression | string, g = graph, options = {}): Promise<string[]> {
  const ids = await evaluateEcl(g, e, { ...options });
  return [...ids].map((i) => g.sctid(i)).sort();
}

function bruteIds(e: Expression | string): string[] {
  return [...brute.eval(typeof e === 'string' ? parseEcl(e) : e)].sort();
}

describe('ECL evaluator: the published examples agree with the brute force on the toy edition', () => {
  const examples = [
    '< 404684003 |clinical finding|',
    '<< 404684003 |clinical finding| : 363698007 |finding site| = << 123037004',
    '< 404684003 : { 363698007 = *, 116676008 = * }',
    '< 404684003 : [0..0] 363698007 = *',
    '< 404684003 : [2..*] { 363698007 = * }',
    '< 404684003 : 116676008 != << 123037004',
    '< 404684003 : [0..0] 116676008 != << 200010',
    '< 105590001 : R 246075003 = < 404684003',
    '< 105590001 : [2..*] R 246075003 = *',
    '< 404684003 . 363698007',
    '(< 404684003 : 246075003 = *) . << 47429007',
    '^ 700043003',
    '^ 447562003 {{ M mapTarget = "J45.9" }}',
    '^ [targetComponentId] 447562003 {{ M mapGroup >= #2 }}',
    '< 404684003 {{ term = "heart" }}',
    '< 404684003 {{ term = wild:"*itis" }} {{ dialect = en-gb (prefer) }}',
    '* {{ D language = sv }}',
    '< 404684003 {{ C definitionStatus = defined, moduleId = 31000003106 }}',
    '* {{ C active = 0 }}',
    '!!> (< 404684003 : 363698007 = *)',
    '!!< (< 404684003 : 363698007 = *)',
    '< 404684003 {{ + HISTORY }}',
    '^ 700043003 {{ + HISTORY-MIN }}',
    '< 105590001 : 1142135004 >= #500',
    '< 404684003 : { 1142136003 = "PANADOL", 1142135004 < #10 }',
    '* : 1142137007 = true',
  ];
  for (const text of examples) test(text, async () => assert.deepEqual(await sctids(text), bruteIds(text)));
});

describe('ECL evaluator: semantics pinned on a hand-made edition', () => {
  // finding F has two children: A (site S1 in group 1 with morphology M, site S2 ungrouped) and B (site S1 and morphology M in different groups)
  const hand = new MemoryGraph({
    concepts: [
      { sctid: TOY.root },
      { sctid: TOY.finding, parents: [TOY.root] },
      { sctid: TOY.structure, parents: [TOY.root] },
      { sctid: TOY.attribute, parents: [TOY.root] },
      { sctid: TOY.findingSite, parents: [TOY.attribute] },
      { sctid: TOY.morphology, parents: [TOY.attribute] },
      { sctid: '300001', parents: [TOY.structure] }, // S1
      { sctid: '300002', parents: ['300001'] }, // S2 below S1
      { sctid: '300003', parents: [TOY.structure] }, // M
      {
        sctid: '400001',
        parents: [TOY.finding],
        attributes: [
          [1, TOY.findingSite, '300001'],
          [1, TOY.morphology, '300003'],
          [0, TOY.findingSite, '300002'],
        ],
        descriptions: [{ sctid: '5000011', term: 'Heart attack', acceptability: { [TOY.enGb]: 'acceptable' } }],
      },
      {
        sctid: '400002',
        parents: [TOY.finding],
        attributes: [
          [1, TOY.findingSite, '300001'],
          [2, TOY.morphology, '300003'],
        ],
        descriptions: [{ sctid: '5000021', term: 'Cardiac infarct', acceptability: { [TOY.enUs]: 'preferred' } }],
      },
      { sctid: '400003', parents: ['400001', '400002'], descriptions: [{ sctid: '5000031', term: 'Attack of the heart', active: false }] },
      { sctid: '400009', active: false, parents: [TOY.finding] },
    ],
    refsets: { [TOY.simpleRefset]: [{ referencedComponentId: '400001' }, { referencedComponentId: '400009' }, { referencedComponentId: '400002', active: false }] },
    associations: [[TOY.sameAs, '400009', '400003']],
  });
  const cases: Array<[string, string[]]> = [
    ['< 404684003', ['400001', '400002', '400003']],
    ['<! 404684003', ['400001', '400002']],
    ['>! 400003', ['400001', '400002']],
    ['> 400003', [TOY.root, TOY.finding, '400001', '400002'].sort()],
    ['!!> (< 404684003)', ['400001', '400002']],
    ['!!< (< 404684003)', ['400003']],
    ['400009', ['400009']],
    ['400009 {{ + HISTORY }}', ['400009']],
    ['<< 400009', ['400009']],
    ['< 400009', []],
    ['400003 {{ + HISTORY-MIN }}', ['400003', '400009']],
    ['^ 700043003', ['400001', '400009']],
    ['^ 700043003 {{ M active = 0 }}', ['400002']],
    ['< 404684003 : { 363698007 = 300001, 116676008 = 300003 }', ['400001']],
    ['< 404684003 : 363698007 = 300001, 116676008 = 300003', ['400001', '400002']],
    ['< 404684003 : [2..2] 363698007 = << 300001', ['400001']],
    ['< 404684003 : [2..*] { 363698007 = * }', ['400001']],
    ['< 404684003 : [1..1] { 363698007 = * }', ['400002']],
    ['< 404684003 : 363698007 != 300001', ['400001']],
    ['< 404684003 : [0..0] 363698007 != << 300001', ['400001', '400002', '400003']],
    ['< 404684003 : [0..0] 116676008 = *', ['400003']],
    ['< 123037004 : R 363698007 = 400001', ['300001', '300002']],
    ['< 404684003 . 363698007', ['300001', '300002']],
    ['< 404684003 {{ term = "heart att" }}', ['400001']],
    ['< 404684003 {{ term = "att heart" }}', ['400001']],
    ['< 404684003 {{ term = "heart", active = 0 }}', ['400003']],
    ['< 404684003 {{ term = wild:"card*" }}', ['400002']],
    ['< 404684003 {{ term = wild:"*farc*" }}', ['400002']],
    ['< 404684003 {{ term = wild:"farc" }}', []],
    ['< 404684003 {{ dialect = en-gb }}', ['400001']],
    ['< 404684003 {{ dialect = en-gb (prefer) }}', []],
    ['< 404684003 {{ dialectId = 900000000000509007 (prefer) }}', ['400002']],
  ];
  for (const [text, want] of cases) test(text, async () => assert.deepEqual(await sctids(text, hand), want));

  test('a wildcard with many stars is matched piece by piece, not by backtracking', async () => {
    const long = new MemoryGraph({
      concepts: [
        { sctid: '100001', descriptions: [{ sctid: '1000011', term: 'a'.repeat(20000) }] },
        { sctid: '100002', descriptions: [{ sctid: '1000021', term: `${'a'.repeat(20000)}b` }] },
      ],
    });
    const pattern = `${'*a'.repeat(30)}*b`;
    assert.deepEqual(await sctids(`* {{ term = wild:"${pattern}" }}`, long), ['100002']);
    assert.deepEqual(await sctids('* {{ term = wild:"a*a" }}', long), ['100001']);
    assert.deepEqual(await sctids('* {{ term = "(" }}', long), []);
  });

  test('what an expression needs of the edition', () => {
    assert.deepEqual(eclNeeds(parseEcl('< 404684003 : 363698007 = *')), { descriptions: false, memberRows: false, history: false });
    assert.deepEqual(eclNeeds(parseEcl('< 404684003 {{ C active = 1 }}')), { descriptions: false, memberRows: false, history: false });
    assert.deepEqual(eclNeeds(parseEcl('< 404684003 : 363698007 = (* {{ term = "x" }})')), { descriptions: true, memberRows: false, history: false });
    assert.deepEqual(eclNeeds(parseEcl('^ 700043003 OR ^ [targetComponentId] 447562003')), { descriptions: false, memberRows: true, history: false });
    assert.deepEqual(eclNeeds(parseEcl('^ 700043003 {{ M active = 1 }} {{ + HISTORY-MIN }}')), { descriptions: false, memberRows: true, history: true });
  });

  test('unknown concepts select nothing and are reported', async () => {
    const e = parseEcl('< 404684003 OR 999999001 OR ^ 999999002');
    assert.deepEqual(unknownEclConcepts(hand, e), ['999999001', '999999002']);
    assert.deepEqual(await sctids(e, hand), ['400001', '400002', '400003']);
  });

  test('* is the active concepts, or all of them with substrate "all"', async () => {
    assert.deepEqual(await sctids('* {{ C active = false }}', hand), []);
    assert.deepEqual(await sctids('* {{ C active = false }}', hand, { substrate: 'all' }), ['400009']);
    assert.deepEqual(await sctids('* MINUS (* {{ C active = true }})', hand, { substrate: 'all' }), ['400009']);
  });
});

describe('ECL evaluator: random expressions agree with the brute force', () => {
  for (const seed of (process.env.ECL_SEEDS ?? '1,2,3,4,5,6,7,8').split(',').map(Number)) {
    test(`seed ${seed}: 60 expressions, and their printed form`, async () => {
      const gen = generator(edition, seed);
      for (let i = 0; i < 60; i++) {
        const e = gen(3);
        const text = printEcl(e);
        const want = bruteIds(e);
        assert.deepEqual(await sctids(e), want, text);
        assert.deepEqual(await sctids(text, graph, { cache: false }), want, `reparsed ${text}`);
      }
    });
  }

  test('other editions (seeds) too', async () => {
    for (const s of [11, 12, 13]) {
      const ed = toyEdition(s);
      const g = new MemoryGraph(ed);
      const b = new Brute(ed);
      const gen = generator(ed, s * 7);
      for (let i = 0; i < 40; i++) {
        const e = gen(3);
        assert.deepEqual(await sctids(e, g), [...b.eval(e)].sort(), printEcl(e));
      }
    }
  });

  test('the random expressions are not trivially empty', async () => {
    const gen = generator(edition, 99);
    let nonEmpty = 0;
    for (let i = 0; i < 100; i++) if ((await evaluateEcl(graph, gen(3))).length > 0) nonEmpty++;
    assert.ok(nonEmpty >= 40, `only ${nonEmpty} of 100 select something`);
  });
});

describe('ECL evaluator: bounds, cache and yielding', () => {
  // a chain of 60 000 concepts: << root visits every one
  const N = 60_000;
  const chain: MemoryConcept[] = [{ sctid: '100000' }];
  for (let i = 1; i < N; i++) chain.push({ sctid: String(100000 + i), parents: [String(100000 + i - 1)] });
  const big = new MemoryGraph({ concepts: chain });

  test('a budget too small throws the documented error', async () => {
    clearEclCache(big);
    await assert.rejects(evaluateEcl(big, '<< 100000', { budget: 1000 }), (e: unknown) => e instanceof EclTooCostlyError && e.message === 'ECL expression too costly to evaluate (more than 1000 steps, LATTICE_TX_ECL_MAX_STEPS)');
    assert.equal(ECL_DEFAULT_BUDGET, 20_000_000);
  });

  test('a hostile expression is stopped by the default budget', async () => {
    clearEclCache(big);
    // every operand differs, so nothing is cached: 400 × 60 000 visits
    const hostile = Array.from({ length: 400 }, (_, i) => `<< ${100000 + i}`).join(' OR ');
    await assert.rejects(evaluateEcl(big, hostile), EclTooCostlyError);
  });

  test('a cached result costs nothing the second time', async () => {
    clearEclCache(big);
    const first = await evaluateEcl(big, '<< 100000');
    assert.equal(first.length, N);
    const second = await evaluateEcl(big, '<<100000 /* same, spelled differently */', { budget: 10 });
    assert.equal(second, first);
    clearEclCache(big);
    await assert.rejects(evaluateEcl(big, '<< 100000', { budget: 10 }), EclTooCostlyError);
  });

  test('AND and OR operands in another order share the cache entry', async () => {
    clearEclCache(big);
    const a = await evaluateEcl(big, '(<< 100005) OR (<< 100000)');
    assert.equal(await evaluateEcl(big, '<< 100000 OR << 100005', { budget: 10 }), a);
  });

  test('hierarchy operators over a large set walk the edition once, not once per concept', async () => {
    // `< (* MINUS root)` and `<< (< root)`: the descendants of every concept. Per concept, a
    // chain of N has N²/2 descendants to gather (and each gathering had to allocate and sort);
    // walked once, N. The bound is well above N and far below N²/2.
    const n = 3_000;
    const concepts: MemoryConcept[] = [{ sctid: '100000' }];
    for (let i = 1; i < n; i++) concepts.push({ sctid: String(100000 + i), parents: [String(100000 + i - 1)] });
    const chain3k = new MemoryGraph({ concepts });
    const budget = 20 * n;
    assert.equal((await evaluateEcl(chain3k, '< (* MINUS 100000)', { budget, cache: false })).length, n - 2);
    assert.equal((await evaluateEcl(chain3k, '<< (< 100000)', { budget, cache: false })).length, n - 1);
    assert.equal((await evaluateEcl(chain3k, '< (< 100000)', { budget, cache: false })).length, n - 2);
  });

  test('a term filter counts each description against each search term', async () => {
    // 2 000 concepts with one description each, 500 search terms: a million tests.
    const concepts: MemoryConcept[] = Array.from({ length: 2_000 }, (_, i) => ({ sctid: String(200000 + i), descriptions: [{ sctid: `${i + 1}011`, term: `Concept ${i}` }] }));
    const described = new MemoryGraph({ concepts });
    const terms = Array.from({ length: 500 }, (_, i) => `"zz${i}"`).join(' ');
    await assert.rejects(evaluateEcl(described, `* {{ term = (${terms}) }}`, { budget: 200_000, cache: false }), EclTooCostlyError);
    // One term fits the same budget.
    assert.equal((await evaluateEcl(described, '* {{ term = "concept" }}', { budget: 200_000, cache: false })).length, 2_000);
  });

  test('a long evaluation yields to the event loop', async () => {
    clearEclCache(big);
    let ran = false;
    setImmediate(() => (ran = true));
    const ids = await evaluateEcl(big, '<< 100000 MINUS << 100002', { cache: false });
    assert.equal(ids.length, 2);
    assert.equal(ran, true);
  });

  test('a small evaluation does not need to yield', async () => {
    let ran = false;
    setImmediate(() => (ran = true));
    const ids = await evaluateEcl(big, '100001', { cache: false });
    assert.equal(ids.length, 1);
    assert.equal(ran, false);
  });
});
