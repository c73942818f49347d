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

    describe('Bundle, extension and Questionnaire rules', () => {
      test('$validate reports them with their expressions; create refuses with 400; a valid instance passes both', async () => {
        const bad = { resourceType: 'Bundle', type: 'collection', entry: [{ fullUrl: 'http://s/Patient/1', resource: { resourceType: 'Patient', id: '2' } }] };
        const good = { resourceType: 'Bundle', type: 'collection', entry: [{ fullUrl: 'http://s/Patient/2', resource: { resourceType: 'Patient', id: '2' } }] };
        assert.deepEqual(errors(await validate(bad)), ["error fullUrl 'http://s/Patient/1' does not match the resource id '2' @ Bundle.entry[0].fullUrl"]);
        assert.deepEqual(errors(await validate(good)), []);
        const refused = await server.fhir('POST', '/Bundle', { body: bad });
        assert.equal(refused.status, 400);
        assert.deepEqual(issues(refused.body), ["error fullUrl 'http://s/Patient/1' does not match the resource id '2' @ Bundle.entry[0].fullUrl"]);
        assert.equal((await server.fhir('POST', '/Bundle', { body: good })).status, 201);

        const ext = { resourceType: 'Patient', extension: [{ url: 'http://x.org/a', valueString: 'v', extension: [{ url: 'b', valueString: 'w' }] }] };
        assert.deepEqual(errors(await validate(ext)), ['error ext-1: An extension must have either extensions or value[x], not both @ Patient.extension[0]']);
        assert.equal((await server.fhir('POST', '/Patient', { body: ext })).status, 400);

        const questionnaire = { resourceType: 'Questionnaire', status: 'active', item: [{ linkId: 'a', type: 'string', enableWhen: [{ question: 'b', operator: 'exists', answerBoolean: true }] }] };
        assert.deepEqual(errors(await validate(questionnaire)), ["error enableWhen.question 'b' is not the linkId of an item of this Questionnaire @ Questionnaire.item[0].enableWhen[0].question"]);
        assert.equal((await server.fhir('POST', '/Questionnaire', { body: questionnaire })).status, 400);
      });
    });

    describe('QuestionnaireResponse against its Questionnaire', () => {
      const url = `http://example.org/Questionnaire/intake-${driver}`;
      before(async () => {
        const created = await server.fhir('POST', '/Questionnaire', {
          body: {
            resourceType: 'Questionnaire',
            url,
            status: 'active',
            item: [
              { linkId: 'name', type: 'string', required: true },
              { linkId: 'gender', type: 'choice', answerValueSet: 'http://hl7.org/fhir/ValueSet/administrative-gender' },
            ],
          },
        });
        assert.equal(created.status, 201, created.text);
      });
      const response = (item: unknown[], questionnaire = url) => ({ resourceType: 'QuestionnaireResponse', status: 'completed', questionnaire, item });

      test('the stored Questionnaire is looked up: a wrong answer type is an error, on $validate and on create', async () => {
        const bad = response([{ linkId: 'name', answer: [{ valueBoolean: true }] }]);
        assert.deepEqual(errors(await validate(bad)), ['error An answer to a string item must be valueString, not valueBoolean @ QuestionnaireResponse.item[0].answer[0]']);
        const refused = await server.fhir('POST', '/QuestionnaireResponse', { body: bad });
        assert.equal(refused.status, 400);
        assert.deepEqual(issues(refused.body), ['error An answer to a string item must be valueString, not valueBoolean @ QuestionnaireResponse.item[0].answer[0]']);
        const good = response([{ linkId: 'name', answer: [{ valueString: 'Ann' }] }, { linkId: 'gender', answer: [{ valueCoding: { system: 'http://hl7.org/fhir/administrative-gender', code: 'female' } }] }]);
        assert.deepEqual(errors(await validate(good)), []);
        assert.equal((await server.fhir('POST', '/QuestionnaireResponse', { body: good })).status, 201);
      });

      test('a required item missing from a completed response, and an answer outside the answerValueSet', async () => {
        const bad = response([{ linkId: 'gender', answer: [{ valueCoding: { system: 'http://hl7.org/fhir/administrative-gender', code: 'robot' } }] }]);
        assert.deepEqual(errors(await validate(bad)), [
          "error The required item 'name' is missing from a completed response @ QuestionnaireResponse",
          "error The answer 'http://hl7.org/fhir/administrative-gender|robot' is not in the answer value set http://hl7.org/fhir/ValueSet/administrative-gender @ QuestionnaireResponse.item[0].answer[0]",
        ]);
      });

      test('a Questionnaire not found is a warning, and the write is accepted', async () => {
        const orphan = response([{ linkId: 'x', answer: [{ valueBoolean: true }] }], 'http://example.org/Questionnaire/none');
        assert.deepEqual(issues(await validate(orphan)), [
          "warning The Questionnaire 'http://example.org/Questionnaire/none' was not found: the answers were not checked against it @ QuestionnaireResponse.questionnaire",
        ]);
        assert.equal((await server.fhir('POST', '/QuestionnaireResponse', { body: orphan })).status, 201);
      });
    });
  });
}
