import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { EclSyntaxError, MAX_ECL_DEPTH, parseEcl, parseEclCached } from './parser.js';
import { printEcl } from './print.js';

const EXAMPLES = join(import.meta.dirname, '../../../../../test/fixtures/ecl-examples');

/** The tree without positions and terms (what printing keeps). */
function shape(e: unknown): unknown {
  return JSON.parse(JSON.stringify(e, (k, v: unknown) => (k === 'pos' || k === 'term' ? undefined : v)));
}

function examples(): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const dir of readdirSync(EXAMPLES).sort()) {
    if (!/^\d/.test(dir)) continue;
    for (const f of readdirSync(join(EXAMPLES, dir)).sort()) out.push([`${dir}/${f}`, readFileSync(join(EXAMPLES, dir, f), 'utf8')]);
  }
  return out;
}

describe('ECL parser: the published examples', () => {
  const all = examples();
  test('the corpus has the 121 examples', () => {
    assert.equal(all.length, 121);
  });
  for (const [name, text] of all) {
    test(name, () => {
      const tree = parseEcl(text);
      const printed = printEcl(tree);
      assert.deepEqual(shape(parseEcl(printed)), shape(tree), printed);
      assert.equal(printEcl(parseEcl(printed)), printed);
    });
  }
});

function expectError(text: string, position: number, message: string): void {
  assert.throws(
    () => parseEcl(text),
    (e: unknown) => {
      assert.ok(e instanceof EclSyntaxError, String(e));
      assert.equal(e.message, message);
      assert.equal(e.position, position);
      return true;
    },
  );
}

