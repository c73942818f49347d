import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { CodeSystem, OperationOutcome, Parameters, ParametersParameter, Resource, ValueSet, ValueSetExpansionContains } from '@medplum/fhirtypes';
import { drivers, ooText, startServer, type ApiResponse, type TestServer } from './harness.js';

/**
 * ValueSet/$validate-code, CodeSystem/$validate-code and ValueSet/$expand (docs/terminology.md#valueset-validate-code,
 * §5.3, §5.5): every filter operator, nested value sets, excludes, inactive and abstract rules,
 * displays, paging, and bad input (unknown value sets and systems, cycles, hostile regexes,
 * huge codeable concepts) — never a 5xx.
 */

const CS = 'http://example.org/fhir/CodeSystem/zoo';

const ZOO: CodeSystem = {
  resourceType: 'CodeSystem',
  id: 'vs-zoo',
  url: CS,
  version: '2.0.0',
  name: 'Zoo',
  status: 'active',
  content: 'complete',
  language: 'en',
  property: [
    { code: 'colour', type: 'string' },
    { code: 'notSelectable', uri: 'http://hl7.org/fhir/concept-properties#notSelectable', type: 'boolean' },
    { code: 'status', uri: 'http://hl7.org/fhir/concept-properties#status', type: 'code' },
  ],
  concept: [
    {
      code: 'animal',
      display: 'Animal',
      property: [{ code: 'notSelectable', valueBoolean: true }],
      concept: [
        {
          code: 'mammal',
          display: 'Mammal',
          concept: [
            { code: 'dog', display: 'Dog', designation: [{ language: 'de', value: 'Hund' }], property: [{ code: 'colour', valueString: 'brown' }] },
            { code: 'cat', display: 'Cat', property: [{ code: 'colour', valueString: 'black' }] },
          ],
        },
        { code: 'bird', display: 'Bird', concept: [{ code: 'penguin', display: 'Emperor penguin' }] },
      ],
    },
    { code: 'dodo', display: 'Dodo', property: [{ code: 'status', valueCode: 'retired' }] },
  ],
};

const vs = (id: string, compose: ValueSet['compose'], extra: Partial<ValueSet> = {}): ValueSet => ({
  resourceType: 'ValueSet',
  id,
  url: `http://example.org/fhir/ValueSet/${id}`,
  version: '1',
  status: 'active',
  compose,
  ...extra,
});
const inc = (filter: Array<{ property: string; op: string; value: string }>) => ({ include: [{ system: CS, filter }] }) as ValueSet['compose'];

/** Value sets and the codes each one contains (of animal, mammal, dog, cat, bird, penguin, dodo). */
const CASES: Array<[ValueSet, string[]]> = [
  [vs('f-eq', inc([{ property: 'concept', op: '=', value: 'cat' }])), ['cat']],
  [vs('f-isa', inc([{ property: 'concept', op: 'is-a', value: 'mammal' }])), ['mammal', 'dog', 'cat']],
  [vs('f-desc', inc([{ property: 'concept', op: 'descendent-of', value: 'mammal' }])), ['dog', 'cat']],
  [vs('f-isnota', inc([{ property: 'concept', op: 'is-not-a', value: 'mammal' }])), ['animal', 'bird', 'penguin', 'dodo']],
  [vs('f-regex', inc([{ property: 'code', op: 'regex', value: 'd.*' }])), ['dog', 'dodo']],
  [vs('f-in', inc([{ property: 'concept', op: 'in', value: 'dog,penguin' }])), ['dog', 'penguin']],
  [vs('f-notin', inc([{ property: 'concept', op: 'not-in', value: 'dog,penguin' }])), ['animal', 'mammal', 'cat', 'bird', 'dodo']],
  [vs('f-gen', inc([{ property: 'concept', op: 'generalizes', value: 'dog' }])), ['animal', 'mammal', 'dog']],
  [vs('f-exists', inc([{ property: 'colour', op: 'exists', value: 'true' }])), ['dog', 'cat']],
  [vs('f-prop', inc([{ property: 'colour', op: '=', value: 'black' }])), ['cat']],
  [vs('f-and', inc([{ property: 'concept', op: 'is-a', value: 'animal' }, { property: 'colour', op: 'regex', value: 'b.*n' }])), ['dog']],
  [vs('enum', { include: [{ system: CS, concept: [{ code: 'dog' }, { code: 'unicorn' }] }] }), ['dog']],
  [vs('whole', { include: [{ system: CS }] }), ['animal', 'mammal', 'dog', 'cat', 'bird', 'penguin', 'dodo']],
  [vs('exclude', { include: [{ system: CS }], exclude: [{ system: CS, filter: [{ property: 'concept', op: 'is-a', value: 'mammal' }] }] }), ['animal', 'bird', 'penguin', 'dodo']],
  [vs('active', { inactive: false, include: [{ system: CS }] }), ['animal', 'mammal', 'dog', 'cat', 'bird', 'penguin']],
  [
    vs('nested', {
      include: [{ system: CS, valueSet: ['http://example.org/fhir/ValueSet/f-isa'], filter: [{ property: 'colour', op: 'exists', value: 'true' }] }],
    }),
    ['dog', 'cat'],
  ],
  [vs('nested-only', { include: [{ valueSet: ['http://example.org/fhir/ValueSet/f-isa', 'http://example.org/fhir/ValueSet/f-regex'] }] }), ['dog']],
  [
    { resourceType: 'ValueSet', id: 'expanded', url: 'http://example.org/fhir/ValueSet/expanded', status: 'active', expansion: { timestamp: '2024-01-01T00:00:00Z', contains: [{ system: CS, code: 'cat', display: 'Cat' }] } },
    ['cat'],
  ],
];
const ALL = ['animal', 'mammal', 'dog', 'cat', 'bird', 'penguin', 'dodo'];

