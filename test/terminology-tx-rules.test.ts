import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { CodeSystem, OperationOutcome, ValueSet, ValueSetComposeInclude } from '@medplum/fhirtypes';
import { codes, out, terminologyCalls, type TxAnswer } from './support/terminology-client.js';
import { drivers, ooText, startServer, type TestServer } from './harness.js';

/**
 * Terminology rules of the HL7 tx-ecosystem specification that the fixture cases do not show
 * (docs/terminology.md): designation extensions and inactive designations, supplements named by
 * a value set, what $expand refuses (no definition, unknown code system, bad regex, cycles),
 * notSelectable filters, fragments, concepts whose listing in a value set is deprecated.
 * Every resource is stored by PUT, so both drivers answer from their own index.
 */

const CS = 'http://example.org/fhir/CodeSystem/rules';
const SUP = 'http://example.org/fhir/CodeSystem/rules-nl';
const FRAG = 'http://example.org/fhir/CodeSystem/rules-fragment';
const NS = 'http://example.org/fhir/CodeSystem/rules-ns';
const SCTDESCID = 'http://hl7.org/fhir/StructureDefinition/coding-sctdescid';
const STANDARDS_STATUS = 'http://hl7.org/fhir/StructureDefinition/structuredefinition-standards-status';

const RULES: CodeSystem = {
  resourceType: 'CodeSystem',
  id: 'rules',
  url: CS,
  version: '1.0.0',
  status: 'active',
  content: 'complete',
  language: 'en',
  concept: [
    {
      code: 'one',
      display: 'One',
      designation: [
        { language: 'de', value: 'Eins', extension: [{ url: SCTDESCID, valueId: '1234' }, { url: 'http://example.org/unknown', valueString: 'dropped' }] },
        { language: 'de', value: 'Einz', extension: [{ url: STANDARDS_STATUS, valueCode: 'withdrawn' }] },
        { use: { system: 'http://example.org/uses', code: 'olde-english' }, value: 'Thee One' },
      ],
    },
    { code: 'two', display: 'Two' },
  ],
};

const SUPPLEMENT: CodeSystem = {
  resourceType: 'CodeSystem',
  id: 'rules-nl',
  url: SUP,
  version: '0.1.0',
  status: 'active',
  content: 'supplement',
  supplements: CS,
  concept: [{ code: 'one', designation: [{ language: 'nl', value: 'Een' }] }],
};

const FRAGMENT: CodeSystem = { resourceType: 'CodeSystem', id: 'rules-fragment', url: FRAG, version: '1', status: 'active', content: 'fragment', concept: [{ code: 'a', display: 'A' }] };

/** notSelectable declared under another code, by its concept-properties URI. */
const NOT_SELECTABLE: CodeSystem = {
  resourceType: 'CodeSystem',
  id: 'rules-ns',
  url: NS,
  version: '1',
  status: 'active',
  content: 'complete',
  property: [{ code: 'ns', uri: 'http://hl7.org/fhir/concept-properties#notSelectable', type: 'boolean' }],
  concept: [
    { code: 'group', display: 'Group', property: [{ code: 'ns', valueBoolean: true }] },
    { code: 'leaf', display: 'Leaf', property: [{ code: 'ns', valueBoolean: false }] },
    { code: 'plain', display: 'Plain' },
  ],
};

const vs = (id: string, compose: ValueSet['compose'] | undefined, extra: Partial<ValueSet> = {}): ValueSet => ({
  resourceType: 'ValueSet',
  id,
  url: `http://example.org/fhir/ValueSet/${id}`,
  version: '1',
  status: 'active',
  ...(compose ? { compose } : {}),
  ...extra,
});