describe('ECL parser: errors carry the offset and what was expected', () => {
  const cases: Array<[string, number, string]> = [
    ['', 0, "expected a concept reference, '(' or '*' at 0"],
    ['AND', 0, "expected a concept reference, '(' or '*' at 0"],
    ['< 404684003 |Clinical', 21, "expected '|' closing the term at 21"],
    ['< 404684003 ||', 13, 'expected a term between the bars at 13'],
    ['< 404684003 AND', 15, "expected a concept reference, '(' or '*' at 15"],
    ['< 404684003 AND(< 123456)', 15, 'expected whitespace after AND at 15'],
    ['< 404684003 AND < 123456 OR < 234567', 25, 'expected parentheses: AND, OR and MINUS cannot be mixed at 25'],
    ['< 404684003 , < 123456 MINUS < 234567', 23, 'expected parentheses: AND, OR and MINUS cannot be mixed at 23'],
    ['<< 404684003 MINUS 123456 MINUS 1234567', 26, 'expected parentheses: MINUS takes two operands at 26'],
    ['< 12345', 2, 'expected a concept reference (an SCTID: 6 to 18 digits, not starting with 0) at 2'],
    ['< 0123456', 2, 'expected a concept reference (an SCTID: 6 to 18 digits, not starting with 0) at 2'],
    ['< 1234567890123456789', 2, 'expected a concept reference (an SCTID: 6 to 18 digits, not starting with 0) at 2'],
    ['404684003 :', 11, "expected a concept reference, '(' or '*' at 11"],
    ['< 404684003 xyz', 12, "expected ':', '.', AND, OR, MINUS or the end of the expression at 12"],
    ['< 404684003 AND < 123456 )', 25, 'expected the end of the expression at 25'],
    ['(< 404684003', 12, "expected ':', '.', AND, OR, MINUS or ')' at 12"],
    ['(< 404684003 OR < 123456', 24, "expected ')' at 24"],
    ['< 404684003 : 363698007 = ', 26, "expected a concept reference, '(' or '*' at 26"],
    ['< 404684003 : 363698007 123456', 24, "expected a comparison operator ('=', '!=', '<', '<=', '>' or '>=') at 24"],
    ['< 404684003 : 363698007 << 123456', 25, "expected '#' and a number after '<', '<=', '>' or '>=' at 25"],
    ['< 404684003 : 363698007 = #01', 28, 'expected the end of the expression at 28'],
    ['< 404684003 : 363698007 = #1.', 29, 'expected a digit after the decimal point at 29'],
    ['< 404684003 : [2..1] 363698007 = *', 18, 'expected a maximum cardinality not below the minimum at 18'],
    ['< 404684003 : [1-2] 363698007 = *', 16, "expected '..' at 16"],
    ['< 404684003 : [1..2 363698007 = *', 19, "expected ']' at 19"],
    ['< 404684003 : { 363698007 = * ', 30, "expected AND, OR, ',' or '}' at 30"],
    ['< 404684003 : { 363698007 = * AND 116676008 = * OR 42752001 = * }', 48, 'expected parentheses: AND and OR cannot be mixed at 48'],
    ['< 404684003 : 363698007 = * OR { 116676008 = * } AND 42752001 = *', 49, 'expected parentheses: AND and OR cannot be mixed at 49'],
    ['< 404684003 : { { 363698007 = * } }', 16, "expected a concept reference, '(' or '*' at 16"],
    ['/* x ', 5, "expected '*/' closing the comment at 5"],
    ['< 404684003 {{ term = "" }}', 23, 'expected a search term between the quotes at 23'],
    ['< 404684003 {{ term = "heart }}', 31, "expected '\"' closing the search term at 31"],
    ['< 404684003 {{ term = heart }}', 22, 'expected a search term (\'"…"\', \'match:"…"\' or \'wild:"…"\') at 22'],
    ['< 404684003 {{ term = "a\\b" }}', 24, "expected '\\\"' or '\\\\' at 24"],
    ['< 404684003 {{ foo = "x" }}', 15, 'expected a description filter (term, language, type, typeId, dialect, dialectId, moduleId, effectiveTime, active or id) at 15'],
    ['< 404684003 {{ term = "x" ', 26, "expected ',' or '}}' at 26"],
    ['< 404684003 {{ term ~ "x" }}', 20, "expected '=' or '!=' at 20"],
    ['< 404684003 {{ language = eng }}', 26, 'expected a two-letter language code at 26'],
    ['< 404684003 {{ type = name }}', 22, "expected 'syn', 'fsn' or 'def' at 22"],
    ['< 404684003 {{ C definitionStatus = maybe }}', 36, "expected 'primitive' or 'defined' at 36"],
    ['< 404684003 {{ C term = "x" }}', 17, 'expected a concept filter (definitionStatus, definitionStatusId, moduleId, effectiveTime or active) at 17'],
    ['< 404684003 {{ C active = yes }}', 26, "expected '1', '0', 'true' or 'false' at 26"],
    ['< 404684003 {{ C effectiveTime >= "20201301" }}', 34, 'expected a time (\'"yyyymmdd"\') at 34'],
    ['< 404684003 {{ M active = 1 }}', 12, "expected a description filter, a concept filter or a history supplement ('{{ M … }}' follows '^ refset' directly) at 12"],
    ['< 404684003 {{ + HISTORY-ALL }}', 25, "expected 'MIN', 'MOD' or 'MAX' at 25"],
    ['< 404684003 {{ + HIST }}', 17, "expected 'HISTORY' at 17"],
    ['^ [mapTarget 447562003', 13, "expected ',' or ']' at 13"],
    ['< 404684003 {{ dialect = (en-gb (maybe)) }}', 33, "expected 'accept' or 'prefer' at 33"],
    ['< 404684003 : [x..2] 363698007 = *', 15, 'expected a minimum cardinality (a whole number) at 15'],
    ['< 404684003 : [1..1234567890] 363698007 = *', 18, "expected a maximum cardinality (a whole number or '*') below 1000000000 at 18"],
    ['"LOINC#54486-6', 14, "expected '\"' closing the alternate identifier at 14"],
    ['LOINC#', 6, 'expected an alternate identifier code at 6'],
    ['^ [] 447562003', 3, "expected a refset field name or '*' at 3"],
    ['< 404684003 {{ term = ("a""b") }}', 26, "expected whitespace or ')' at 26"],
    ['< 404684003 {{ dialect = 1 }}', 25, 'expected a dialect alias (such as en-gb) at 25'],
    ['< 404684003 : 363698007 = #x', 27, 'expected a number at 27'],
    ['< 404684003 {{ id = 12 }}', 20, 'expected a description id (an SCTID: 6 to 18 digits, not starting with 0) at 20'],
    ['< 404684003 {{ + HISTORY ( 123456 }}', 34, "expected ')' at 34"],
    ['< 404684003 {{ term = wild:"a\\b" }}', 29, "expected '\\\"', '\\\\' or '\\*' at 29"],
    ['^ 447562003 {{ M mapTarget ~ "x" }}', 27, "expected a comparison operator ('=', '!=', '<', '<=', '>' or '>=') at 27"],
    ['^ 447562003 {{ M mapGroup < "x" }}', 28, 'expected a time (\'"yyyymmdd"\') at 28'],
    ['^ 447562003 {{ M }}', 17, 'expected a member filter (moduleId, effectiveTime, active or a refset field name) at 17'],
  ];
  for (const [text, position, message] of cases) test(JSON.stringify(text), () => expectError(text, position, message));

  test('nesting deeper than the bound is refused, not a stack overflow', () => {
    const deep = '('.repeat(MAX_ECL_DEPTH + 5) + '404684003' + ')'.repeat(MAX_ECL_DEPTH + 5);
    assert.throws(() => parseEcl(deep), (e: unknown) => e instanceof EclSyntaxError && /^expression nested deeper than 50 at \d+$/.test(e.message));
    const fine = '('.repeat(20) + '404684003' + ')'.repeat(20);
    assert.deepEqual(shape(parseEcl(fine)), { type: 'concept', sctid: '404684003' });
  });
});