/** An out-parameter of a Parameters body, by name. */
/** The codes of a (nested) expansion, depth first. */
function codesOf(contains: ValueSetExpansionContains[] | undefined): string[] {
  return (contains ?? []).flatMap((c) => [c.code as string, ...codesOf(c.contains)]);
}

/** A nested expansion as `code(children…)` text, e.g. `animal(mammal(dog cat))`. */
function tree(contains: ValueSetExpansionContains[] | undefined): string {
  return (contains ?? []).map((c) => (c.contains ? `${c.code}(${tree(c.contains)})` : c.code)).join(' ');
}

function param(body: Parameters | undefined, name: string): ParametersParameter | undefined {
  return body?.parameter?.find((x) => x.name === name);
}

/** The value (`resource` or `value[x]`) of an out-parameter of a Parameters body, by name. */
function out(body: Parameters | undefined, name: string): unknown {
  const p = param(body, name);
  return p && (p.resource ?? Object.entries(p).find(([k]) => k.startsWith('value'))?.[1]);
}

/** The `issues` out-parameter (an OperationOutcome) of a $validate-code answer. */
function issues(body: Parameters | undefined): OperationOutcome | undefined {
  const resource = param(body, 'issues')?.resource;
  return resource?.resourceType === 'OperationOutcome' ? resource : undefined;
}

function expectOO(res: ApiResponse, status: number, code: string, text: string): void {
  assert.equal(res.status, status, res.text);
  assert.equal(res.body.issue[0].code, code, res.text);
  assert.equal(ooText(res.body), text);
}

