import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { OperationOutcomeIssue } from '@medplum/fhirtypes';
import { drivers, startServer, type TestServer } from './harness.js';

/** `text @ expression` of each issue, as the contract states them. */
const issues = (body: { issue?: OperationOutcomeIssue[] }) => (body.issue ?? []).map((i) => `${i.severity} ${i.details?.text}${i.expression ? ` @ ${i.expression.join(',')}` : ''}`);
const errors = (body: { issue?: OperationOutcomeIssue[] }) => issues({ issue: (body.issue ?? []).filter((i) => i.severity === 'error' || i.severity === 'fatal') });

for (const driver of drivers) {
  describe(`base validation rules beyond the definitions (${driver})`, () => {
    let server: TestServer;
    before(async () => {
      server = await startServer(driver);
    });
    after(() => server.stop());

    const validate = async (resource: Record<string, unknown>) => {
      const res = await server.fhir('POST', `/${String(resource.resourceType)}/$validate`, { body: resource });
      assert.equal(res.status, 200, res.text);
      return res.body;
    };

    describe('JSON body', () => {
      test('a malformed body lists every syntax problem with line and column', async () => {
        const raw = '{\n  "resourceType": "Patient",\n  "active": tru,\n  "gender" "male"\n}';
        for (const path of ['/Patient', '/Patient/$validate']) {
          const res = await server.fhir('POST', path, { raw, contentType: 'application/fhir+json' });
          assert.equal(res.status, 400);
          assert.deepEqual(issues(res.body), [
            'error Content could not be parsed',
            "error Line 3, column 13: Unexpected 'tru': expected a string, number, object, array, true, false or null",
            "error Line 4, column 12: Expected ':' after property name 'gender'",
          ]);
          assert.deepEqual(res.body.issue[2].extension, [
            { url: 'http://hl7.org/fhir/StructureDefinition/operationoutcome-issue-line', valueInteger: 4 },
            { url: 'http://hl7.org/fhir/StructureDefinition/operationoutcome-issue-col', valueInteger: 12 },
          ]);
        }
      });

      test('a repeated property name is refused; unique names pass', async () => {
        const dup = await server.fhir('POST', '/Patient', { raw: '{"resourceType": "Patient", "gender": "male", "gender": "female"}', contentType: 'application/fhir+json' });
        assert.equal(dup.status, 400);
        assert.deepEqual(issues(dup.body), ["error Line 1, column 47: Duplicate property 'gender': a JSON object must not repeat a name"]);
        const ok = await server.fhir('POST', '/Patient', { raw: '{"resourceType": "Patient", "gender": "male", "name": [{"gender": "x"}]}', contentType: 'application/fhir+json' });
        assert.equal(ok.status, 400); // name.gender is unknown: the structure check, not the JSON one
        assert.deepEqual(issues(ok.body), ["error Unknown element 'gender' in HumanName @ Patient.name[0].gender"]);
        const good = await server.fhir('POST', '/Patient', { raw: '{"resourceType": "Patient", "gender": "male"}', contentType: 'application/fhir+json' });
        assert.equal(good.status, 201);
      });
    });
  });
}
