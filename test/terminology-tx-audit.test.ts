import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { CodeSystem, OperationOutcome, Parameters, ParametersParameter, ValueSet } from '@medplum/fhirtypes';
import { out } from './support/terminology-client.js';
import { drivers, startServer, type ApiResponse, type TestServer } from './harness.js';

/**
 * Terminology rules of the HL7 tx-ecosystem specification found by auditing the specification
 * against the server (docs/terminology.md): a value set naming several versions of one code
 * system (overloaded versions), supplements used where a code system is expected.
 * Every resource is stored by PUT, so both drivers answer from their own index.
 */

const CS = 'http://example.org/fhir/CodeSystem/audit';
const SUP = 'http://example.org/fhir/CodeSystem/audit-fr';
const VS = 'http://example.org/fhir/ValueSet/';

const auditCs = (version: string, concepts: CodeSystem['concept']): CodeSystem => ({
  resourceType: 'CodeSystem',
  id: `audit-${version.replace(/\./g, '-')}`,
  url: CS,
  version,
  status: 'active',
  content: 'complete',
  language: 'en',
  concept: concepts,
});

/** Version 1 and 2 share `red` (with different displays); `blue` is only in 1, `green` only in 2. */
const V1 = auditCs('1.0.0', [
  { code: 'red', display: 'Red' },
  { code: 'blue', display: 'Blue' },
]);
const V2 = auditCs('2.0.0', [
  { code: 'red', display: 'Crimson', designation: [{ language: 'de', value: 'Rot' }] },
  { code: 'green', display: 'Green' },
]);

const SUPPLEMENT: CodeSystem = {
  resourceType: 'CodeSystem',
  id: 'audit-fr',
  url: SUP,
  version: '0.2.0',
  status: 'active',
  content: 'supplement',
  supplements: CS,
  concept: [{ code: 'red', designation: [{ language: 'fr', value: 'Rouge' }] }],
};

const STANDARDS_STATUS = 'http://hl7.org/fhir/StructureDefinition/structuredefinition-standards-status';
const LIFE = 'http://example.org/fhir/CodeSystem/audit-life';

/** Concepts whose status says what they are: active, withdrawn (standards status), inactive. */
const LIFECYCLE: CodeSystem = {
  resourceType: 'CodeSystem',
  id: 'audit-life',
  url: LIFE,
  version: '1',
  status: 'active',
  content: 'complete',
  property: [{ code: 'status', uri: 'http://hl7.org/fhir/concept-properties#status', type: 'code' }],
  concept: [
    { code: 'current', display: 'Current', property: [{ code: 'status', valueCode: 'active' }] },
    { code: 'gone', display: 'Gone', extension: [{ url: STANDARDS_STATUS, valueCode: 'withdrawn' }] },
    { code: 'off', display: 'Off', property: [{ code: 'status', valueCode: 'inactive' }] },
  ],
};

const vs = (id: string, compose: ValueSet['compose']): ValueSet => ({ resourceType: 'ValueSet', id, url: `${VS}${id}`, status: 'active', compose });