for (const driver of drivers) {
  describe(`terminology: value sets (${driver})`, () => {
    let server: TestServer;
    const put = async (r: Resource) => {
      const res = await server.fhir('PUT', `/${r.resourceType}/${r.id}`, { body: r });
      assert.ok(res.status === 200 || res.status === 201, res.text);
    };
    const validate = (url: string, code: string, extra = '') =>
      server.fhir('GET', `/ValueSet/$validate-code?url=${encodeURIComponent(url)}&system=${encodeURIComponent(CS)}&code=${code}${extra}`);
    const post = (path: string, parameter: unknown[]) => server.fhir('POST', path, { body: { resourceType: 'Parameters', parameter } });

    before(async () => {
      server = await startServer(driver);
      await put(ZOO);
      for (const [v] of CASES) await put(v);
    });
    after(() => server.stop());

    for (const [v, members] of CASES) {
      test(`membership: ${v.id} contains exactly ${members.join(', ')}`, async () => {
        for (const code of ALL) {
          const res = await validate(v.url as string, code);
          assert.equal(res.status, 200, res.text);
          assert.equal(out(res.body, 'result'), members.includes(code), `${v.id} ${code}: ${param(res.body, 'message')?.valueString}`);
        }
      });

      test(`expansion: ${v.id} lists exactly ${members.join(', ')}`, async () => {
        const res = await server.fhir('GET', `/ValueSet/$expand?url=${encodeURIComponent(v.url as string)}`);
        assert.equal(res.status, 200, res.text);
        assert.equal(res.body.resourceType, 'ValueSet');
        assert.equal(res.body.expansion.total, members.length);
        assert.deepEqual(codesOf(res.body.expansion.contains).sort(), [...members].sort());
      });
    }

    test('validate-code answers result, display, code, system, version in that order', async () => {
      const res = await validate('http://example.org/fhir/ValueSet/whole', 'dog');
      assert.deepEqual(res.body.parameter.map((p: ParametersParameter) => p.name), ['result', 'display', 'code', 'system', 'version']);
      assert.equal(out(res.body, 'display'), 'Dog');
      assert.equal(out(res.body, 'version'), '2.0.0');
    });

    test('a code outside the value set is 200 with result false, a message and issues', async () => {
      const res = await validate('http://example.org/fhir/ValueSet/f-isa', 'penguin');
      assert.equal(res.status, 200);
      assert.equal(out(res.body, 'result'), false);
      assert.equal(
        out(res.body, 'message'),
        `The provided code '${CS}#penguin' was not found in the value set 'http://example.org/fhir/ValueSet/f-isa|1'`,
      );
      const issue = issues(res.body)?.issue[0];
      assert.equal(issue?.code, 'code-invalid');
      assert.deepEqual(issue?.details?.coding, [{ system: 'http://hl7.org/fhir/tools/CodeSystem/tx-issue-type', code: 'not-in-vs' }]);
      assert.deepEqual(issue?.expression, ['code']);
    });

    test('an unknown code is invalid even when the value set lists it', async () => {
      const res = await validate('http://example.org/fhir/ValueSet/enum', 'unicorn');
      assert.equal(out(res.body, 'result'), false);
      const message = out(res.body, 'message');
      assert.ok(typeof message === 'string', res.text);
      assert.match(message, /Unknown code 'unicorn' in the CodeSystem/);
    });

    test('inactive codes are valid (with a warning) unless the value set says inactive false', async () => {
      const res = await validate('http://example.org/fhir/ValueSet/whole', 'dodo');
      assert.equal(out(res.body, 'result'), true);
      assert.equal(out(res.body, 'inactive'), true);
      assert.equal(out(res.body, 'message'), "The concept 'dodo' has a status of retired and inactive and its use should be reviewed");
      const active = await validate('http://example.org/fhir/ValueSet/whole', 'dodo', '&activeOnly=true');
      assert.equal(out(active.body, 'result'), false);
    });

    test('abstract=false refuses notSelectable concepts; the default allows them', async () => {
      assert.equal(out((await validate('http://example.org/fhir/ValueSet/whole', 'animal')).body, 'result'), true);
      assert.equal(out((await validate('http://example.org/fhir/ValueSet/whole', 'animal', '&abstract=false')).body, 'result'), false);
    });

    test('display: any designation matches (case-insensitively); a wrong one names the valid display', async () => {
      const url = 'http://example.org/fhir/ValueSet/whole';
      assert.equal(out((await validate(url, 'dog', '&display=Hund')).body, 'result'), true);
      assert.equal(out((await validate(url, 'dog', '&display=dOG')).body, 'result'), true);
      const wrong = await validate(url, 'dog', '&display=Wolf');
      assert.equal(out(wrong.body, 'result'), false);
      assert.equal(
        out(wrong.body, 'message'),
        `Wrong Display Name 'Wolf' for ${CS}#dog. Valid display is one of 2 choices: 'Dog' (en) or 'Hund' (de) (for the language(s) '--')`,
      );
      const de = await validate(url, 'dog', '&display=Dog&displayLanguage=de');
      assert.equal(out(de.body, 'result'), false);
      assert.equal(out(de.body, 'display'), 'Hund');
    });

    test('coding and codeableConcept inputs; instance level; CodeSystem/$validate-code', async () => {
      const coding = await post('/ValueSet/$validate-code', [
        { name: 'url', valueUri: 'http://example.org/fhir/ValueSet/f-isa' },
        { name: 'coding', valueCoding: { system: CS, code: 'dog' } },
      ]);
      assert.equal(out(coding.body, 'result'), true, coding.text);
      const cc = await post('/ValueSet/f-desc/$validate-code', [
        { name: 'codeableConcept', valueCodeableConcept: { coding: [{ system: CS, code: 'mammal' }, { system: CS, code: 'cat' }] } },
      ]);
      assert.equal(out(cc.body, 'result'), true, cc.text);
      assert.equal(out(cc.body, 'code'), 'cat');
      assert.deepEqual(param(cc.body, 'codeableConcept')?.valueCodeableConcept?.coding?.length, 2);
      const cs = await server.fhir('GET', `/CodeSystem/$validate-code?url=${encodeURIComponent(CS)}&code=penguin`);
      assert.equal(out(cs.body, 'result'), true, cs.text);
      const csBad = await server.fhir('GET', `/CodeSystem/vs-zoo/$validate-code?code=unicorn`);
      assert.equal(out(csBad.body, 'result'), false, csBad.text);
      assert.equal(out(csBad.body, 'message'), `Unknown code 'unicorn' in the CodeSystem '${CS}' version '2.0.0'`);
      const unknownCs = await server.fhir('GET', `/CodeSystem/$validate-code?url=http://example.org/none&code=x`);
      assert.equal(unknownCs.status, 200, unknownCs.text);
      assert.equal(out(unknownCs.body, 'result'), false);
      assert.equal(issues(unknownCs.body)?.issue[0].details?.coding?.[0].code, 'not-found');
    });

    test('errors: unknown value set, nothing to validate against, no code', async () => {
      expectOO(await validate('http://example.org/nope', 'dog'), 400, 'invalid', 'ValueSet http://example.org/nope not found');
      expectOO(await server.fhir('GET', `/ValueSet/$validate-code?system=${CS}&code=dog`), 400, 'invalid', 'No ValueSet specified');
      expectOO(await server.fhir('GET', '/ValueSet/$validate-code?url=http://example.org/fhir/ValueSet/whole'), 400, 'invalid', 'No code specified');
      await put(vs('two-systems', { include: [{ system: CS }, { system: 'http://hl7.org/fhir/administrative-gender' }] }));
      expectOO(await server.fhir('GET', '/ValueSet/two-systems/$validate-code?code=dog&system='), 400, 'invalid', 'No code specified');
      expectOO(await server.fhir('GET', '/ValueSet/no-such/$validate-code?code=dog&system=x'), 404, 'not-found', 'Not found');
    });

    test('a bare code is validated when the value set draws on one code system', async () => {
      const res = await server.fhir('GET', '/ValueSet/$validate-code?url=http://example.org/fhir/ValueSet/whole&code=cat');
      assert.equal(out(res.body, 'result'), true, res.text);
      assert.equal(out(res.body, 'system'), CS);
    });

    test('an unknown system is result false with a not-found issue, never an error status', async () => {
      const res = await server.fhir('GET', '/ValueSet/$validate-code?url=http://example.org/fhir/ValueSet/whole&system=http://example.org/unknown&code=x');
      assert.equal(res.status, 200, res.text);
      assert.equal(out(res.body, 'result'), false);
      assert.equal(out(res.body, 'x-unknown-system'), 'http://example.org/unknown');
    });

    test('value-set cycles are a 400, not a hang', async () => {
      await put(vs('cycle-a', { include: [{ valueSet: ['http://example.org/fhir/ValueSet/cycle-b'] }] }));
      await put(vs('cycle-b', { include: [{ system: CS, valueSet: ['http://example.org/fhir/ValueSet/cycle-a'] }] }));
      const res = await validate('http://example.org/fhir/ValueSet/cycle-a', 'dog');
      assert.equal(res.status, 400, res.text);
      const A = 'http://example.org/fhir/ValueSet/cycle-a|1';
      const B = 'http://example.org/fhir/ValueSet/cycle-b|1';
      assert.equal(ooText(res.body), `Found a circularity pointing to ${A} processing ValueSet with pathway [${A}, ${B}]`);
      assert.equal(res.body.issue?.[0].code, 'processing');
      assert.equal(res.body.issue?.[0].details?.coding?.[0].code, 'vs-invalid');
      const exp = await server.fhir('GET', '/ValueSet/$expand?url=http://example.org/fhir/ValueSet/cycle-b');
      assert.equal(exp.status, 400, exp.text);
      assert.equal(ooText(exp.body), `Found a circularity pointing to ${B} processing ValueSet with pathway [${B}, ${A}]`);
    });

    test('a missing nested value set makes the code invalid with a not-found issue', async () => {
      await put(vs('missing-import', { include: [{ valueSet: ['http://example.org/fhir/ValueSet/never'] }] }));
      const res = await validate('http://example.org/fhir/ValueSet/missing-import', 'dog');
      assert.equal(res.status, 200, res.text);
      assert.equal(out(res.body, 'result'), false);
      assert.equal(out(res.body, 'message'), "A definition for the value Set 'http://example.org/fhir/ValueSet/never' could not be found");
    });

    test('hostile regexes are bounded: catastrophic patterns answer fast, bad ones are a 400', async () => {
      await put({ ...ZOO, id: 'vs-aaa', url: 'http://example.org/aaa', concept: [{ code: `${'a'.repeat(60)}!`, display: 'A' }] });
      for (const pattern of ['(a+)+b', '(a|aa)+$', '(.*a){25}', '((a{1,10}){1,10}){1,10}b']) {
        await put(vs('evil', { include: [{ system: 'http://example.org/aaa', filter: [{ property: 'code', op: 'regex', value: pattern }] }] }));
        const started = Date.now();
        const res = await server.fhir('GET', `/ValueSet/$validate-code?url=http://example.org/fhir/ValueSet/evil&system=http://example.org/aaa&code=${'a'.repeat(60)}!`);
        assert.equal(res.status, 200, res.text);
        assert.equal(out(res.body, 'result'), false);
        assert.ok(Date.now() - started < 5000, `${pattern} took ${Date.now() - started} ms`);
      }
      for (const pattern of ['(', 'a'.repeat(600)]) {
        await put(vs('evil', { include: [{ system: 'http://example.org/aaa', filter: [{ property: 'code', op: 'regex', value: pattern }] }] }));
        const res = await server.fhir('GET', '/ValueSet/$expand?url=http://example.org/fhir/ValueSet/evil');
        assert.equal(res.status, 400, res.text);
      }
    });

    test('a codeableConcept of 10,000 codings is answered correctly in bounded time', async () => {
      const concept = Array.from({ length: 10_050 }, (_, i) => ({ code: `c${i}`, display: `Code ${i}` }));
      await put({ resourceType: 'CodeSystem', id: 'big', url: 'http://example.org/big', status: 'active', content: 'complete', concept });
      await put(vs('big-one', { include: [{ system: 'http://example.org/big', concept: [{ code: 'c9999' }] }] }));
      const coding = Array.from({ length: 10_000 }, (_, i) => ({ system: 'http://example.org/big', code: `c${i}` }));
      const started = Date.now();
      const res = await post('/ValueSet/$validate-code', [
        { name: 'url', valueUri: 'http://example.org/fhir/ValueSet/big-one' },
        { name: 'codeableConcept', valueCodeableConcept: { coding } },
      ]);
      const ms = Date.now() - started;
      assert.equal(res.status, 200, res.text.slice(0, 500));
      assert.equal(out(res.body, 'result'), true);
      assert.equal(out(res.body, 'code'), 'c9999');
      assert.equal(issues(res.body)?.issue.length, 9_999);
      assert.ok(ms < 30_000, `10k codings took ${ms} ms`);
      // and a whole-system expansion that large needs paging
      await put(vs('big-all', { include: [{ system: 'http://example.org/big' }] }));
      const tooBig = await server.fhir('GET', '/ValueSet/$expand?url=http://example.org/fhir/ValueSet/big-all');
      expectOO(tooBig, 422, 'too-costly', "The value set 'http://example.org/fhir/ValueSet/big-all|1' expansion has too many codes to produce (>1000)");
      assert.equal(tooBig.body.issue[0].extension[0].valueString, 'VALUESET_TOO_COSTLY');
      // a filter that alone selects too many is refused as such, the value set named by its url
      await put(vs('big-filter', { include: [{ system: 'http://example.org/big', filter: [{ property: 'code', op: 'regex', value: 'c[0-9]+' }] }] }));
      const tooBigFilter = await server.fhir('GET', '/ValueSet/$expand?url=http://example.org/fhir/ValueSet/big-filter');
      expectOO(tooBigFilter, 422, 'too-costly', "The value set 'http://example.org/fhir/ValueSet/big-filter' expansion has too many codes to produce (>1000)");
      // limitedExpansion: the first 1000 codes instead, flat, marked as too costly
      const limited = await server.fhir('GET', '/ValueSet/$expand?url=http://example.org/fhir/ValueSet/big-all&limitedExpansion=true');
      assert.equal(limited.status, 200, limited.text.slice(0, 500));
      assert.equal(limited.body.expansion.total, 10_050);
      assert.equal(limited.body.expansion.contains.length, 1000);
      assert.deepEqual(limited.body.expansion.extension, [{ url: 'http://hl7.org/fhir/StructureDefinition/valueset-toocostly', valueBoolean: true }]);
      assert.deepEqual(limited.body.expansion.parameter[0], { name: 'limitedExpansion', valueBoolean: true });
      const paged = await server.fhir('GET', '/ValueSet/$expand?url=http://example.org/fhir/ValueSet/big-all&offset=10000&count=100');
      assert.equal(paged.body.expansion.total, 10_050);
      assert.equal(paged.body.expansion.contains.length, 50);
    });

    test('expand: paging keeps the true total; count=0 answers the total only; filter matches word prefixes', async () => {
      const url = encodeURIComponent('http://example.org/fhir/ValueSet/whole');
      const page = await server.fhir('GET', `/ValueSet/$expand?url=${url}&offset=2&count=3`);
      assert.equal(page.body.expansion.total, 7);
      assert.equal(page.body.expansion.offset, 2);
      assert.deepEqual(page.body.expansion.contains.map((c: ValueSetExpansionContains) => c.code), ['dog', 'cat', 'bird']);
      const none = await server.fhir('GET', `/ValueSet/$expand?url=${url}&count=0`);
      assert.equal(none.body.expansion.total, 7);
      assert.equal(none.body.expansion.contains, undefined);
      const filtered = await server.fhir('GET', `/ValueSet/$expand?url=${url}&filter=PENG`);
      assert.deepEqual(filtered.body.expansion.contains.map((c: ValueSetExpansionContains) => c.code), ['penguin']);
      const de = await server.fhir('GET', `/ValueSet/$expand?url=${url}&filter=hu&displayLanguage=de&includeDesignations=true`);
      assert.equal(de.body.expansion.contains[0].display, 'Hund');
      // the designation that became the display is not repeated; the code system's display is listed instead
      assert.deepEqual(
        de.body.expansion.contains[0].designation.map((d: { language?: string; use?: { code?: string }; value: string }) => [d.language, d.use?.code, d.value]),
        [['en', 'preferredForLanguage', 'Dog']],
      );
      const inline = await post('/ValueSet/$expand', [{ name: 'valueSet', resource: vs('inline', inc([{ property: 'concept', op: '=', value: 'cat' }])) }]);
      assert.deepEqual(inline.body.expansion.contains.map((c: ValueSetExpansionContains) => c.code), ['cat']);
    });

    test('expand: nested by the hierarchy unless excludeNested; a dropped concept passes its children up', async () => {
      const url = encodeURIComponent('http://example.org/fhir/ValueSet/whole');
      const nestedRes = await server.fhir('GET', `/ValueSet/$expand?url=${url}`);
      assert.equal(nestedRes.status, 200, nestedRes.text);
      assert.equal(tree(nestedRes.body.expansion.contains), 'animal(mammal(dog cat) bird(penguin)) dodo');
      assert.equal(nestedRes.body.expansion.total, 7);
      assert.equal(nestedRes.body.expansion.offset, undefined, 'offset only when paging');
      const flat = await server.fhir('GET', `/ValueSet/$expand?url=${url}&excludeNested=true`);
      assert.equal(tree(flat.body.expansion.contains), 'animal mammal dog cat bird penguin dodo');
      assert.deepEqual(flat.body.expansion.parameter[0], { name: 'excludeNested', valueBoolean: true });
      // without mammal (excluded by one filter), dog and cat hang under animal
      await put(vs('no-mammal', { include: [{ system: CS }], exclude: [{ system: CS, filter: [{ property: 'concept', op: '=', value: 'mammal' }] }] }));
      const noMammal = await server.fhir('GET', '/ValueSet/$expand?url=http://example.org/fhir/ValueSet/no-mammal');
      assert.equal(tree(noMammal.body.expansion.contains), 'animal(dog cat bird(penguin)) dodo');
      // a definition that lists concepts (here in an exclude), imports value sets or combines filters stays flat
      await put(vs('no-mammal-listed', { include: [{ system: CS }], exclude: [{ system: CS, concept: [{ code: 'mammal' }] }] }));
      const listed = await server.fhir('GET', '/ValueSet/$expand?url=http://example.org/fhir/ValueSet/no-mammal-listed');
      assert.equal(tree(listed.body.expansion.contains), 'animal dog cat bird penguin dodo');
      await put(vs('two-filters', { include: [{ system: CS, filter: [{ property: 'concept', op: 'is-a', value: 'animal' }, { property: 'concept', op: 'is-not-a', value: 'mammal' }] }] }));
      const twoFilters = await server.fhir('GET', '/ValueSet/$expand?url=http://example.org/fhir/ValueSet/two-filters');
      assert.equal(tree(twoFilters.body.expansion.contains), 'animal bird penguin');
      // an enumeration stays flat, in its order
      await put(vs('enum-parent', { include: [{ system: CS, concept: [{ code: 'dog' }, { code: 'mammal' }] }] }));
      const enumerated = await server.fhir('GET', '/ValueSet/$expand?url=http://example.org/fhir/ValueSet/enum-parent');
      assert.equal(enumerated.status, 200, enumerated.text);
      assert.equal(tree(enumerated.body.expansion.contains), 'mammal dog');
    });

    test('expand: excludeNotForUI leaves out abstract concepts (their children move up) and is echoed', async () => {
      const url = encodeURIComponent('http://example.org/fhir/ValueSet/whole');
      const res = await server.fhir('GET', `/ValueSet/$expand?url=${url}&excludeNotForUI=true`);
      assert.equal(res.status, 200, res.text);
      assert.equal(tree(res.body.expansion.contains), 'mammal(dog cat) bird(penguin) dodo');
      assert.equal(res.body.expansion.total, 6);
      assert.deepEqual(res.body.expansion.parameter[0], { name: 'excludeNotForUI', valueBoolean: true });
    });

    test('expand: property returns concept properties (R4 extension form) and declares them', async () => {
      const url = encodeURIComponent('http://example.org/fhir/ValueSet/whole');
      const res = await server.fhir('GET', `/ValueSet/$expand?url=${url}&excludeNested=true&property=colour&property=definition`);
      assert.equal(res.status, 200, res.text);
      const dog = res.body.expansion.contains.find((c: ValueSetExpansionContains) => c.code === 'dog');
      assert.deepEqual(dog.extension, [
        {
          url: 'http://hl7.org/fhir/5.0/StructureDefinition/extension-ValueSet.expansion.contains.property',
          extension: [{ url: 'code', valueCode: 'colour' }, { url: 'value', valueString: 'brown' }],
        },
      ]);
      const declared = res.body.expansion.extension.map((e: { extension: Array<{ url: string; valueCode?: string }> }) => e.extension[0].valueCode);
      assert.ok(declared.includes('colour') && declared.includes('status'), JSON.stringify(declared));
    });

    test('expand: display language with a hard wildcard, designation filter, invalid displayLanguage', async () => {
      const url = encodeURIComponent('http://example.org/fhir/ValueSet/whole');
      const hard = await server.fhir('GET', `/ValueSet/$expand?url=${url}&excludeNested=true&displayLanguage=${encodeURIComponent('de,*; q=0')}`);
      assert.equal(hard.status, 200, hard.text);
      const byCode = new Map(hard.body.expansion.contains.map((c: ValueSetExpansionContains) => [c.code, c]));
      assert.equal((byCode.get('dog') as ValueSetExpansionContains).display, 'Hund');
      assert.equal((byCode.get('cat') as ValueSetExpansionContains).display, undefined, 'no German display and no fallback');
      assert.deepEqual(hard.body.expansion.parameter.find((p: { name: string }) => p.name === 'displayLanguage'), { name: 'displayLanguage', valueCode: 'de, *; q=0' });
      const soft = await server.fhir('GET', `/ValueSet/$expand?url=${url}&excludeNested=true&displayLanguage=de`);
      assert.equal(soft.body.expansion.contains.find((c: ValueSetExpansionContains) => c.code === 'cat').display, 'Cat');
      const only = await server.fhir('GET', `/ValueSet/$expand?url=${url}&excludeNested=true&includeDesignations=true&designation=${encodeURIComponent('urn:ietf:bcp:47|fr')}`);
      assert.ok(!only.body.expansion.contains.some((c: ValueSetExpansionContains) => c.designation), 'no French designations');
      const bad = await server.fhir('GET', `/ValueSet/$expand?url=${url}&displayLanguage=-`);
      expectOO(bad, 400, 'processing', "Invalid displayLanguage: '-'");
    });

    test('tx-resource: code systems and value sets supplied with the request', async () => {
      const cs = { resourceType: 'CodeSystem', url: 'http://example.org/inline', status: 'active', content: 'complete', concept: [{ code: 'i1', display: 'Inline one' }] };
      const v = { resourceType: 'ValueSet', url: 'http://example.org/inline-vs', status: 'active', compose: { include: [{ system: 'http://example.org/inline' }] } };
      for (let i = 0; i < 2; i++) {
        const res = await post('/ValueSet/$validate-code', [
          { name: 'url', valueUri: 'http://example.org/inline-vs' },
          { name: 'coding', valueCoding: { system: 'http://example.org/inline', code: 'i1' } },
          { name: 'tx-resource', resource: cs },
          { name: 'tx-resource', resource: v },
        ]);
        assert.equal(out(res.body, 'result'), true, res.text);
        assert.equal(out(res.body, 'display'), 'Inline one');
      }
      // not visible to requests that do not send it
      const later = await server.fhir('GET', '/CodeSystem/$lookup?system=http://example.org/inline&code=i1');
      assert.equal(later.status, 404);
    });

    test('bad input never produces a 5xx', async () => {
      const bodies: unknown[][] = [
        [{ name: 'url', valueUri: 'http://example.org/fhir/ValueSet/whole' }, { name: 'coding', valueCoding: {} }],
        [{ name: 'url', valueUri: 'http://example.org/fhir/ValueSet/whole' }, { name: 'codeableConcept', valueCodeableConcept: { coding: [{}] } }],
        [{ name: 'url', valueUri: 'http://example.org/fhir/ValueSet/whole' }, { name: 'coding', valueCoding: { system: 'urn:x', code: '' } }],
        [{ name: 'valueSet', resource: { resourceType: 'ValueSet', compose: { include: [{ system: CS, filter: [{ property: 'concept', op: 'is-a' }] }] } } }, { name: 'code', valueCode: 'x' }],
        [{ name: 'valueSet', resource: { resourceType: 'ValueSet', compose: { include: [{ system: CS, filter: [{ property: 'x', op: 'bogus', value: '1' }] }] } } }, { name: 'system', valueUri: CS }, { name: 'code', valueCode: 'dog' }],
        [{ name: 'url', valueUri: 'http://example.org/fhir/ValueSet/whole' }, { name: 'system', valueUri: 'not a uri' }, { name: 'code', valueCode: 'dog' }],
      ];
      for (const parameter of bodies) {
        const res = await post('/ValueSet/$validate-code', parameter);
        assert.ok(res.status < 500, `${JSON.stringify(parameter)} → ${res.status} ${res.text}`);
      }
      for (const q of ['offset=-1', 'count=abc', 'url=%00', 'filter=%5B', 'url=http://example.org/fhir/ValueSet/whole&filter=(((']) {
        const res = await server.fhir('GET', `/ValueSet/$expand?${q}`);
        assert.ok(res.status < 500, `${q} → ${res.status} ${res.text}`);
      }
    });
  });
}
