import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { eclSelects } from '../ecl/evaluate.js';
import { MemoryGraph } from '../ecl/memory-graph.js';
import { ExpressionSyntaxError, checkExpression, displayExpression, eclSelectsCode, expressionProblemText, isPostcoordinated, parseExpression, printExpression, virtualConcept } from './expression.js';

function strip(e: unknown): unknown {
  return JSON.parse(JSON.stringify(e, (k, v: unknown) => (k === 'pos' ? undefined : v)));
}

describe('compositional grammar: parsing', () => {
  test('a focus concept with a grouped refinement', () => {
    assert.deepEqual(strip(parseExpression('128241005:{363698007=181268008}')), {
      focus: [{ sctid: '128241005' }],
      attributes: [],
      groups: [[{ name: { sctid: '363698007' }, value: { kind: 'concept', concept: { sctid: '181268008' } } }]],
    });
  });

  test('definition status, several focus concepts, terms, whitespace, ungrouped then groups', () => {
    const e = parseExpression(
      ' <<< 73211009 |Diabetes mellitus| + 271737000 |Anemia| :\n  246454002 |Occurrence| = 255407002 |Neonatal| ,\n  { 363698007 |Finding site| = 113331007 , 116676008 = 79654002 } { 363698007 = 39057004 } ',
    );
    assert.equal(e.definitionStatus, 'subtypeOf');
    assert.deepEqual(
      e.focus.map((f) => [f.sctid, f.term]),
      [
        ['73211009', 'Diabetes mellitus'],
        ['271737000', 'Anemia'],
      ],
    );
    assert.equal(e.attributes.length, 1);
    assert.deepEqual(
      e.groups.map((g) => g.length),
      [2, 1],
    );
    assert.equal(e.focus[1].pos, 36);
  });

  test('nested expressions, strings and numbers as values', () => {
    const e = parseExpression('=== 373873005 : { 127489000 = (105590001 : 1142135004 = #500.25), 1142136003 = "PANADOL \\"extra\\"", 1142137007 = #-3 }');
    assert.equal(e.definitionStatus, 'equivalentTo');
    const g = e.groups[0];
    assert.deepEqual(strip(g[0].value), {
      kind: 'expression',
      expression: { focus: [{ sctid: '105590001' }], attributes: [{ name: { sctid: '1142135004' }, value: { kind: 'number', value: 500.25, text: '500.25' } }], groups: [] },
    });
    assert.deepEqual(g[1].value, { kind: 'string', value: 'PANADOL "extra"' });
    assert.deepEqual(g[2].value, { kind: 'number', value: -3, text: '-3' });
  });

  test('the canonical form sorts and drops terms', () => {
    const a = parseExpression('128241005 |x| + 64572001 : { 363698007 = 181268008, 116676008 = 79654002 }, { 246075003 = 387517004 }');
    const b = parseExpression('===64572001+128241005:{246075003=387517004},{116676008=79654002,363698007=181268008}');
    assert.equal(printExpression(a), '64572001+128241005:{116676008=79654002,363698007=181268008},{246075003=387517004}');
    assert.equal(printExpression(a), printExpression(b));
    assert.equal(printExpression(parseExpression('<<< 64572001 : 1142136003 = "a\\"b"')), '<<<64572001:1142136003="a\\"b"');
    assert.deepEqual(strip(parseExpression(printExpression(a))), strip(parseExpression(printExpression(b))));
  });

  test('isPostcoordinated tells an expression from a plain code', () => {
    assert.equal(isPostcoordinated('128241005'), false);
    assert.equal(isPostcoordinated('128241005:{363698007=181268008}'), true);
    assert.equal(isPostcoordinated('128241005 |x|'), true);
  });
});

