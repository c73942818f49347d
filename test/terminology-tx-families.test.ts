import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { CodeSystem, OperationOutcome, ParametersParameter, ValueSet } from '@medplum/fhirtypes';
import { codes, out, terminologyCalls } from './support/terminology-client.js';
import { drivers, startServer, type TestServer } from './harness.js';

/**
 * More rule families of the HL7 tx-ecosystem specification (docs/terminology.md, issue 39):
 * the text filter by word stems, circular value sets in $validate-code, expansions of a code
 * system held in several versions. Own small resources, stored by PUT, both drivers.
 */

const CS = 'http://example.org/fhir/CodeSystem/families';

const FAMILIES: CodeSystem = {
  resourceType: 'CodeSystem',
  id: 'families',
  url: CS,
  version: '1.0.0',
  status: 'active',
  content: 'complete',
  concept: [
    { code: 'mi', display: 'Heart attack', designation: [{ language: 'de', value: 'Herzinfarkte' }] },
    { code: 'run', display: 'Running injuries' },
    { code: 'joy', display: 'Happiness' },
    { code: 'gen', display: 'Generalization of anxiety' },
    { code: 'cat', display: 'Categories' },
  ],
};

const DATED = 'http://example.org/fhir/CodeSystem/families-dated';
const PROPS = 'http://hl7.org/fhir/concept-properties';

/** Deprecation and retirement stated by the concept-properties dates (R5 names, and R4's `deprecated`). */
const DATED_CS: CodeSystem = {
  resourceType: 'CodeSystem',
  id: 'families-dated',
  url: DATED,
  version: '1',
  status: 'active',
  content: 'complete',
  property: [
    { code: 'deprecationDate', uri: `${PROPS}#deprecationDate`, type: 'dateTime' },
    { code: 'retired-on', uri: `${PROPS}#retirementDate`, type: 'dateTime' },
    { code: 'deprecated', type: 'dateTime' },
  ],
  concept: [
    { code: 'old', display: 'Old', property: [{ code: 'deprecationDate', valueDateTime: '2020-01-01' }] },
    { code: 'r4old', display: 'R4 old', property: [{ code: 'deprecated', valueDateTime: '2019-05-01T00:00:00Z' }] },
    { code: 'gone', display: 'Gone', property: [{ code: 'deprecationDate', valueDateTime: '2019-01-01' }, { code: 'retired-on', valueDateTime: '2021-01-01' }] },
    { code: 'later', display: 'Later', property: [{ code: 'deprecationDate', valueDateTime: '2999-01-01' }] },
  ],
};

/** A language pack: a supplement that states its language and gives displays in it. */
const PACK: CodeSystem = {
  resourceType: 'CodeSystem',
  id: 'families-de',
  url: 'http://example.org/fhir/CodeSystem/families-de',
  version: '1',
  language: 'de',
  status: 'active',
  content: 'supplement',
  supplements: CS,
  concept: [{ code: 'run', display: 'Laufverletzungen' }],
};

const SD = 'http://hl7.org/fhir/StructureDefinition';
const WEIGHTED = 'http://example.org/fhir/CodeSystem/families-weighted';

/** R4's ordinalValue (R5 itemWeight) on concepts, and rendering extensions on a designation. */
const WEIGHTED_CS: CodeSystem = {
  resourceType: 'CodeSystem',
  id: 'families-weighted',
  url: WEIGHTED,
  version: '1',
  status: 'active',
  content: 'complete',
  concept: [
    { code: 'none', display: 'None', extension: [{ url: `${SD}/ordinalValue`, valueDecimal: 0 }] },
    {
      code: 'some',
      display: 'Some',
      extension: [{ url: `${SD}/ordinalValue`, valueDecimal: 2 }],
      designation: [{ language: 'de', value: 'Etwas', extension: [{ url: `${SD}/rendering-style`, valueString: 'font-style: italic' }, { url: `${SD}/rendering-xhtml`, valueString: '<i>Etwas</i>' }] }],
    },
  ],
};

const vs = (id: string, compose: ValueSet['compose']): ValueSet => ({
  resourceType: 'ValueSet',
  id,
  url: `http://example.org/fhir/ValueSet/${id}`,
  version: '1',
  status: 'active',
  compose,
});