describe('ECL parser: trees', () => {
  const p = (s: string): unknown => shape(parseEcl(s));

  test('every hierarchy operator', () => {
    const ops: Array<[string, string]> = [
      ['<', 'descendantOf'],
      ['<<', 'descendantOrSelfOf'],
      ['<!', 'childOf'],
      ['<<!', 'childOrSelfOf'],
      ['>', 'ancestorOf'],
      ['>>', 'ancestorOrSelfOf'],
      ['>!', 'parentOf'],
      ['>>!', 'parentOrSelfOf'],
      ['!!>', 'top'],
      ['!!<', 'bottom'],
    ];
    for (const [sym, operator] of ops) {
      assert.deepEqual(p(`${sym}404684003`), { type: 'hierarchy', operator, operand: { type: 'concept', sctid: '404684003' } }, sym);
      assert.deepEqual(p(`${sym} /* c */ 404684003 |x|`), { type: 'hierarchy', operator, operand: { type: 'concept', sctid: '404684003' } }, sym);
    }
  });

  test('keywords are case-insensitive; comma is a conjunction', () => {
    const a = p('< 404684003 and < 123456 AnD 234567');
    assert.deepEqual(a, p('< 404684003 , < 123456, 234567'));
    assert.equal((a as { type: string }).type, 'and');
    assert.equal((p('404684003 oR 123456') as { type: string }).type, 'or');
    assert.equal((p('404684003 minus 123456') as { type: string }).type, 'minus');
  });

  test('member of with field selection and member filters', () => {
    assert.deepEqual(p('^ [targetComponentId] 900000000000527005 {{ M referencedComponentId = 67415000 }}'), {
      type: 'memberOf',
      refsets: { type: 'concept', sctid: '900000000000527005' },
      fields: ['targetComponentId'],
      memberFilters: [[{ type: 'field', field: 'referencedComponentId', operator: '=', value: { kind: 'expression', value: { type: 'concept', sctid: '67415000' } } }]],
    });
    assert.deepEqual(p('^[*]123456'), { type: 'memberOf', refsets: { type: 'concept', sctid: '123456' }, fields: '*', memberFilters: [] });
    assert.deepEqual(p('<< ^ 123456'), { type: 'hierarchy', operator: 'descendantOrSelfOf', operand: { type: 'memberOf', refsets: { type: 'concept', sctid: '123456' }, memberFilters: [] } });
  });

  test('refinement: attribute sets bind before the refinement operator, as the grammar has it', () => {
    const r = p('< 404684003 : 363698007 = * OR 116676008 = * AND 42752001 = *') as { refinement: { type: string; operands: Array<{ type: string }> } };
    assert.equal(r.refinement.type, 'refinementAnd');
    assert.deepEqual(
      r.refinement.operands.map((o) => o.type),
      ['refinementOr', 'attribute'],
    );
    const g = p('< 404684003 : { 363698007 = * } OR 116676008 = *, 42752001 = *') as { refinement: { type: string; operands: Array<{ type: string }> } };
    assert.equal(g.refinement.type, 'refinementOr');
    assert.deepEqual(
      g.refinement.operands.map((o) => o.type),
      ['group', 'refinementAnd'],
    );
  });

  test('attributes: cardinality, reverse flag, concrete values, parenthesised names', () => {
    const a = (s: string) => (p(`< 404684003 : ${s}`) as { refinement: unknown }).refinement;
    assert.deepEqual(a('[0..*] R 363698007 != << 123456'), {
      type: 'attribute',
      cardinality: { min: 0 },
      reverse: true,
      name: { type: 'concept', sctid: '363698007' },
      value: { kind: 'expression', operator: '!=', value: { type: 'hierarchy', operator: 'descendantOrSelfOf', operand: { type: 'concept', sctid: '123456' } } },
    });
    assert.deepEqual(a('363698007 <= #-1.50'), { type: 'attribute', reverse: false, name: { type: 'concept', sctid: '363698007' }, value: { kind: 'number', operator: '<=', value: -1.5, text: '-1.50' } });
    assert.deepEqual(a('363698007 = FALSE'), { type: 'attribute', reverse: false, name: { type: 'concept', sctid: '363698007' }, value: { kind: 'boolean', operator: '=', value: false } });
    assert.deepEqual(a('363698007 != ("a b" wild:"x\\*y*")'), {
      type: 'attribute',
      reverse: false,
      name: { type: 'concept', sctid: '363698007' },
      value: {
        kind: 'string',
        operator: '!=',
        value: [
          { mode: 'match', keyword: false, text: 'a b', words: ['a', 'b'] },
          { mode: 'wild', text: 'x\\*y*', segments: ['x*y', ''] },
        ],
      },
    });
    assert.deepEqual(a('(<< 123456 MINUS 234567) = *'), {
      type: 'attribute',
      reverse: false,
      name: { type: 'minus', left: { type: 'hierarchy', operator: 'descendantOrSelfOf', operand: { type: 'concept', sctid: '123456' } }, right: { type: 'concept', sctid: '234567' } },
      value: { kind: 'expression', operator: '=', value: { type: 'any' } },
    });
    assert.deepEqual(a('(363698007 = *)'), { type: 'attribute', reverse: false, name: { type: 'concept', sctid: '363698007' }, value: { kind: 'expression', operator: '=', value: { type: 'any' } } });
  });

  test('filters: blocks in order, explicit and implicit D, acceptability, history', () => {
    assert.deepEqual(p('< 404684003 {{ dialectId = (999001261000000100 (prefer) 900000000000508004) (accept) }}'), {
      type: 'filtered',
      focus: { type: 'hierarchy', operator: 'descendantOf', operand: { type: 'concept', sctid: '404684003' } },
      filter: {
        kind: 'description',
        filters: [
          {
            type: 'dialect',
            operator: '=',
            dialects: [{ concept: { type: 'concept', sctid: '999001261000000100' }, acceptability: { kind: 'tokens', tokens: ['prefer'] } }, { concept: { type: 'concept', sctid: '900000000000508004' } }],
            acceptability: { kind: 'tokens', tokens: ['accept'] },
          },
        ],
      },
    });
    assert.deepEqual(p('* {{ D dialect = en-gb }}'), p('* {{ dialect = EN-GB }}'));
    assert.deepEqual(p('* {{ c active = true }}'), p('* {{ C active = 1 }}'));
    assert.deepEqual(p('404684003 {{ + HISTORY_max }}'), { type: 'history', focus: { type: 'concept', sctid: '404684003' }, profile: 'max' });
    assert.deepEqual(p('404684003 {{ +HISTORY (900000000000527005) }}'), { type: 'history', focus: { type: 'concept', sctid: '404684003' }, subset: { type: 'concept', sctid: '900000000000527005' } });
    assert.deepEqual(p('* {{ C effectiveTime >= ("20200131" "") }}'), {
      type: 'filtered',
      focus: { type: 'any' },
      filter: { kind: 'concept', filters: [{ type: 'effectiveTime', operator: '>=', times: [20200131, 0] }] },
    });
  });

  test('alternate identifiers, quoted and bare', () => {
    assert.deepEqual(p('<< LOINC#54486-6 |x|'), { type: 'hierarchy', operator: 'descendantOrSelfOf', operand: { type: 'alternateIdentifier', scheme: 'LOINC', code: '54486-6' } });
    assert.deepEqual(p('"ICD-10#J45.9"'), { type: 'alternateIdentifier', scheme: 'ICD-10', code: 'J45.9' });
  });
});