describe('compositional grammar: errors carry the offset', () => {
  const cases: Array<[string, number, string]> = [
    ['', 0, 'expected a concept reference (an SCTID: 6 to 18 digits, not starting with 0) at 0'],
    ['12345', 0, 'expected a concept reference (an SCTID: 6 to 18 digits, not starting with 0) at 0'],
    ['128241005:', 10, 'expected a concept reference (an SCTID: 6 to 18 digits, not starting with 0) at 10'],
    ['128241005:{363698007=181268008', 30, "expected ',' or '}' at 30"],
    ['128241005:363698007', 19, "expected '=' at 19"],
    ['128241005:363698007=', 20, "expected a concept reference, '(', '#' or '\"' at 20"],
    ['128241005 181268008', 10, "expected '+', ':' or the end of the expression at 10"],
    ['128241005:{363698007=181268008}, 116676008=79654002', 33, "expected '{' at 33"],
    ['128241005:363698007=(181268008', 30, "expected '+', ':' or ')' at 30"],
    ['128241005:363698007=#01', 22, "expected ',', '{' or the end of the expression at 22"],
    ['128241005:363698007=#-0', 22, 'expected a digit from 1 to 9 after the sign at 22'],
    ['128241005:363698007=#1.', 23, 'expected a digit after the decimal point at 23'],
    ['128241005:363698007=""', 21, 'expected a string between the quotes at 21'],
    ['128241005:363698007="abc', 24, "expected '\"' closing the string at 24"],
    ['128241005 |Inflammatory', 23, "expected '|' closing the term at 23"],
    ['== 128241005', 0, 'expected a concept reference (an SCTID: 6 to 18 digits, not starting with 0) at 0'],
    ['128241005 + ', 12, 'expected a concept reference (an SCTID: 6 to 18 digits, not starting with 0) at 12'],
  ];
  for (const [text, position, message] of cases)
    test(JSON.stringify(text), () => {
      assert.throws(
        () => parseExpression(text),
        (e: unknown) => e instanceof ExpressionSyntaxError && e.position === position && e.message === message,
        `${text}: ${(() => {
          try {
            parseExpression(text);
            return 'parsed';
          } catch (e) {
            return (e as Error).message;
          }
        })()}`,
      );
    });

  test('deep nesting is refused', () => {
    const deep = '128241005:363698007=('.repeat(30) + '181268008' + ')'.repeat(30);
    assert.throws(() => parseExpression(deep), (e: unknown) => e instanceof ExpressionSyntaxError && /^expression nested deeper than 20 at \d+$/.test(e.message));
  });
});

describe('compositional grammar: checking against an edition', () => {
  const graph = new MemoryGraph({
    concepts: [
      { sctid: '138875005' },
      { sctid: '410662002', parents: ['138875005'] },
      { sctid: '363698007', parents: ['410662002'] },
      { sctid: '1142135004', parents: ['410662002'] },
      { sctid: '404684003', parents: ['138875005'] },
      { sctid: '128241005', parents: ['404684003'] },
      { sctid: '123037004', parents: ['138875005'] },
      { sctid: '181268008', parents: ['123037004'] },
      { sctid: '181268009', active: false },
      { sctid: '106237007', parents: ['138875005'] },
      { sctid: '246090004', parents: ['106237007'] },
    ],
  });

  test('a valid expression has no problems', () => {
    assert.deepEqual(checkExpression(graph, parseExpression('128241005:{363698007=181268008, 1142135004=#5}')), []);
    assert.deepEqual(checkExpression(graph, parseExpression('128241005:246090004=181268008')), [], 'a linkage concept is an attribute');
  });

  test('an attribute root itself is not an attribute', () => {
    assert.deepEqual(checkExpression(graph, parseExpression('128241005:410662002=181268008')), [{ kind: 'not-attribute', sctid: '410662002', role: 'attribute', pos: 10 }]);
  });

  test('problems in words', () => {
    assert.equal(expressionProblemText({ kind: 'unknown', sctid: '240280071', role: 'value', pos: 0 }), 'Concept 240280071 not found');
    assert.equal(expressionProblemText({ kind: 'inactive', sctid: '181268009', role: 'value', pos: 0 }), 'Concept 181268009 is inactive');
    assert.equal(
      expressionProblemText({ kind: 'not-attribute', sctid: '24028007', role: 'attribute', pos: 0 }),
      'Concept 24028007 is not valid in this context (must be a descendent of one of 410662002,106237007)',
    );
  });

  test('the display: as written, with terms, without whitespace', () => {
    const terms: Record<string, string> = { '128241005': 'Inflammatory disease of liver', '363698007': 'Finding site', '181268008': 'Entire liver' };
    assert.equal(displayExpression(parseExpression('128241005 : { 363698007 = 181268008 }'), (s) => terms[s]), '128241005|Inflammatory disease of liver|:{363698007|Finding site|=181268008|Entire liver|}');
    assert.equal(
      displayExpression(parseExpression('<<< 181268008 + 128241005 |x| : 1142135004 = #5 , { 363698007 = (181268008 : 246090004 = "a\\"b") } { 363698007 = 999999001 }'), (s) => terms[s]),
      '<<<181268008|Entire liver|+128241005|Inflammatory disease of liver|:1142135004=#5,{363698007|Finding site|=(181268008|Entire liver|:246090004="a\\"b")},{363698007|Finding site|=999999001}',
    );
  });

  test('unknown, inactive and non-attribute concepts, in text order, nested ones too', () => {
    const e = parseExpression('128241005 + 999999001 : 181268008 = 181268009, 363698007 = (181268008 : 363698007 = 999999002)');
    assert.deepEqual(checkExpression(graph, e), [
      { kind: 'unknown', sctid: '999999001', role: 'focus', pos: 12 },
      { kind: 'not-attribute', sctid: '181268008', role: 'attribute', pos: 24 },
      { kind: 'inactive', sctid: '181268009', role: 'value', pos: 36 },
      { kind: 'unknown', sctid: '999999002', role: 'value', pos: 84 },
    ]);
  });

  test('without |Concept model attribute| in the edition, attribute names are only checked to exist', () => {
    const bare = new MemoryGraph({ concepts: [{ sctid: '128241005' }, { sctid: '181268008' }] });
    assert.deepEqual(checkExpression(bare, parseExpression('128241005:181268008=181268008')), []);
  });
});

