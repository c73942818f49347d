import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { CodeSystem, OperationOutcome, OperationOutcomeIssue, Parameters, ParametersParameter, ValueSet } from '@medplum/fhirtypes';
import { out } from './support/terminology-client.js';
import { drivers, startServer, type ApiResponse, type TestServer } from './harness.js';

/**
 * The status of the resources a request uses (docs/terminology.md#status-of-the-resources-used):
 * deprecated / withdrawn / retired code systems and value sets, and experimental / draft ones
 * used by a value set that is not, are informational `status-check` issues of $validate-code
 * and `warning-<status>` parameters of $expand; the value set's own definition elements are
 * left out of an expansion unless includeDefinition. Stored by PUT and supplied inline.
 */

const BASE = 'http://example.org/fhir/status';
const STANDARDS_STATUS = 'http://hl7.org/fhir/StructureDefinition/structuredefinition-standards-status';

const cs = (id: string, extra: Partial<CodeSystem>): CodeSystem => ({
  resourceType: 'CodeSystem',
  id,
  url: `${BASE}/CodeSystem/${id}`,
  version: '1.0',
  status: 'active',
  content: 'complete',
  concept: [{ code: 'a', display: 'A' }],
  ...extra,
});

const vs = (id: string, include: ValueSet['compose'], extra: Partial<ValueSet> = {}): ValueSet => ({
  resourceType: 'ValueSet',
  id,
  url: `${BASE}/ValueSet/${id}`,
  version: '2.0',
  status: 'active',
  compose: include,
  ...extra,
});

const DEPRECATED = cs('deprecated', { extension: [{ url: STANDARDS_STATUS, valueCode: 'deprecated' }] });
const DRAFT = cs('draft', { status: 'draft' });
const EXPERIMENTAL = cs('experimental', { experimental: true });
const PLAIN = cs('plain', {
  concept: [
    { code: 'a', display: 'A' },
    { code: 'old', display: 'Old', extension: [{ url: STANDARDS_STATUS, valueCode: 'deprecated' }] },
    { code: 'gone', display: 'Gone', property: [{ code: 'inactive', valueBoolean: true }] },
  ],
});
const WITHDRAWN_VS = vs('withdrawn', { include: [{ system: PLAIN.url }] }, { status: 'retired', extension: [{ url: STANDARDS_STATUS, valueCode: 'withdrawn' }] });
const RETIRED_VS = vs('retired', { include: [{ system: PLAIN.url }] }, { status: 'retired' });

/** The status-check issue the rule produces for `text` (exact shape). */
const statusIssue = (id: string, text: string): OperationOutcomeIssue => ({
  extension: [{ url: 'http://hl7.org/fhir/StructureDefinition/operationoutcome-message-id', valueString: id }],
  severity: 'information',
  code: 'business-rule',
  details: { coding: [{ system: 'http://hl7.org/fhir/tools/CodeSystem/tx-issue-type', code: 'status-check' }], text },
});