for (const driver of drivers) {
  describe(`terminology audit rules (${driver})`, () => {
    let server: TestServer;
    const put = async (r: CodeSystem | ValueSet) => {
      const res = await server.fhir('PUT', `/${r.resourceType}/${r.id}`, { body: r });
      assert.ok(res.status === 200 || res.status === 201, `${r.resourceType}/${r.id}: ${res.status} ${res.text}`);
    };
    type Answer = Omit<Parameters, 'resourceType'> & { resourceType: string; expansion?: ValueSet['expansion']; issue?: OperationOutcome['issue'] };
    const post = (path: string, parameter: ParametersParameter[]): Promise<ApiResponse<Answer>> =>
      server.fhir('POST', path, { body: { resourceType: 'Parameters', parameter } });
    const validate = (id: string, coding: { system: string; code: string; version?: string; display?: string }) =>
      post('/ValueSet/$validate-code', [{ name: 'url', valueUri: `${VS}${id}` }, { name: 'coding', valueCoding: coding }]);
    const issues = (body: Answer) =>
      ((out(body, 'issues') as OperationOutcome | undefined)?.issue ?? []).map((i) => [i.severity, i.code, i.details?.coding?.[0]?.code, i.details?.text, i.expression?.[0]]);

    before(async () => {
      server = await startServer(driver);
      for (const r of [V1, V2, SUPPLEMENT, LIFECYCLE]) await put(r);
      await put(vs('audit-life', { include: [{ system: LIFE }] }));
      // Document order: the older version first.
      await put(vs('audit-overload', { include: [{ system: CS, version: '1.0.0' }, { system: CS, version: '2.0.0' }] }));
      await put(vs('audit-all', { include: [{ system: CS }] }));
    });
    after(() => server?.stop());

    test('overloaded versions: a code both versions have is validated at the newest', async () => {
      const res = await validate('audit-overload', { system: CS, code: 'red' });
      assert.equal(res.status, 200, res.text);
      assert.equal(out(res.body, 'result'), true);
      assert.equal(out(res.body, 'version'), '2.0.0');
      assert.equal(out(res.body, 'display'), 'Crimson');
    });

    test('overloaded versions: the version whose concept has the given display (or designation) wins', async () => {
      const old = await validate('audit-overload', { system: CS, code: 'red', display: 'Red' });
      assert.equal(out(old.body, 'result'), true, old.text);
      assert.equal(out(old.body, 'version'), '1.0.0');
      assert.equal(out(old.body, 'display'), 'Red');
      const designation = await validate('audit-overload', { system: CS, code: 'red', display: 'Rot' });
      assert.equal(out(designation.body, 'result'), true, designation.text);
      assert.equal(out(designation.body, 'version'), '2.0.0');
    });

    test('overloaded versions: a code only one version has is validated there', async () => {
      const blue = await validate('audit-overload', { system: CS, code: 'blue' });
      assert.equal(out(blue.body, 'result'), true, blue.text);
      assert.equal(out(blue.body, 'version'), '1.0.0');
    });

    test("overloaded versions: a coding's version that an include names selects that include only", async () => {
      const res = await validate('audit-overload', { system: CS, code: 'green', version: '1.0.0' });
      assert.equal(out(res.body, 'result'), false, res.text);
      assert.equal(out(res.body, 'version'), '1.0.0');
      assert.deepEqual(issues(res.body), [
        ['error', 'code-invalid', 'invalid-code', `Unknown code 'green' in the CodeSystem '${CS}' version '1.0.0'`, 'Coding.code'],
        ['error', 'code-invalid', 'not-in-vs', `The provided code '${CS}|1.0.0#green' was not found in the value set '${VS}audit-overload'`, 'Coding.code'],
      ]);
    });

    test('overloaded versions: a code no version has is reported at the newest', async () => {
      const res = await validate('audit-overload', { system: CS, code: 'purple' });
      assert.equal(out(res.body, 'result'), false, res.text);
      assert.equal(out(res.body, 'version'), '2.0.0');
      assert.equal(
        out(res.body, 'message'),
        `Unknown code 'purple' in the CodeSystem '${CS}' version '2.0.0'; The provided code '${CS}#purple' was not found in the value set '${VS}audit-overload'`,
      );
    });

    test('a supplement is not a code system: ValueSet/$validate-code of a coding in it', async () => {
      const res = await validate('audit-all', { system: SUP, code: 'red' });
      assert.equal(res.status, 200, res.text);
      assert.equal(out(res.body, 'result'), false);
      assert.equal(out(res.body, 'x-unknown-system'), undefined);
      assert.deepEqual(issues(res.body), [
        ['error', 'invalid', 'invalid-data', `CodeSystem ${SUP}|0.2.0 is a supplement, so can't be used as a value in Coding.system`, 'Coding.system'],
        ['error', 'code-invalid', 'not-in-vs', `The provided code '${SUP}#red' was not found in the value set '${VS}audit-all'`, 'Coding.code'],
      ]);
    });

    test('a supplement is not a code system: CodeSystem/$validate-code, $lookup, and an include of it', async () => {
      const cs = await post('/CodeSystem/$validate-code', [{ name: 'url', valueUri: SUP }, { name: 'code', valueCode: 'red' }]);
      assert.equal(cs.status, 200, cs.text);
      assert.equal(out(cs.body, 'result'), false);
      assert.equal(out(cs.body, 'message'), `CodeSystem ${SUP}|0.2.0 is a supplement, so can't be used as a value in Coding.system`);
      assert.deepEqual(issues(cs.body), [['error', 'invalid', 'invalid-data', `CodeSystem ${SUP}|0.2.0 is a supplement, so can't be used as a value in Coding.system`, 'system']]);
      const lookup = await post('/CodeSystem/$lookup', [{ name: 'system', valueUri: SUP }, { name: 'code', valueCode: 'red' }]);
      assert.equal(lookup.status, 404, lookup.text);
      assert.equal(lookup.body.issue?.[0].details?.text, `CodeSystem ${SUP} not found`);
      const expand = await post('/ValueSet/$expand', [{ name: 'valueSet', resource: vs('audit-sup', { include: [{ system: SUP }] }) }]);
      assert.equal(expand.status, 400, expand.text);
      assert.equal(expand.body.issue?.[0].details?.text, `A definition for CodeSystem '${SUP}' could not be found, so the value set cannot be expanded`);
      // Still usable as what it is.
      const used = await post('/CodeSystem/$lookup', [
        { name: 'system', valueUri: CS },
        { name: 'code', valueCode: 'red' },
        { name: 'useSupplement', valueCanonical: SUP },
      ]);
      assert.equal(used.status, 200, used.text);
      assert.equal(out(used.body, 'used-supplement'), `${SUP}|0.2.0`);
    });

    test('an expansion states a status other than active, and a withdrawn concept is inactive', async () => {
      const all = await post('/ValueSet/$expand', [{ name: 'url', valueUri: `${VS}audit-life` }]);
      assert.equal(all.status, 200, all.text);
      const property = 'http://hl7.org/fhir/5.0/StructureDefinition/extension-ValueSet.expansion.contains.property';
      assert.deepEqual(
        all.body.expansion?.contains?.map((c) => [c.code, c.inactive, c.extension?.filter((e) => e.url === property).map((e) => e.extension?.[1]?.valueCode)]),
        [['current', undefined, undefined], ['gone', true, ['withdrawn']], ['off', true, ['inactive']]],
      );
      const active = await post('/ValueSet/$expand', [{ name: 'url', valueUri: `${VS}audit-life` }, { name: 'activeOnly', valueBoolean: true }]);
      assert.deepEqual(active.body.expansion?.contains?.map((c) => c.code), ['current']);
    });

    test('validate-code of a withdrawn concept: inactive, status withdrawn; of an inactive-status one: no status output', async () => {
      const gone = await validate('audit-life', { system: LIFE, code: 'gone' });
      assert.equal(out(gone.body, 'result'), true, gone.text);
      assert.equal(out(gone.body, 'inactive'), true);
      assert.equal(out(gone.body, 'status'), 'withdrawn');
      assert.deepEqual(issues(gone.body), [['warning', 'business-rule', 'code-comment', "The concept 'gone' has a status of withdrawn and inactive and its use should be reviewed", 'Coding']]);
      const off = await validate('audit-life', { system: LIFE, code: 'off' });
      assert.equal(out(off.body, 'inactive'), true, off.text);
      assert.equal(out(off.body, 'status'), undefined);
      assert.equal(out(off.body, 'message'), "The concept 'off' has a status of inactive and its use should be reviewed");
    });
  });
}