for (const driver of drivers) {
  describe(`terminology tx-ecosystem rule families (${driver})`, () => {
    let server: TestServer;
    const { put, post, expandUrl, validate } = terminologyCalls(() => server);

    before(async () => {
      server = await startServer(driver);
      await put(FAMILIES);
      await put(DATED_CS);
      await put(PACK);
      await put(WEIGHTED_CS);
      await put(vs('families-dated', { include: [{ system: DATED }] }));
      await put(vs('families-dated-active', { inactive: false, include: [{ system: DATED }] }));
      await put(vs('families-all', { include: [{ system: CS }] }));
      // A cycle behind an include that already admits the code, and one through an exclude.
      await put(vs('families-ring-1', { include: [{ system: CS }, { valueSet: ['http://example.org/fhir/ValueSet/families-ring-2'] }] }));
      await put(vs('families-ring-2', { include: [{ system: CS, concept: [{ code: 'mi' }] }], exclude: [{ valueSet: ['http://example.org/fhir/ValueSet/families-ring-1'] }] }));
    });
    after(() => server?.stop());

    test('the text filter matches a word by its stem as well as by its start', async () => {
      const got = async (filter: string) => {
        const res = await expandUrl('http://example.org/fhir/ValueSet/families-all', [{ name: 'filter', valueString: filter }]);
        assert.equal(res.status, 200, res.text);
        return codes(res.body.expansion?.contains).sort();
      };
      assert.deepEqual(await got('attacks'), ['mi']); // attack ← attacks
      assert.deepEqual(await got('heart attacks'), ['mi']);
      assert.deepEqual(await got('run'), ['run']); // a word's start, as before
      assert.deepEqual(await got('injury'), ['run']); // injuri ← injury, injuries
      assert.deepEqual(await got('happy'), ['joy']); // happi ← happy, happiness
      assert.deepEqual(await got('generalize'), ['gen']); // gener ← generalize, generalization
      assert.deepEqual(await got('category'), ['cat']);
      assert.deepEqual(await got('herzinfarkt'), ['mi']); // designations too
      assert.deepEqual(await got('attacking heart'), ['mi']);
      assert.deepEqual(await got('attacks running'), []); // every word must match
      assert.deepEqual(await got('ran'), []); // a stem, not a lemma
    });

    test('$validate-code on a value set that reaches itself is an error, even for a code an earlier include admits', async () => {
      const ring = (from: number) => [1, 2].map((i) => `http://example.org/fhir/ValueSet/families-ring-${((from - 1 + i - 1) % 2) + 1}|1`);
      for (const from of [1, 2]) {
        const res = await validate(`http://example.org/fhir/ValueSet/families-ring-${from}`, CS, 'mi');
        assert.equal(res.status, 400, res.text);
        const issue = res.body.issue?.[0];
        assert.equal(issue?.code, 'processing');
        assert.equal(issue?.details?.coding?.[0].code, 'vs-invalid');
        assert.equal(issue?.details?.text, `Found a circularity pointing to ${ring(from)[0]} processing ValueSet with pathway [${ring(from).join(', ')}]`);
      }
      // the same for $expand (it was already)
      assert.equal((await expandUrl('http://example.org/fhir/ValueSet/families-ring-1')).status, 400);
      // a value set that imports another twice without a cycle is fine
      await put(vs('families-diamond', { include: [{ valueSet: ['http://example.org/fhir/ValueSet/families-all'] }, { valueSet: ['http://example.org/fhir/ValueSet/families-all'] }] }));
      assert.equal(out((await validate('http://example.org/fhir/ValueSet/families-diamond', CS, 'mi')).body, 'result'), true);
    });

    test('deprecation and retirement dates that have come make a concept deprecated / retired (inactive) in $expand and $validate-code', async () => {
      const res = await expandUrl('http://example.org/fhir/ValueSet/families-dated');
      assert.equal(res.status, 200, res.text);
      const entries = new Map((res.body.expansion?.contains ?? []).map((c) => [c.code, c]));
      const status = (code: string) => entries.get(code)?.extension?.find((e) => e.url.endsWith('extension-ValueSet.expansion.contains.property'))?.extension?.find((e) => e.url === 'value')?.valueCode;
      assert.deepEqual(['old', 'r4old', 'gone', 'later'].map((c) => [c, entries.get(c)?.inactive ?? false, status(c)]), [
        ['old', false, 'deprecated'],
        ['r4old', false, 'deprecated'],
        ['gone', true, 'retired'],
        ['later', false, undefined],
      ]);
      const active = await expandUrl('http://example.org/fhir/ValueSet/families-dated', [{ name: 'activeOnly', valueBoolean: true }]);
      assert.deepEqual(codes(active.body.expansion?.contains).sort(), ['later', 'old', 'r4old']);

      const old = await validate('http://example.org/fhir/ValueSet/families-dated', DATED, 'old');
      assert.equal(out(old.body, 'result'), true);
      assert.equal(out(old.body, 'message'), "The concept 'old' is deprecated and its use should be reviewed");
      assert.equal(out(old.body, 'status'), 'deprecated');
      const gone = await validate('http://example.org/fhir/ValueSet/families-dated', DATED, 'gone');
      assert.equal(out(gone.body, 'result'), true);
      assert.equal(out(gone.body, 'inactive'), true);
      assert.equal(out(gone.body, 'message'), "The concept 'gone' has a status of retired and inactive and its use should be reviewed");
      const issue = (out(gone.body, 'issues') as OperationOutcome).issue?.[0];
      assert.equal(issue?.extension?.[0].valueString, 'INACTIVE_CONCEPT_FOUND');
      const later = await validate('http://example.org/fhir/ValueSet/families-dated', DATED, 'later');
      assert.equal(out(later.body, 'message'), undefined);
      assert.equal(out(later.body, 'status'), undefined);
    });

    test('a code a value set leaves out for its activity (compose.inactive = false, or activeOnly) is "valid but not active"', async () => {
      for (const [url, more] of [
        ['http://example.org/fhir/ValueSet/families-dated-active', []],
        ['http://example.org/fhir/ValueSet/families-dated', [{ name: 'activeOnly', valueBoolean: true }]],
      ] as Array<[string, ParametersParameter[]]>) {
        const res = await validate(url, DATED, 'gone', more);
        assert.equal(res.status, 200, res.text);
        assert.equal(out(res.body, 'result'), false);
        assert.equal(out(res.body, 'inactive'), true);
        assert.equal(
          out(res.body, 'message'),
          `The concept 'gone' has a status of retired and inactive and its use should be reviewed; The concept 'gone' is valid but is not active; The provided code '${DATED}#gone' was not found in the value set '${url}|1'`,
        );
        const issues = (out(res.body, 'issues') as OperationOutcome).issue ?? [];
        assert.deepEqual(
          issues.map((i) => [i.severity, i.code, i.details?.coding?.[0].code, i.extension?.[0].valueString]),
          [
            ['warning', 'business-rule', 'code-comment', 'INACTIVE_CONCEPT_FOUND'],
            ['error', 'business-rule', 'code-rule', 'STATUS_CODE_WARNING_CODE'],
            ['error', 'code-invalid', 'not-in-vs', 'None_of_the_provided_codes_are_in_the_value_set_one'],
          ],
        );
      }
      // an active code stays a member
      assert.equal(out((await validate('http://example.org/fhir/ValueSet/families-dated-active', DATED, 'old')).body, 'result'), true);
    });

    test("a language pack's displays are designations in its language: validate-code accepts and answers them, expand shows them", async () => {
      const pack = [{ name: 'displayLanguage', valueCode: 'de' }, { name: 'useSupplement', valueCanonical: PACK.url }];
      const good = await validate('http://example.org/fhir/ValueSet/families-all', CS, 'run', [{ name: 'display', valueString: 'Laufverletzungen' }, ...pack]);
      assert.equal(out(good.body, 'result'), true, good.text);
      assert.equal(out(good.body, 'display'), 'Laufverletzungen');
      assert.equal(out(good.body, 'message'), undefined);
      const wrong = await validate('http://example.org/fhir/ValueSet/families-all', CS, 'run', [{ name: 'display', valueString: 'Laufen' }, ...pack]);
      assert.equal(out(wrong.body, 'result'), false);
      assert.match(String(out(wrong.body, 'message')), /'Laufverletzungen' \(de\)/);
      // without the supplement, the display is not German
      const without = await validate('http://example.org/fhir/ValueSet/families-all', CS, 'run', [{ name: 'display', valueString: 'Laufverletzungen' }, { name: 'displayLanguage', valueCode: 'de' }]);
      assert.equal(out(without.body, 'result'), false);
      const expanded = await expandUrl('http://example.org/fhir/ValueSet/families-all', pack);
      assert.equal(expanded.body.expansion?.contains?.find((c) => c.code === 'run')?.display, 'Laufverletzungen');
    });

    test("expansions echo R4's ordinalValue as the weight property (code system or value set) and rendering extensions on designations", async () => {
      const weighted = vs('families-weighted', { include: [{ system: WEIGHTED, concept: [{ code: 'none', extension: [{ url: `${SD}/ordinalValue`, valueDecimal: 1 }] }, { code: 'some' }] }] });
      const res = await post('/ValueSet/$expand', [{ name: 'valueSet', resource: weighted }, { name: 'includeDesignations', valueBoolean: true }]);
      assert.equal(res.status, 200, res.text);
      const weight = (code: string) =>
        res.body.expansion?.contains
          ?.find((c) => c.code === code)
          ?.extension?.filter((e) => e.url.endsWith('extension-ValueSet.expansion.contains.property'))
          .find((e) => e.extension?.some((x) => x.url === 'code' && x.valueCode === 'weight'))
          ?.extension?.find((x) => x.url === 'value')?.valueDecimal;
      assert.equal(weight('none'), 1); // the value set's own weight first
      assert.equal(weight('some'), 2);
      const declared = res.body.expansion?.extension?.filter((e) => e.url.endsWith('extension-ValueSet.expansion.property')).map((e) => e.extension?.find((x) => x.url === 'uri')?.valueUri);
      assert.ok(declared?.includes('http://hl7.org/fhir/concept-properties#itemWeight'), res.text);
      const etwas = res.body.expansion?.contains?.find((c) => c.code === 'some')?.designation?.find((d) => d.value === 'Etwas');
      assert.deepEqual(etwas?.extension, [
        { url: `${SD}/rendering-style`, valueString: 'font-style: italic' },
        { url: `${SD}/rendering-xhtml`, valueString: '<i>Etwas</i>' },
      ]);
    });
  });
}
