import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createMember, createProject, drivers, ooText, startServer, type ApiResponse, type TestMember, type TestServer } from './harness.js';

/**
 * `ConceptMap/$translate`, `ValueSet/$batch-validate-code`, `$versions` and
 * `GET [base]/metadata?mode=terminology` (docs/terminology.md#translate,
 * docs/terminology.md#batch-validate-code, docs/terminology.md#terminologycapabilities), over
 * real HTTP as a plain project member; maps belong to the member's project.
 */

const SRC = 'http://example.org/translate/source';
const TGT = 'http://example.org/translate/target';
const MAP_URL = 'http://example.org/translate/map';

const MAP = {
  resourceType: 'ConceptMap',
  url: MAP_URL,
  version: '1.0.0',
  status: 'active',
  sourceUri: 'http://example.org/translate/vs-source',
  targetUri: 'http://example.org/translate/vs-target',
  group: [
    {
      source: SRC,
      target: TGT,
      element: [
        { code: 's1', display: 'Source one', target: [{ code: 't1', equivalence: 'equivalent' }] },
        { code: 's2', target: [{ code: 't2', equivalence: 'wider' }, { code: 't3', equivalence: 'narrower' }] },
        { code: 's3', target: [{ code: 't9', equivalence: 'disjoint' }] },
      ],
      unmapped: { mode: 'fixed', code: 'other', display: 'Other' },
    },
  ],
};

const CS = {
  resourceType: 'CodeSystem',
  url: 'http://example.org/translate/cs',
  version: '0.1.0',
  status: 'active',
  content: 'complete',
  concept: [
    { code: 'a', display: 'A' },
    { code: 'b', display: 'B' },
  ],
};

type Entry = { name: string; part?: Entry[]; [key: string]: unknown };
function params(...parameter: Entry[]): unknown {
  return { resourceType: 'Parameters', parameter };
}
const value = (e: Entry | undefined) => e && Object.entries(e).find(([k]) => k.startsWith('value'))?.[1];
const out = (res: ApiResponse, name: string) => value(res.body?.parameter?.find((p: Entry) => p.name === name));
const matches = (res: ApiResponse): Array<Record<string, unknown>> =>
  (res.body?.parameter ?? [])
    .filter((p: Entry) => p.name === 'match')
    .map((m: Entry) => Object.fromEntries((m.part ?? []).map((p) => [p.name, value(p)])));