for (const driver of drivers) {
  describe(`terminology: status of the resources used (${driver})`, () => {
    let server: TestServer;
    type Answer = Omit<Parameters, 'resourceType'> & { resourceType: string; expansion?: ValueSet['expansion']; issue?: OperationOutcome['issue'] } & Partial<ValueSet>;
    const post = (path: string, parameter: ParametersParameter[]): Promise<ApiResponse<Answer>> =>
      server.fhir('POST', path, { body: { resourceType: 'Parameters', parameter } });
    const validate = (v: ValueSet, system: string, more: ParametersParameter[] = []) =>
      post('/ValueSet/$validate-code', [{ name: 'valueSet', resource: v }, { name: 'system', valueUri: system }, { name: 'code', valueCode: 'a' }, ...more]);
    const expand = (v: ValueSet, more: ParametersParameter[] = []) => post('/ValueSet/$expand', [{ name: 'valueSet', resource: v }, ...more]);
    const statusIssues = (body: Answer) => ((out(body, 'issues') as OperationOutcome | undefined)?.issue ?? []).filter((i) => i.details?.coding?.[0].code === 'status-check');
    const warnings = (body: Answer) => (body.expansion?.parameter ?? []).filter((p) => p.name.startsWith('warning-')).map((p) => `${p.name} ${p.valueUri}`);

    before(async () => {
      server = await startServer(driver);
      for (const r of [DEPRECATED, DRAFT, EXPERIMENTAL, PLAIN, WITHDRAWN_VS, RETIRED_VS]) {
        const res = await server.fhir('PUT', `/${r.resourceType}/${r.id}`, { body: r });
        assert.ok(res.status === 200 || res.status === 201, res.text);
      }
    });
    after(() => server?.stop());

    test('$validate-code: a deprecated code system is an information issue, outside message and result', async () => {
      const res = await validate(vs('uses-deprecated', { include: [{ system: DEPRECATED.url }] }), DEPRECATED.url as string);
      assert.equal(res.status, 200, res.text);
      assert.equal(out(res.body, 'result'), true);
      assert.equal(out(res.body, 'message'), undefined);
      assert.deepEqual(statusIssues(res.body), [statusIssue('MSG_DEPRECATED', `Reference to deprecated CodeSystem ${DEPRECATED.url}|1.0`)]);
    });

    test('$validate-code: draft and experimental code systems are reported when the value set is not draft / experimental', async () => {
      const draft = await validate(vs('uses-draft', { include: [{ system: DRAFT.url }] }), DRAFT.url as string);
      assert.deepEqual(statusIssues(draft.body), [statusIssue('MSG_DRAFT', `Reference to draft CodeSystem ${DRAFT.url}|1.0`)]);
      const draftByDraft = await validate(vs('draft-uses-draft', { include: [{ system: DRAFT.url }] }, { status: 'draft' }), DRAFT.url as string);
      assert.deepEqual(statusIssues(draftByDraft.body), []);
      const experimental = await validate(vs('uses-experimental', { include: [{ system: EXPERIMENTAL.url }] }), EXPERIMENTAL.url as string);
      assert.deepEqual(statusIssues(experimental.body), [statusIssue('MSG_EXPERIMENTAL', `Reference to experimental CodeSystem ${EXPERIMENTAL.url}|1.0`)]);
      const experimentalByExperimental = await validate(vs('exp-uses-exp', { include: [{ system: EXPERIMENTAL.url }] }, { experimental: true }), EXPERIMENTAL.url as string);
      assert.deepEqual(statusIssues(experimentalByExperimental.body), []);
      const plain = await validate(vs('uses-plain', { include: [{ system: PLAIN.url }] }), PLAIN.url as string);
      assert.equal(out(plain.body, 'issues'), undefined, plain.text);
    });

    test('$validate-code: the value set itself (withdrawn, retired) and the value sets it imports are reported', async () => {
      const withdrawn = await post('/ValueSet/$validate-code', [{ name: 'url', valueUri: WITHDRAWN_VS.url }, { name: 'system', valueUri: PLAIN.url }, { name: 'code', valueCode: 'a' }]);
      assert.equal(out(withdrawn.body, 'result'), true, withdrawn.text);
      assert.deepEqual(statusIssues(withdrawn.body), [statusIssue('MSG_WITHDRAWN', `Reference to withdrawn ValueSet ${WITHDRAWN_VS.url}|2.0`)]);
      const importer = await validate(vs('imports-retired', { include: [{ valueSet: [RETIRED_VS.url as string] }] }), PLAIN.url as string);
      assert.equal(out(importer.body, 'result'), true, importer.text);
      assert.deepEqual(statusIssues(importer.body), [statusIssue('MSG_RETIRED', `Reference to retired ValueSet ${RETIRED_VS.url}|2.0`)]);
    });

    test('a deprecated concept is valid with the DEPRECATED_CONCEPT_FOUND warning and the status output', async () => {
      const res = await post('/ValueSet/$validate-code', [{ name: 'valueSet', resource: vs('plain-all', { include: [{ system: PLAIN.url }] }) }, { name: 'coding', valueCoding: { system: PLAIN.url, code: 'old' } }]);
      assert.equal(out(res.body, 'result'), true, res.text);
      assert.equal(out(res.body, 'status'), 'deprecated');
      assert.equal(out(res.body, 'inactive'), undefined);
      assert.equal(out(res.body, 'message'), "The concept 'old' is deprecated and its use should be reviewed");
      const [issue] = (out(res.body, 'issues') as OperationOutcome).issue ?? [];
      assert.deepEqual(issue, {
        extension: [{ url: 'http://hl7.org/fhir/StructureDefinition/operationoutcome-message-id', valueString: 'DEPRECATED_CONCEPT_FOUND' }],
        severity: 'warning',
        code: 'business-rule',
        details: { coding: [{ system: 'http://hl7.org/fhir/tools/CodeSystem/tx-issue-type', code: 'code-comment' }], text: "The concept 'old' is deprecated and its use should be reviewed" },
        expression: ['Coding'],
      });
    });

    test('$expand: an inactive concept says why in its status property (inactive when it states no status)', async () => {
      const res = await expand(vs('plain-expand', { include: [{ system: PLAIN.url }] }));
      assert.equal(res.status, 200, res.text);
      const statusOf = (code: string) =>
        res.body.expansion?.contains
          ?.find((c) => c.code === code)
          ?.extension?.find((e) => e.url === 'http://hl7.org/fhir/5.0/StructureDefinition/extension-ValueSet.expansion.contains.property')
          ?.extension?.find((e) => e.url === 'value')?.valueCode;
      assert.equal(statusOf('gone'), 'inactive');
      assert.equal(res.body.expansion?.contains?.find((c) => c.code === 'gone')?.inactive, true);
      assert.equal(statusOf('old'), 'deprecated');
      assert.equal(statusOf('a'), undefined);
    });

    test('CodeSystem/$validate-code: the code system is used by an active value set', async () => {
      const res = await post('/CodeSystem/$validate-code', [{ name: 'url', valueUri: DRAFT.url }, { name: 'code', valueCode: 'a' }]);
      assert.equal(out(res.body, 'result'), true, res.text);
      assert.deepEqual(statusIssues(res.body), [statusIssue('MSG_DRAFT', `Reference to draft CodeSystem ${DRAFT.url}|1.0`)]);
    });

    test('a code system supplied inline (tx-resource) states its status too', async () => {
      const inline = cs('inline-deprecated', { url: `${BASE}/CodeSystem/inline`, extension: [{ url: STANDARDS_STATUS, valueCode: 'withdrawn' }] });
      const res = await validate(vs('uses-inline', { include: [{ system: inline.url }] }), inline.url as string, [{ name: 'tx-resource', resource: inline }]);
      assert.equal(out(res.body, 'result'), true, res.text);
      assert.deepEqual(statusIssues(res.body), [statusIssue('MSG_WITHDRAWN', `Reference to withdrawn CodeSystem ${inline.url}|1.0`)]);
    });

    test('$expand: each finding is a warning-<status> parameter naming the resource', async () => {
      const res = await expand(
        vs('expand-mixed', { include: [{ system: DEPRECATED.url }, { system: DRAFT.url }, { system: EXPERIMENTAL.url }, { valueSet: [RETIRED_VS.url as string] }] }),
      );
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(warnings(res.body).sort(), [
        `warning-deprecated ${DEPRECATED.url}|1.0`,
        `warning-draft ${DRAFT.url}|1.0`,
        `warning-experimental ${EXPERIMENTAL.url}|1.0`,
        `warning-retired ${RETIRED_VS.url}|2.0`,
      ]);
      const own = await server.fhir<Answer>('GET', `/ValueSet/$expand?url=${WITHDRAWN_VS.url}`);
      assert.deepEqual(warnings(own.body), [`warning-withdrawn ${WITHDRAWN_VS.url}|2.0`]);
      const none = await expand(vs('expand-plain', { include: [{ system: PLAIN.url }] }));
      assert.deepEqual(warnings(none.body), []);
    });

    test('$expand leaves out the value set extensions and descriptive elements unless includeDefinition', async () => {
      const described = vs('described', { include: [{ system: PLAIN.url }] }, {
        description: 'Described',
        publisher: 'Someone',
        purpose: 'Testing',
        extension: [{ url: 'http://example.org/some-extension', valueString: 'x' }],
      });
      const plain = await expand(described);
      assert.equal(plain.status, 200, plain.text);
      for (const k of ['extension', 'description', 'publisher', 'purpose']) assert.equal(plain.body[k as keyof Answer], undefined, k);
      assert.equal(plain.body.url, described.url);
      const full = await expand(described, [{ name: 'includeDefinition', valueBoolean: true }]);
      assert.equal(full.body.description, 'Described');
      assert.deepEqual(full.body.extension, described.extension);
    });
  });
}