describe('ECL parser: mutated examples', () => {
  test('every mutation parses to a stable tree or fails with an EclSyntaxError inside the text', () => {
    // a small seeded generator: the same mutations on every run
    let seed = 12345;
    const rnd = () => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed / 0x80000000;
    };
    const alphabet = ['(', ')', '{', '}', '{{', '}}', ':', ',', '.', '<', '>', '!', '^', '*', '=', '#', '"', '|', ' ', 'AND ', 'OR ', 'MINUS ', 'R ', '[1..*]', '1', '0', 'x', '/*', '*/', '+', '-', '\\'];
    let parsed = 0;
    let failed = 0;
    for (const [, text] of examples()) {
      for (let i = 0; i < 40; i++) {
        let t = text;
        const edits = 1 + Math.floor(rnd() * 3);
        for (let k = 0; k < edits; k++) {
          const at = Math.floor(rnd() * (t.length + 1));
          const r = rnd();
          if (r < 0.4) t = t.slice(0, at) + t.slice(at + 1);
          else if (r < 0.8) t = t.slice(0, at) + alphabet[Math.floor(rnd() * alphabet.length)] + t.slice(at);
          else t = t.slice(0, at) + t.slice(at, at + 5).split('').reverse().join('') + t.slice(at + 5);
        }
        try {
          const tree = parseEcl(t);
          const printed = printEcl(tree);
          assert.deepEqual(shape(parseEcl(printed)), shape(tree), `${t} → ${printed}`);
          parsed++;
        } catch (e) {
          if (!(e instanceof EclSyntaxError)) throw new Error(`${JSON.stringify(t)}: ${String(e)}`);
          assert.ok(e.position >= 0 && e.position <= t.length, `${JSON.stringify(t)}: ${e.message}`);
          assert.match(e.message, / at \d+$|characters$/);
          failed++;
        }
      }
    }
    assert.ok(parsed > 200 && failed > 200, `parsed ${parsed}, failed ${failed}`);
  });
});

describe('ECL parser: the parse cache', () => {
  test('a text is parsed once; errors are not kept', () => {
    const a = parseEclCached('< 404684003 : 363698007 = *');
    assert.equal(parseEclCached('< 404684003 : 363698007 = *'), a);
    assert.notEqual(parseEclCached('< 404684003 : 363698007 = * '), a);
    assert.deepEqual(shape(parseEclCached('< 404684003 : 363698007 = * ')), shape(a));
    assert.throws(() => parseEclCached('< 404684003 :'), EclSyntaxError);
    assert.throws(() => parseEclCached('< 404684003 :'), EclSyntaxError);
  });
});