for (const driver of drivers) {
  describe(`terminology tx-ecosystem rules (${driver})`, () => {
    let server: TestServer;
    const { put, post, expand, validate } = terminologyCalls(() => server);
    type Answer = TxAnswer;
    const issueText = (body: Answer) => body.issue?.[0]?.details?.text;
    const issueOf = (body: Answer) => (out(body, 'issues') as OperationOutcome | undefined)?.issue ?? [];

    before(async () => {
      server = await startServer(driver);
      for (const r of [RULES, SUPPLEMENT, FRAGMENT, NOT_SELECTABLE]) await put(r);
      await put(vs('rules-all', { include: [{ system: CS }] }));
      await put(vs('rules-fragment-all', { include: [{ system: FRAG }] }));
      await put(vs('rules-fragment-listed', { include: [{ system: FRAG, concept: [{ code: 'a' }] }] }));
      await put(vs('rules-listed-deprecated', { include: [{ system: CS, concept: [{ code: 'one', extension: [{ url: STANDARDS_STATUS, valueCode: 'deprecated' }] }, { code: 'two' }] }] }));
      await put(vs('rules-import-pinned', { include: [{ valueSet: ['http://example.org/fhir/ValueSet/rules-all|9.9.9'] }] }));
    });
    after(() => server?.stop());

    test('expansion designations keep their standard extensions (sctdescid, standards-status), not unknown ones', async () => {
      const res = await expand(vs('d', { include: [{ system: CS, concept: [{ code: 'one' }] }] }), [{ name: 'includeDesignations', valueBoolean: true }]);
      assert.equal(res.status, 200, res.text);
      const designations = res.body.expansion?.contains?.[0].designation ?? [];
      assert.deepEqual(designations.find((d) => d.value === 'Eins'), { extension: [{ url: SCTDESCID, valueId: '1234' }], language: 'de', value: 'Eins' });
      assert.deepEqual(designations.find((d) => d.value === 'Einz'), { extension: [{ url: STANDARDS_STATUS, valueCode: 'withdrawn' }], language: 'de', value: 'Einz' });
    });

    test('a ValueSet valueset-supplement extension applies the supplement; an unknown one is a 400', async () => {
      const ext = (url: string) => ({ extension: [{ url: 'http://hl7.org/fhir/StructureDefinition/valueset-supplement', valueCanonical: url }] });
      const res = await expand(vs('s', { include: [{ system: CS, concept: [{ code: 'one' }] }] }, ext(`${SUP}|0.1.0`)), [{ name: 'includeDesignations', valueBoolean: true }]);
      assert.equal(res.status, 200, res.text);
      assert.ok(res.body.expansion?.contains?.[0].designation?.some((d) => d.language === 'nl' && d.value === 'Een'), res.text);
      assert.deepEqual(res.body.expansion?.parameter?.find((p) => p.name === 'used-supplement'), { name: 'used-supplement', valueUri: `${SUP}|0.1.0` });
      const missing = await expand(vs('s2', { include: [{ system: CS }] }, ext('http://example.org/fhir/CodeSystem/nope')));
      assert.equal(missing.status, 400, missing.text);
      assert.equal(missing.body.issue?.[0].code, 'not-found');
      assert.equal(issueText(missing.body), 'Required supplement not found: http://example.org/fhir/CodeSystem/nope');
    });

    test('a designation with a non-display use is not a valid display; a withdrawn designation is valid with a warning', async () => {
      const wrong = await validate(`http://example.org/fhir/ValueSet/rules-all`, CS, 'one', [{ name: 'display', valueString: 'Thee One' }]);
      assert.equal(out(wrong.body, 'result'), false);
      assert.equal(
        out(wrong.body, 'message'),
        `Wrong Display Name 'Thee One' for ${CS}#one. Valid display is one of 2 choices: 'One' (en) or 'Eins' (de) (for the language(s) '--')`,
      );
      const retired = await validate(`http://example.org/fhir/ValueSet/rules-all`, CS, 'one', [{ name: 'display', valueString: 'Einz' }]);
      assert.equal(out(retired.body, 'result'), true, retired.text);
      const [issue] = issueOf(retired.body);
      assert.equal(issue.severity, 'warning');
      assert.equal(issue.details?.coding?.[0].code, 'display-comment');
      assert.equal(issue.code, 'invalid');
      assert.equal(issue.details?.text, "'Einz' is no longer considered a correct display for code 'one' (status = withdrawn). The correct display is one of Eins,One.");
      assert.equal(out(retired.body, 'message'), undefined);
    });

    test('$expand refuses a value set without compose or expansion, and an include of an unknown code system', async () => {
      const empty = await expand(vs('empty', undefined));
      assert.equal(empty.status, 400, empty.text);
      assert.equal(issueText(empty.body), "The value set 'http://example.org/fhir/ValueSet/empty|1' has no compose and no expansion, so it cannot be expanded");
      const unknown = await expand(vs('unknown', { include: [{ system: 'http://example.org/unknown', concept: [{ code: 'x' }] }] }));
      assert.equal(unknown.status, 400, unknown.text);
      assert.equal(unknown.body.issue?.[0].code, 'not-found');
      assert.equal(unknown.body.issue?.[0].details?.coding?.[0].code, 'not-found');
      assert.equal(issueText(unknown.body), "A definition for CodeSystem 'http://example.org/unknown' could not be found, so the value set cannot be expanded");
    });

    test('default-valueset-version decides the version of a value set named without one (imports and url)', async () => {
      await put(vs('rules-pick', { include: [{ system: CS, concept: [{ code: 'one' }] }] }));
      await put(vs('rules-pick-2', { include: [{ system: CS, concept: [{ code: 'two' }] }] }, { url: 'http://example.org/fhir/ValueSet/rules-pick', version: '2' }));
      const importer = vs('importer', { include: [{ valueSet: ['http://example.org/fhir/ValueSet/rules-pick'] }] });
      const newest = await expand(importer);
      assert.deepEqual(codes(newest.body.expansion?.contains), ['two']);
      const pinned = await expand(importer, [{ name: 'default-valueset-version', valueCanonical: 'http://example.org/fhir/ValueSet/rules-pick|1' }]);
      assert.equal(pinned.status, 200, pinned.text);
      assert.deepEqual(codes(pinned.body.expansion?.contains), ['one']);
      assert.ok(pinned.body.expansion?.parameter?.some((p) => p.name === 'default-valueset-version' && p.valueUri === 'http://example.org/fhir/ValueSet/rules-pick|1'), pinned.text);
      const byUrl = await validate('http://example.org/fhir/ValueSet/rules-pick', CS, 'one', [{ name: 'default-valueset-version', valueCanonical: 'http://example.org/fhir/ValueSet/rules-pick|1' }]);
      assert.equal(out(byUrl.body, 'result'), true, byUrl.text);
      const missing = await validate('http://example.org/fhir/ValueSet/rules-pick', CS, 'one', [{ name: 'default-valueset-version', valueCanonical: 'http://example.org/fhir/ValueSet/rules-pick|7' }]);
      assert.equal(missing.status, 400, missing.text);
      assert.equal(issueText(missing.body), 'ValueSet http://example.org/fhir/ValueSet/rules-pick|7 not found');
    });

    test('CodeSystem/$validate-code of a version that does not exist names it and the valid ones, in every form', async () => {
      const text = `A definition for CodeSystem '${CS}' version '9.9' could not be found, so the code cannot be validated. Valid versions: 1.0.0`;
      for (const parameter of [
        [{ name: 'url', valueUri: CS }, { name: 'version', valueString: '9.9' }, { name: 'code', valueCode: 'one' }],
        [{ name: 'url', valueUri: `${CS}|9.9` }, { name: 'code', valueCode: 'one' }],
        [{ name: 'coding', valueCoding: { system: CS, version: '9.9', code: 'one' } }],
      ]) {
        const res = await post('/CodeSystem/$validate-code', parameter);
        assert.equal(res.status, 200, res.text);
        assert.equal(out(res.body, 'result'), false);
        assert.equal(out(res.body, 'message'), text, JSON.stringify(parameter));
        assert.equal(out(res.body, 'x-unknown-system'), `${CS}|9.9`);
      }
    });

    test('a pinned import that is not found names the version: a not-found 400 for $expand, result false for $validate-code', async () => {
      const res = await server.fhir('GET', '/ValueSet/$expand?url=http://example.org/fhir/ValueSet/rules-import-pinned');
      assert.equal(res.status, 400, res.text);
      assert.equal(res.body.issue?.[0].code, 'not-found');
      assert.equal(res.body.issue?.[0].details?.coding?.[0].code, 'not-found');
      assert.equal(ooText(res.body), "Unable to find included value set 'http://example.org/fhir/ValueSet/rules-all' version '9.9.9'");
      const val = await validate('http://example.org/fhir/ValueSet/rules-import-pinned', CS, 'one');
      assert.equal(val.status, 200, val.text);
      assert.equal(out(val.body, 'result'), false);
      assert.equal(out(val.body, 'message'), "A definition for the value Set 'http://example.org/fhir/ValueSet/rules-all|9.9.9' could not be found");
    });

    test('default-valueset-version pinning an import to a version that does not exist names that version', async () => {
      const importer = vs('pin-import', { include: [{ valueSet: ['http://example.org/fhir/ValueSet/rules-all'] }] });
      const pin = [{ name: 'default-valueset-version', valueCanonical: 'http://example.org/fhir/ValueSet/rules-all|3.0.0' }];
      const res = await expand(importer, pin);
      assert.equal(res.status, 400, res.text);
      assert.equal(res.body.issue?.[0].code, 'not-found');
      assert.equal(issueText(res.body), "Unable to find included value set 'http://example.org/fhir/ValueSet/rules-all' version '3.0.0'");
      const val = await post('/ValueSet/$validate-code', [{ name: 'valueSet', resource: importer }, { name: 'system', valueUri: CS }, { name: 'code', valueCode: 'one' }, ...pin]);
      assert.equal(out(val.body, 'result'), false, val.text);
      assert.equal(out(val.body, 'message'), "A definition for the value Set 'http://example.org/fhir/ValueSet/rules-all|3.0.0' could not be found");
    });

    test('a regex PostgreSQL refuses is a 400 naming the pattern as given, at the filter', async () => {
      const res = await expand(vs('re', { include: [{ system: CS, filter: [{ property: 'code', op: 'regex', value: 'a\\' }] }] }));
      assert.equal(res.status, 400, res.text);
      assert.equal(issueText(res.body), "The regular expression 'a\\' is not valid or too complex");
      assert.deepEqual(res.body.issue?.[0].expression, ['ValueSet.compose.include[0].filter[0]']);
      // a pattern that backtracking engines take exponential time over is answered at once
      const started = Date.now();
      const slow = await expand(vs('re2', { include: [{ system: CS, filter: [{ property: 'code', op: 'regex', value: '(o|on|one)*(x)' }] }] }));
      assert.equal(slow.status, 200, slow.text);
      assert.equal(slow.body.expansion?.total, 0);
      assert.ok(Date.now() - started < 5000);
    });

    test('the text filter needs every word to start a word of the display or a designation, in any order', async () => {
      const got = async (filter: string) => {
        const res = await expand(vs('text', { include: [{ system: CS }] }), [{ name: 'filter', valueString: filter }]);
        assert.equal(res.status, 200, res.text);
        return codes(res.body.expansion?.contains);
      };
      assert.deepEqual(await got('on'), ['one']);
      assert.deepEqual(await got('ein'), ['one']);
      assert.deepEqual(await got('thee one'), ['one']);
      assert.deepEqual(await got('one thee'), ['one']);
      assert.deepEqual(await got('one two'), []);
      assert.deepEqual(await got('ne'), []);
    });

    test('the text filter also finds a code that starts with the text, ignoring case', async () => {
      const url = 'http://example.org/fhir/CodeSystem/rules-codes';
      const cs: CodeSystem = {
        resourceType: 'CodeSystem', id: 'rules-codes', url, version: '1', status: 'active', content: 'complete',
        concept: [{ code: 'AB-12', display: 'Blue' }, { code: 'AC-3', display: 'Green' }, { code: 'zz', display: 'Ab initio' }],
      };
      assert.ok((await server.fhir('PUT', '/CodeSystem/rules-codes', { body: cs })).status < 300);
      const got = async (filter: string) => {
        const res = await expand(vs('codes', { include: [{ system: url }] }), [{ name: 'filter', valueString: filter }]);
        assert.equal(res.status, 200, res.text);
        return codes(res.body.expansion?.contains);
      };
      assert.deepEqual(await got('ab-1'), ['AB-12']);
      assert.deepEqual(await got('ab'), ['AB-12', 'zz']);
      assert.deepEqual(await got('AC-3'), ['AC-3']);
      assert.deepEqual(await got('b-12'), []);
    });

    test('notSelectable filters (=, in, not-in) compare the stated property values, also under a code declared by URI', async () => {
      const f = (op: '=' | 'in' | 'not-in', value: string, property = 'ns') => vs('ns', { include: [{ system: NS, filter: [{ property, op, value }] }] });
      const got = async (v: ValueSet) => {
        const res = await expand(v);
        assert.equal(res.status, 200, res.text);
        return codes(res.body.expansion?.contains);
      };
      assert.deepEqual(await got(f('=', 'true')), ['group']);
      // `plain` states no value: only `not-in` selects it (docs/terminology.md#value-set-membership)
      assert.deepEqual(await got(f('=', 'false')), ['leaf']);
      assert.deepEqual(await got(f('in', 'true')), ['group']);
      assert.deepEqual(await got(f('in', 'true,false')), ['group', 'leaf']);
      assert.deepEqual(await got(f('not-in', 'true')), ['leaf', 'plain']);
      assert.deepEqual(await got(f('=', 'true', 'notSelectable')), ['group']);
      // values are compared as written
      assert.deepEqual(await got(f('=', 'TRUE', 'notSelectable')), []);
      const contains = (await expand(f('=', 'true'))).body.expansion?.contains;
      assert.equal(contains?.[0].abstract, true);
    });

    test('abstract=false refuses a notSelectable concept (declared by URI) with the abstract and the not-in-value-set errors', async () => {
      const nsAll = vs('ns-all', { include: [{ system: NS }] });
      const check = (code: string, abstract: boolean) =>
        post('/ValueSet/$validate-code', [{ name: 'valueSet', resource: nsAll }, { name: 'system', valueUri: NS }, { name: 'code', valueCode: code }, { name: 'abstract', valueBoolean: abstract }]);
      const refused = await check('group', false);
      assert.equal(out(refused.body, 'result'), false, refused.text);
      const issues = issueOf(refused.body);
      assert.deepEqual(
        issues.map((i) => [i.severity, i.code, i.details?.coding?.[0].code, i.details?.text, i.expression?.[0]]),
        [
          ['error', 'business-rule', 'code-rule', `Code '${NS}#group' is abstract, and not allowed in this context`, 'code'],
          ['error', 'code-invalid', 'not-in-vs', `The provided code '${NS}#group' was not found in the value set 'http://example.org/fhir/ValueSet/ns-all|1'`, 'code'],
        ],
      );
      assert.equal(out((await check('group', true)).body, 'result'), true);
      assert.equal(out((await check('leaf', false)).body, 'result'), true);
    });

    test('a value set including two versions of a code system: a member both have at the newest, one only one has there, a non-member at the newest', async () => {
      const OV = 'http://example.org/fhir/CodeSystem/rules-overload';
      const v = (version: string, codes: string[]): CodeSystem => ({
        resourceType: 'CodeSystem', url: OV, version, status: 'active', content: 'complete', concept: codes.map((code) => ({ code, display: `${code} (${version})` })),
      });
      const both = vs('overload', { include: [{ system: OV, version: '1.0.0', concept: [{ code: 'a' }] }, { system: OV, version: '2.0.0' }] });
      const check = (code: string) =>
        post('/ValueSet/$validate-code', [
          { name: 'valueSet', resource: both }, { name: 'coding', valueCoding: { system: OV, code } },
          { name: 'tx-resource', resource: v('1.0.0', ['a']) }, { name: 'tx-resource', resource: v('2.0.0', ['a', 'b']) },
        ]);
      const a = await check('a');
      // Both versions have `a`: the includes are looked in newest first (docs/terminology.md#overloaded-versions).
      assert.deepEqual([out(a.body, 'result'), out(a.body, 'version'), out(a.body, 'display')], [true, '2.0.0', 'a (2.0.0)'], a.text);
      const b = await check('b');
      assert.deepEqual([out(b.body, 'result'), out(b.body, 'version'), out(b.body, 'display')], [true, '2.0.0', 'b (2.0.0)'], b.text);
      // imported value sets that draw on the two versions: each code once, from the first version, without `version`
      const v1 = vs('overload-v1', { include: [{ system: OV, version: '1.0.0' }] });
      const v2 = vs('overload-v2', { include: [{ system: OV, version: '2.0.0' }] });
      const importer = vs('overload-import', { include: [{ valueSet: [v1.url as string] }, { valueSet: [v2.url as string] }] });
      const expanded = await expand(importer, [
        { name: 'tx-resource', resource: v('1.0.0', ['a']) }, { name: 'tx-resource', resource: v('2.0.0', ['a', 'b']) },
        { name: 'tx-resource', resource: v1 }, { name: 'tx-resource', resource: v2 },
      ]);
      assert.equal(expanded.status, 200, expanded.text);
      assert.equal(expanded.body.expansion?.total, 2);
      assert.deepEqual(expanded.body.expansion?.contains?.map((c) => [c.code, c.version, c.display]), [['a', undefined, 'a (1.0.0)'], ['b', undefined, 'b (2.0.0)']]);
      const direct = await expand(vs('overload-direct', { include: [{ system: OV, version: '1.0.0' }, { system: OV, version: '2.0.0' }] }), [
        { name: 'tx-resource', resource: v('1.0.0', ['a']) }, { name: 'tx-resource', resource: v('2.0.0', ['a', 'b']) },
      ]);
      assert.equal(direct.body.expansion?.total, 3);
      assert.deepEqual(direct.body.expansion?.contains?.map((c) => `${c.code}|${c.version}`), ['a|1.0.0', 'a|2.0.0', 'b|2.0.0']);
      const zz = await check('zz');
      assert.equal(out(zz.body, 'result'), false, zz.text);
      assert.equal(out(zz.body, 'version'), '2.0.0');
      assert.ok(issueOf(zz.body).some((i) => i.details?.text === `Unknown code 'zz' in the CodeSystem '${OV}' version '2.0.0'`), zz.text);
    });

    test('an exclude naming no version removes its codes from every version the includes draw on; one naming a version, from that version only', async () => {
      const MV = 'http://example.org/fhir/CodeSystem/rules-multi';
      const v = (version: string, codes: string[]): CodeSystem => ({
        resourceType: 'CodeSystem', url: MV, version, status: 'active', content: 'complete', concept: codes.map((code) => ({ code, display: `${code} (${version})` })),
      });
      const resources = [{ name: 'tx-resource', resource: v('1.0.0', ['a', 'b']) }, { name: 'tx-resource', resource: v('2.0.0', ['a', 'b', 'c']) }];
      const entries = async (exclude: ValueSetComposeInclude) => {
        const res = await expand(vs('multi', { include: [{ system: MV, version: '1.0.0' }, { system: MV, version: '2.0.0' }], exclude: [exclude] }), resources);
        assert.equal(res.status, 200, res.text);
        return res.body.expansion?.contains?.map((c) => `${c.code}|${c.version}`);
      };
      assert.deepEqual(await entries({ system: MV, concept: [{ code: 'a' }] }), ['b|1.0.0', 'b|2.0.0', 'c|2.0.0']);
      assert.deepEqual(await entries({ system: MV, version: '1.0.0', concept: [{ code: 'a' }] }), ['b|1.0.0', 'a|2.0.0', 'b|2.0.0', 'c|2.0.0']);
    });

    test('an unknown code in a fragment is a warning (not in message) and stays valid where the whole system is admitted', async () => {
      const text = `Unknown Code 'zz' in the CodeSystem '${FRAG}' version '1' - note that the code system is labeled as a fragment, so the code may be valid in some other fragment`;
      const cs = await post('/CodeSystem/$validate-code', [{ name: 'url', valueUri: FRAG }, { name: 'code', valueCode: 'zz' }]);
      assert.equal(out(cs.body, 'result'), true, cs.text);
      assert.equal(out(cs.body, 'message'), undefined);
      assert.equal(issueOf(cs.body)[0].severity, 'warning');
      assert.equal(issueOf(cs.body)[0].details?.text, text);
      // The message id is the fragment's own, not that of an unknown code.
      const MESSAGE_ID = 'http://hl7.org/fhir/StructureDefinition/operationoutcome-message-id';
      assert.deepEqual(issueOf(cs.body)[0].extension, [{ url: MESSAGE_ID, valueString: 'UNKNOWN_CODE_IN_FRAGMENT' }]);
      const all = await validate('http://example.org/fhir/ValueSet/rules-fragment-all', FRAG, 'zz');
      assert.equal(out(all.body, 'result'), true, all.text);
      const listed = await validate('http://example.org/fhir/ValueSet/rules-fragment-listed', FRAG, 'zz');
      assert.equal(out(listed.body, 'result'), false, listed.text);
      // an expansion drawing on a fragment is not closed, says why, and names the fragment used
      const expanded = await server.fhir<Answer>('GET', '/ValueSet/$expand?url=http://example.org/fhir/ValueSet/rules-fragment-all');
      assert.equal(expanded.status, 200, expanded.text);
      assert.deepEqual(expanded.body.expansion?.extension, [
        { url: 'http://hl7.org/fhir/StructureDefinition/valueset-unclosed', valueBoolean: true },
        { url: 'http://hl7.org/fhir/StructureDefinition/valueset-unclosed-reason', valueString: `This extension is based on a fragment of the code system ${FRAG}` },
      ]);
      assert.deepEqual(
        expanded.body.expansion?.parameter?.filter((p) => p.name.startsWith('used-')),
        [{ name: 'used-codesystem', valueUri: `${FRAG}|1` }, { name: 'used-fragment', valueUri: `${FRAG}|1` }],
      );
      const closed = await server.fhir<Answer>('GET', '/ValueSet/$expand?url=http://example.org/fhir/ValueSet/rules-all');
      assert.equal(closed.body.expansion?.extension, undefined);
    });

    test('a concept listed as deprecated in the value set validates with a warning', async () => {
      const res = await validate('http://example.org/fhir/ValueSet/rules-listed-deprecated', CS, 'one');
      assert.equal(out(res.body, 'result'), true, res.text);
      const [issue] = issueOf(res.body);
      assert.equal(issue.severity, 'warning');
      assert.equal(issue.code, 'business-rule');
      assert.equal(issue.details?.coding?.[0].code, 'code-comment');
      assert.equal(
        issue.details?.text,
        `The presence of the concept 'one' in the system '${CS}' in the value set http://example.org/fhir/ValueSet/rules-listed-deprecated|1 is marked with a status of deprecated and its use should be reviewed`,
      );
      const plain = await validate('http://example.org/fhir/ValueSet/rules-listed-deprecated', CS, 'two');
      assert.equal(out(plain.body, 'result'), true);
      assert.equal(out(plain.body, 'issues'), undefined);
    });
  });
}