for (const driver of drivers) {
  describe(`ConceptMap/$translate, batch validation and terminology capabilities (${driver})`, () => {
    let server: TestServer;
    let other: TestMember;
    let mapId: string;
    let csId: string;
    const translate = (...p: Entry[]) => server.fhir('POST', '/ConceptMap/$translate', { body: params(...p) });

    before(async () => {
      server = await startServer(driver);
      const b = await createProject(server, 'Translate B');
      other = await createMember(server, b.projectId, { firstName: 'Other', lastName: 'Member' });
      const map = await server.fhir('POST', '/ConceptMap', { body: MAP });
      assert.equal(map.status, 201, map.text);
      mapId = map.body.id;
      const cs = await server.fhir('POST', '/CodeSystem', { body: CS });
      assert.equal(cs.status, 201, cs.text);
      csId = cs.body.id;
    });
    after(() => server?.stop());

    test('forwards: the targets of the code, with equivalence, relationship and the map it comes from', async () => {
      const res = await server.fhir('GET', `/ConceptMap/$translate?system=${encodeURIComponent(SRC)}&code=s2`);
      assert.equal(res.status, 200, res.text);
      assert.equal(out(res, 'result'), true);
      assert.deepEqual(matches(res), [
        { equivalence: 'wider', concept: { system: TGT, code: 't2' }, originMap: `${MAP_URL}|1.0.0`, relationship: 'source-is-narrower-than-target' },
        { equivalence: 'narrower', concept: { system: TGT, code: 't3' }, originMap: `${MAP_URL}|1.0.0`, relationship: 'source-is-broader-than-target' },
      ]);
    });

    test('the ecosystem names (sourceCode, sourceSystem, targetSystem) mean the same', async () => {
      const res = await translate({ name: 'sourceSystem', valueUri: SRC }, { name: 'sourceCode', valueCode: 's1' }, { name: 'targetSystem', valueUri: TGT });
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(
        matches(res).map((m) => m.concept),
        [{ system: TGT, code: 't1' }],
      );
    });

    test('in reverse (targetCode, or reverse=true): the source codes that map to the target, as `source`', async () => {
      const r5 = await translate({ name: 'targetSystem', valueUri: TGT }, { name: 'targetCode', valueCode: 't1' });
      assert.equal(r5.status, 200, r5.text);
      assert.deepEqual(matches(r5), [
        {
          equivalence: 'equivalent',
          concept: { system: TGT, code: 't1' },
          source: { system: SRC, code: 's1', display: 'Source one' },
          originMap: `${MAP_URL}|1.0.0`,
          relationship: 'equivalent',
        },
      ]);
      const r4 = await translate({ name: 'coding', valueCoding: { system: TGT, code: 't1' } }, { name: 'reverse', valueBoolean: true });
      assert.deepEqual(matches(r4), matches(r5));
    });

    test('a code the group does not list gets the unmapped target; disjoint alone is no translation', async () => {
      const unmapped = await translate({ name: 'system', valueUri: SRC }, { name: 'code', valueCode: 'zz' });
      assert.deepEqual(
        matches(unmapped).map((m) => [m.equivalence, m.concept]),
        [['relatedto', { system: TGT, code: 'other', display: 'Other' }]],
      );
      const disjoint = await translate({ name: 'system', valueUri: SRC }, { name: 'code', valueCode: 's3' });
      assert.equal(disjoint.status, 200, disjoint.text);
      assert.equal(out(disjoint, 'result'), false);
      assert.equal(out(disjoint, 'message'), `No translation found for ${SRC}#s3`);
      assert.equal(matches(disjoint)[0].equivalence, 'disjoint');
    });

    test('no map for the system: result false with a message', async () => {
      const res = await translate({ name: 'system', valueUri: 'http://example.org/unmapped' }, { name: 'code', valueCode: 'x' });
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.body.parameter, [
        { name: 'result', valueBoolean: false },
        { name: 'message', valueString: 'No translation found for http://example.org/unmapped#x' },
      ]);
    });

    test('by url (with conceptMapVersion), by instance, and a target value set that is not the map\'s', async () => {
      const byUrl = await translate({ name: 'url', valueUri: MAP_URL }, { name: 'conceptMapVersion', valueString: '1.0.0' }, { name: 'system', valueUri: SRC }, { name: 'code', valueCode: 's1' });
      assert.equal(out(byUrl, 'result'), true, byUrl.text);
      const instance = await server.fhir('GET', `/ConceptMap/${mapId}/$translate?system=${encodeURIComponent(SRC)}&code=s1`);
      assert.equal(out(instance, 'result'), true, instance.text);
      const elsewhere = await translate({ name: 'system', valueUri: SRC }, { name: 'code', valueCode: 's1' }, { name: 'target', valueUri: 'http://example.org/other-vs' });
      assert.equal(out(elsewhere, 'result'), false, elsewhere.text);
      const unknownVersion = await translate({ name: 'url', valueUri: `${MAP_URL}|2.0.0` }, { name: 'system', valueUri: SRC }, { name: 'code', valueCode: 's1' });
      assert.equal(unknownVersion.status, 404, unknownVersion.text);
      assert.equal(ooText(unknownVersion.body), `ConceptMap ${MAP_URL}|2.0.0 not found`);
    });

    test('a map sent with the request (conceptMap or tx-resource) is used, and replaces a stored one of the same url and version', async () => {
      const changed = structuredClone(MAP);
      changed.group[0].element[0].target[0].code = 'tX';
      const inline = await translate({ name: 'tx-resource', resource: changed }, { name: 'system', valueUri: SRC }, { name: 'code', valueCode: 's1' });
      assert.deepEqual(
        matches(inline).map((m) => m.concept),
        [{ system: TGT, code: 'tX' }],
      );
      const given = await translate({ name: 'conceptMap', resource: changed }, { name: 'system', valueUri: SRC }, { name: 'code', valueCode: 's1' });
      assert.deepEqual(
        matches(given).map((m) => m.concept),
        [{ system: TGT, code: 'tX' }],
      );
    });

    test("another project's member does not see the map", async () => {
      const asB = { token: other.token };
      const byUrl = await server.fhir('GET', `/ConceptMap/$translate?url=${encodeURIComponent(MAP_URL)}&system=${encodeURIComponent(SRC)}&code=s1`, asB);
      assert.equal(byUrl.status, 404, byUrl.text);
      assert.equal(ooText(byUrl.body), `ConceptMap ${MAP_URL} not found`);
      const bySystem = await server.fhir('GET', `/ConceptMap/$translate?system=${encodeURIComponent(SRC)}&code=s1`, asB);
      assert.equal(out(bySystem, 'result'), false, bySystem.text);
      const instance = await server.fhir('GET', `/ConceptMap/${mapId}/$translate?system=${encodeURIComponent(SRC)}&code=s1`, asB);
      assert.equal(instance.status, 404, instance.text);
    });

    test('errors: nothing to translate, no system, both directions, wrong types', async () => {
      const none = await translate();
      assert.equal(none.status, 400);
      assert.equal(ooText(none.body), 'No code specified');
      const noSystem = await translate({ name: 'code', valueCode: 's1' });
      assert.equal(noSystem.status, 400);
      assert.equal(ooText(noSystem.body), 'No code system specified');
      const both = await translate({ name: 'sourceCode', valueCode: 's1' }, { name: 'targetCode', valueCode: 't1' }, { name: 'system', valueUri: SRC });
      assert.equal(both.status, 400);
      assert.equal(ooText(both.body), 'Specify either a source code or a target code, not both');
      const wrongType = await translate({ name: 'system', valueUri: SRC }, { name: 'code', valueCode: 's1' }, { name: 'reverse', valueString: 'yes' });
      assert.equal(wrongType.status, 400);
      assert.equal(ooText(wrongType.body), "Parameter 'reverse' must be valueBoolean");
      const notAMap = await translate({ name: 'conceptMap', resource: { resourceType: 'Patient' } }, { name: 'system', valueUri: SRC }, { name: 'code', valueCode: 's1' });
      assert.equal(notAMap.status, 400);
      assert.equal(ooText(notAMap.body), "Parameter 'conceptMap' must be a ConceptMap resource");
      const complex = await server.fhir('GET', '/ConceptMap/$translate?coding=x');
      assert.equal(complex.status, 400);
      assert.equal(ooText(complex.body), 'Complex parameter coding (Coding) cannot be passed via query string');
    });

    test('batch: one $validate-code answer per validation, the request inputs as defaults', async () => {
      const vs = { resourceType: 'ValueSet', url: 'urn:uuid:2f1f4b9e-4a57-4a53-9c6e-0b9a1d1d1d1d', status: 'active', compose: { include: [{ system: CS.url, concept: [{ code: 'a' }] }] } };
      const res = await server.fhir('POST', '/ValueSet/$batch-validate-code', {
        body: params(
          { name: 'tx-resource', resource: vs },
          { name: 'url', valueUri: vs.url },
          { name: 'validation', resource: params({ name: 'coding', valueCoding: { system: CS.url, code: 'a' } }) },
          { name: 'validation', resource: params({ name: 'coding', valueCoding: { system: CS.url, code: 'b' } }) },
          { name: 'validation', resource: params({ name: 'codingX', valueCoding: { system: CS.url, code: 'a' } }) },
          { name: 'validation', resource: params({ name: 'coding', valueCoding: { system: CS.url, code: 'a' } }, { name: 'url', valueUri: 'http://example.org/no-such-vs' }) },
        ),
      });
      assert.equal(res.status, 200, res.text);
      const answers = res.body.parameter.map((p: { name: string; resource: { resourceType: string; parameter?: Entry[] } }) => {
        assert.equal(p.name, 'validation');
        return p.resource;
      });
      assert.equal(answers.length, 4);
      const result = (r: { parameter?: Entry[] }) => value(r.parameter?.find((p) => p.name === 'result'));
      assert.equal(result(answers[0]), true);
      assert.equal(result(answers[1]), false);
      assert.equal(answers[2].resourceType, 'OperationOutcome');
      assert.equal(
        ooText(answers[2]),
        'Unable to find code to validate (looked for coding | codeableConcept | code+system | code+inferSystem in parameters',
      );
      assert.equal(answers[3].resourceType, 'OperationOutcome');
      assert.equal(ooText(answers[3]), 'ValueSet http://example.org/no-such-vs not found');
    });

    test('batch: a validation that is not Parameters, and too many validations, are refused', async () => {
      const wrong = await server.fhir('POST', '/ValueSet/$batch-validate-code', { body: params({ name: 'validation', resource: { resourceType: 'Patient' } }) });
      assert.equal(wrong.status, 400, wrong.text);
      assert.equal(ooText(wrong.body), "Parameter 'validation' must be a Parameters resource");
      const many = Array.from({ length: 1001 }, () => ({ name: 'validation', resource: { resourceType: 'Parameters' } }));
      const tooMany = await server.fhir('POST', '/ValueSet/$batch-validate-code', { body: params(...many) });
      assert.equal(tooMany.status, 413, tooMany.text);
      assert.equal(ooText(tooMany.body), 'Too many validations: 1001 (at most 1000)');
      const none = await server.fhir('GET', '/ValueSet/$batch-validate-code');
      assert.equal(none.status, 200, none.text);
      assert.deepEqual(none.body, { resourceType: 'Parameters' });
    });

    test('instance-level CodeSystem/$validate-code naming another code system: result false with a message, not 404', async () => {
      for (const [given, entry] of [
        ['url', { name: 'url', valueUri: 'http://example.org/another' }],
        ['Coding.system', { name: 'coding', valueCoding: { system: 'http://example.org/another', code: 'a' } }],
      ] as const) {
        const res = await server.fhir('POST', `/CodeSystem/${csId}/$validate-code`, { body: params(entry as Entry, { name: 'code', valueCode: 'a' }) });
        assert.equal(res.status, 200, res.text);
        assert.equal(out(res, 'result'), false, res.text);
        const text = `The code system 'http://example.org/another' is not the code system '${CS.url}' the operation was invoked on`;
        assert.equal(out(res, 'message'), text);
        const issues = res.body.parameter.find((p: Entry) => p.name === 'issues').resource;
        assert.deepEqual(issues.issue[0].expression, [given]);
      }
      const same = await server.fhir('POST', `/CodeSystem/${csId}/$validate-code`, { body: params({ name: 'url', valueUri: CS.url }, { name: 'code', valueCode: 'a' }) });
      assert.equal(out(same, 'result'), true, same.text);
    });

    test('a pre-expanded value set of a code system the server does not know validates from its expansion', async () => {
      const system = 'http://example.org/not-on-this-server';
      const valueSet = {
        resourceType: 'ValueSet',
        url: 'http://example.org/pre-expanded',
        status: 'active',
        expansion: { timestamp: '2024-01-01T00:00:00Z', contains: [{ system, code: 'x', display: 'Ex' }] },
      };
      const validate = (code: string) =>
        server.fhir('POST', '/ValueSet/$validate-code', {
          body: params({ name: 'valueSet', resource: valueSet }, { name: 'coding', valueCoding: { system, code } }),
        });
      const listed = await validate('x');
      assert.equal(listed.status, 200, listed.text);
      assert.equal(out(listed, 'result'), true, listed.text);
      assert.equal(out(listed, 'display'), 'Ex');
      const unlisted = await validate('y');
      assert.equal(out(unlisted, 'result'), false, unlisted.text);
    });

    test('metadata?mode=terminology: the TerminologyCapabilities of what really answers (public)', async () => {
      const res = await server.fhir('GET', '/metadata?mode=terminology', { token: null });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.resourceType, 'TerminologyCapabilities');
      assert.equal(res.body.status, 'active');
      assert.equal(res.body.kind, 'instance');
      const names: string[] = res.body.expansion.parameter.map((p: { name: string }) => p.name);
      for (const name of ['activeOnly', 'count', 'offset', 'displayLanguage', 'includeDesignations', 'tx-resource']) assert.ok(names.includes(name), name);
      assert.ok(!names.includes('url') && !names.includes('valueSet'), 'value-set choice is not an expansion parameter');
      assert.deepEqual(res.body.translation, { needsMap: true });
      assert.deepEqual(res.body.closure, { translation: false });
      const gender = res.body.codeSystem.find((c: { uri: string }) => c.uri === 'http://hl7.org/fhir/administrative-gender');
      assert.deepEqual(gender, { uri: 'http://hl7.org/fhir/administrative-gender', version: [{ code: '4.0.1', isDefault: true }] });
      // A project's code systems are not public.
      assert.ok(!res.body.codeSystem.some((c: { uri: string }) => c.uri === CS.url));
      const bad = await server.fhir('GET', '/metadata?mode=everything', { token: null });
      assert.equal(bad.status, 400, bad.text);
      assert.equal(ooText(bad.body), "Invalid value 'everything' provided for parameter 'mode' (full, normative or terminology)");
    });

    test('metadata?mode=terminology is kept until a terminology change: the same statement asked again, built anew after one', async () => {
      // /metadata needs no token and answers every caller the same public statement.
      const first = await server.fhir('GET', '/metadata?mode=terminology', { token: null });
      assert.equal(first.status, 200, first.text);
      const again = await server.fhir('GET', '/metadata?mode=terminology', { token: null });
      assert.equal(again.body.date, first.body.date);
      assert.deepEqual(again.body, first.body);
      const created = await server.fhir('POST', '/CodeSystem', {
        body: { resourceType: 'CodeSystem', url: `http://example.org/fhir/CodeSystem/kept-capabilities-${Date.now()}`, status: 'active', content: 'complete', concept: [{ code: 'a' }] },
      });
      assert.equal(created.status, 201, created.text);
      const after = await server.fhir('GET', '/metadata?mode=terminology', { token: null });
      assert.equal(after.status, 200, after.text);
      assert.ok(after.body.date > first.body.date, `built again after the change (${first.body.date} → ${after.body.date})`);
      assert.deepEqual(after.body.codeSystem, first.body.codeSystem); // a project's code system is not public
    });

    test('the CapabilityStatement declares the terminology-server role, and $versions answers 4.0', async () => {
      const cs = await server.fhir('GET', '/metadata?mode=full', { token: null });
      assert.equal(cs.status, 200, cs.text);
      assert.deepEqual(cs.body.instantiates, ['http://hl7.org/fhir/CapabilityStatement/terminology-server']);
      assert.ok(cs.body.rest[0].operation.some((o: { name: string }) => o.name === 'versions'));
      const cm = cs.body.rest[0].resource.find((r: { type: string }) => r.type === 'ConceptMap');
      assert.ok(cm.operation.some((o: { name: string }) => o.name === 'translate'));
      const versions = await server.fhir('GET', '/$versions');
      assert.equal(versions.status, 200, versions.text);
      assert.deepEqual(versions.body, { resourceType: 'Parameters', parameter: [{ name: 'version', valueCode: '4.0' }, { name: 'default', valueCode: '4.0' }] });
    });
  });
}