describe('compositional grammar: an expression as a concept in ECL', () => {
  // invented concepts: structures 300001 > 300002, 300003; a disease hierarchy 400000 > 400010 (grouped site and morphology)
  const graph = new MemoryGraph({
    concepts: [
      { sctid: '138875005' },
      { sctid: '410662002', parents: ['138875005'] },
      { sctid: '363698007', parents: ['410662002'] },
      { sctid: '116676008', parents: ['410662002'] },
      { sctid: '600001', parents: ['410662002'] },
      { sctid: '1142135004', parents: ['410662002'] },
      { sctid: '123037004', parents: ['138875005'] },
      { sctid: '300001', parents: ['123037004'] },
      { sctid: '300002', parents: ['300001'] },
      { sctid: '300003', parents: ['123037004'] },
      { sctid: '600002', parents: ['138875005'] },
      { sctid: '600003', parents: ['138875005'] },
      { sctid: '600004', parents: ['138875005'] },
      { sctid: '404684003', parents: ['138875005'] },
      { sctid: '400000', parents: ['404684003'] },
      {
        sctid: '400010',
        parents: ['400000'],
        attributes: [
          [1, '363698007', '300001'],
          [1, '116676008', '600003'],
        ],
      },
    ],
    refsets: { '700043003': [{ referencedComponentId: '300001' }] },
  });
  const selects = async (ecl: string, expression: string): Promise<boolean> => {
    const v = virtualConcept(graph, parseExpression(expression));
    assert.ok(v, expression);
    return eclSelects(graph, ecl, v);
  };
  const cases: Array<[string, string, boolean]> = [
    ['<< 300001', '300001 : 600001 = 600002', true],
    ['< 300001', '300001 : 600001 = 600002', true],
    ['< 123037004', '300002 : 600001 = 600002', true],
    ['<! 300001', '300001 : 600001 = 600002', false],
    ['<<! 300001', '300001 : 600001 = 600002', false],
    ['>> 300001', '300001 : 600001 = 600002', false],
    ['> 300001', '300001 : 600001 = 600002', false],
    ['300001', '300001 : 600001 = 600002', false],
    ['*', '300001 : 600001 = 600002', true],
    ['* MINUS << 300001', '300001 : 600001 = 600002', false],
    ['* MINUS << 300003', '300001 : 600001 = 600002', true],
    ['^ 700043003', '300001 : 600001 = 600002', false],
    ['!!> (<< 300001)', '300001 : 600001 = 600002', false],
    ['< 400000 : 363698007 = << 300001', '400000 : 363698007 = 300002', true],
    ['< 400000 : 363698007 = << 300001', '400000 : 363698007 = 300003', false],
    ['< 400000 : [1..1] 363698007 = << 300001', '400000 : 363698007 = 300002', true],
    ['< 400000 : [1..1] 363698007 = << 300001', '400000 : { 363698007 = 300002 } { 363698007 = 300001 }', false],
    ['< 400000 : 363698007 = *', '400000 : 116676008 = 600003', false],
    ['< 400000 : { 363698007 = << 300001, 116676008 = 600003 }', '400000 : { 363698007 = 300001, 116676008 = 600003 }', true],
    ['< 400000 : { 363698007 = << 300001, 116676008 = 600003 }', '400000 : 363698007 = 300001, 116676008 = 600003', false],
    ['< 400000 : { [1..1] 363698007 = << 300001 }', '400000 : { 363698007 = 300001 }', true],
    // inherited from the focus concept: the site (its type is not refined), not the replaced morphology
    ['< 400000 : 363698007 = 300001', '400010 : 116676008 = 600004', true],
    ['< 400000 : 116676008 = 600003', '400010 : 116676008 = 600004', false],
    ['< 400000 : { 363698007 = 300001, 116676008 = 600003 }', '400010 : 600001 = 600002', true],
    // nested expressions as values
    ['< 400000 : 363698007 = << 300001', '400000 : 363698007 = (300002 : 600001 = 600002)', true],
    ['< 400000 : 363698007 = 300002', '400000 : 363698007 = (300002 : 600001 = 600002)', false],
    ['< 400000 : 363698007 = (< 300001 : 600001 = 600002)', '400000 : 363698007 = (300002 : 600001 = 600002)', true],
    ['< 400000 : 363698007 = (< 300001 : 600001 = 600003)', '400000 : 363698007 = (300002 : 600001 = 600002)', false],
    ['< 400000 : 363698007 = (<< 300003 OR (< 300001 : 600001 = *))', '400000 : 363698007 = (300002 : 600001 = 600002)', true],
    // concrete values and concept filters
    ['< 400000 : 1142135004 >= #500', '400000 : 1142135004 = #750', true],
    ['< 400000 : 1142135004 >= #500', '400000 : 1142135004 = #5', false],
    ['< 400000 {{ C definitionStatus = primitive }}', '<<< 400000 : 600001 = 600002', true],
    ['< 400000 {{ C definitionStatus = primitive }}', '=== 400000 : 600001 = 600002', false],
    ['< 400000 {{ C active = 1 }}', '400000 : 600001 = 600002', true],
    ['< 400000 {{ term = "x" }}', '400000 : 600001 = 600002', false],
  ];
  for (const [ecl, expression, want] of cases) test(`${ecl}  ∋?  ${expression}`, async () => assert.equal(await selects(ecl, expression), want));

  test('an expression with an unknown concept is no concept', () => {
    assert.equal(virtualConcept(graph, parseExpression('400000 : 363698007 = 999999001')), undefined);
  });

  test('eclSelectsCode: ids, expressions, unknown concepts and syntax errors', async () => {
    assert.deepEqual(await eclSelectsCode(graph, '<< 300001', '300002'), { kind: 'selected' });
    assert.deepEqual(await eclSelectsCode(graph, '<< 300001', '300003'), { kind: 'not-selected' });
    assert.deepEqual(await eclSelectsCode(graph, '<< 300001', '300002 |a term|'), { kind: 'selected' });
    assert.deepEqual(await eclSelectsCode(graph, '<< 300001', '300002 : 600001 = 600002'), { kind: 'selected' });
    assert.deepEqual(await eclSelectsCode(graph, '<! 300001', '300002 : 600001 = 600002'), { kind: 'not-selected' });
    assert.deepEqual(await eclSelectsCode(graph, '<< 300001', '999999001'), { kind: 'unknown', problems: [{ kind: 'unknown', sctid: '999999001', role: 'focus', pos: 0 }] });
    assert.deepEqual(await eclSelectsCode(graph, '<< 300001', '300002 : 300003 = 999999001'), {
      kind: 'unknown',
      problems: [
        { kind: 'not-attribute', sctid: '300003', role: 'attribute', pos: 9 },
        { kind: 'unknown', sctid: '999999001', role: 'value', pos: 18 },
      ],
    });
    const bad = await eclSelectsCode(graph, '<< 300001', '300002 :');
    assert.equal(bad.kind, 'syntax-error');
    assert.equal(bad.kind === 'syntax-error' && bad.error.message, 'expected a concept reference (an SCTID: 6 to 18 digits, not starting with 0) at 8');
  });

  test('real concepts are tested against the evaluated set', async () => {
    assert.equal(await eclSelects(graph, '< 400000 : 363698007 = << 300001', graph.resolve('400010')!), true);
    assert.equal(await eclSelects(graph, '< 400000 : 363698007 = << 300003', graph.resolve('400010')!), false);
  });
});
