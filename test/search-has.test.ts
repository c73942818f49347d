import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { createProject, drivers, loginTokens, ooText, startServer, type ApiResponse, type TestProject, type TestServer } from './harness.js';

/**
 * Reverse chaining `_has` (docs/rest.md#chaining-and-includes), composite parameters
 * (docs/rest.md#composite-parameters) and `_text`/`_content` (docs/rest.md#text-search): exact
 * answers and texts, and the referencing resources `_has` looks at pass the caller's access
 * policy (a member who may read only laboratory observations learns nothing from the others).
 */
const ids = (res: ApiResponse): string[] => (res.body.entry ?? []).map((e: { resource: { id: string } }) => e.resource.id).sort();

function assertOutcome(res: ApiResponse, status: number, code: string, text: string): void {
  assert.equal(res.status, status, res.text);
  assert.equal(res.body.issue[0].code, code, res.text);
  assert.equal(ooText(res.body), text);
}

const LOINC = 'http://loinc.org';
const category = (code: string) => [{ coding: [{ system: 'http://terminology.hl7.org/CodeSystem/observation-category', code }] }];

for (const driver of drivers) {
  describe(`search: _has, composites, text (${driver})`, () => {
    let server: TestServer;
    let a: TestProject;
    let labOnly: string;
    const r: Record<string, string> = {};
    const post = async (key: string, body: Record<string, unknown>) => {
      const res = await server.fhir('POST', `/${body.resourceType as string}`, { token: a.adminToken, body });
      assert.equal(res.status, 201, res.text);
      r[key] = res.body.id;
    };
    before(async () => {
      server = await startServer(driver);
      a = await createProject(server, 'Has A');
      await post('ann', { resourceType: 'Patient', name: [{ family: 'Ann' }], text: { status: 'generated', div: '<div xmlns="http://www.w3.org/1999/xhtml">Ann has a quiet cough</div>' } });
      await post('bob', { resourceType: 'Patient', name: [{ family: 'Bob' }] });
      await post('cat', { resourceType: 'Patient', name: [{ family: 'Cat' }] });
      await post('annEnc', { resourceType: 'Encounter', status: 'finished', class: { code: 'AMB' }, subject: { reference: `Patient/${r.ann}` } });
      // Ann: a laboratory glucose of 120 mg/dL; Bob: a vital-signs glucose of 90 and a lab one of 70.
      await post('annLab', { resourceType: 'Observation', status: 'final', category: category('laboratory'), code: { coding: [{ system: LOINC, code: '2339-0' }] }, subject: { reference: `Patient/${r.ann}` }, encounter: { reference: `Encounter/${r.annEnc}` }, valueQuantity: { value: 120, system: 'http://unitsofmeasure.org', code: 'mg/dL' } });
      await post('bobVital', { resourceType: 'Observation', status: 'final', category: category('vital-signs'), code: { coding: [{ system: LOINC, code: '2339-0' }] }, subject: { reference: `Patient/${r.bob}` }, valueQuantity: { value: 90, system: 'http://unitsofmeasure.org', code: 'mg/dL' } });
      await post('bobLab', { resourceType: 'Observation', status: 'final', category: category('laboratory'), code: { coding: [{ system: LOINC, code: '8867-4' }] }, subject: { reference: `Patient/${r.bob}` }, valueQuantity: { value: 70, system: 'http://unitsofmeasure.org', code: '/min' } });
      // Blood pressure as components: systolic 150 / diastolic 95.
      await post('bp', {
        resourceType: 'Observation', status: 'final', code: { coding: [{ system: LOINC, code: '85354-9' }] }, subject: { reference: `Patient/${r.cat}` },
        component: [
          { code: { coding: [{ system: LOINC, code: '8480-6' }] }, valueQuantity: { value: 150, system: 'http://unitsofmeasure.org', code: 'mm[Hg]' } },
          { code: { coding: [{ system: LOINC, code: '8462-4' }] }, valueQuantity: { value: 95, system: 'http://unitsofmeasure.org', code: 'mm[Hg]' } },
        ],
      });
      await post('report', { resourceType: 'DiagnosticReport', status: 'final', code: { text: 'panel' }, subject: { reference: `Patient/${r.ann}` }, result: [{ reference: `Observation/${r.annLab}` }] });
      const policy = await server.fhir('POST', '/AccessPolicy', {
        token: a.adminToken,
        body: { resourceType: 'AccessPolicy', name: 'lab only', resource: [{ resourceType: 'Observation', readonly: true, criteria: 'Observation?category=laboratory' }, { resourceType: 'Patient' }] },
      });
      assert.equal(policy.status, 201, policy.text);
      const email = `lab-${randomBytes(4).toString('hex')}@example.org`;
      const password = `pw-${randomBytes(9).toString('base64url')}`;
      const inv = await server.request('POST', `/admin/projects/${a.projectId}/invite`, {
        token: a.adminToken,
        contentType: 'application/json',
        body: { resourceType: 'Practitioner', firstName: 'Lab', lastName: 'Only', email, password, membership: { accessPolicy: { reference: `AccessPolicy/${policy.body.id}` } } },
      });
      assert.equal(inv.status, 200, inv.text);
      labOnly = (await loginTokens(server, email, password, { projectId: a.projectId, scope: 'openid' })).access_token;
    });
    after(() => server.stop());

    const get = (path: string, token = a.adminToken) => server.fhir('GET', path, { token });

    test('_has finds the resources others reference, nested too', async () => {
      assert.deepEqual(ids(await get(`/Patient?_has:Observation:patient:code=${LOINC}|2339-0`)), [r.ann, r.bob].sort());
      assert.deepEqual(ids(await get('/Patient?_has:Observation:subject:category=laboratory&_has:Observation:subject:code=2339-0')), [r.ann, r.bob].sort());
      assert.deepEqual(ids(await get(`/Patient?_has:Observation:subject:value-quantity=gt100`)), [r.ann]);
      assert.deepEqual(ids(await get('/Encounter?_has:Observation:encounter:_has:DiagnosticReport:result:status=final')), [r.annEnc]);
      assert.deepEqual(ids(await get('/Patient?_has:Observation:subject:code=nothing')), []);
    });

    test('_has: the referencing resources pass the caller’s access policy', async () => {
      // Bob's glucose is a vital sign, outside the policy: it does not reveal Bob.
      assert.deepEqual(ids(await get(`/Patient?_has:Observation:patient:code=${LOINC}|2339-0`, labOnly)), [r.ann]);
      assert.deepEqual(ids(await get('/Patient?_has:Observation:patient:category=vital-signs', labOnly)), []);
    });

    test('composite parameters match components of one element', async () => {
      const u = 'http://unitsofmeasure.org';
      assert.deepEqual(ids(await get(`/Observation?code-value-quantity=${LOINC}|2339-0$gt100|${u}|mg/dL`)), [r.annLab]);
      assert.deepEqual(ids(await get(`/Observation?code-value-quantity=${LOINC}|2339-0$lt100,${LOINC}|8867-4$70`)), [r.bobVital, r.bobLab].sort());
      // Systolic above 140: the component pair, not the resource's values mixed.
      assert.deepEqual(ids(await get(`/Observation?component-code-value-quantity=${LOINC}|8480-6$gt140`)), [r.bp]);
      assert.deepEqual(ids(await get(`/Observation?component-code-value-quantity=${LOINC}|8462-4$gt140`)), []);
      assert.deepEqual(ids(await get(`/Observation?combo-code-value-quantity=${LOINC}|8462-4$95`)), [r.bp]);
      assert.deepEqual(ids(await get(`/Patient?_has:Observation:subject:component-code-value-quantity=${LOINC}|8480-6$ge150`)), [r.cat]);
      assertOutcome(await get(`/Observation?code-value-quantity=${LOINC}|2339-0`), 400, 'invalid', `Invalid value '${LOINC}|2339-0' for composite search parameter code-value-quantity: expected 2 values separated by '$'`);
      assertOutcome(await get('/Observation?code-value-quantity:missing=true'), 400, 'invalid', "Unsupported modifier ':missing' for search parameter code-value-quantity");
      assertOutcome(await get(`/Observation?code-value-quantity=${LOINC}|2339-0$high`), 400, 'invalid', "Invalid number 'high' for search parameter value-quantity");
    });

    test('_text searches the narrative, _content every text of the resource (PostgreSQL full-text)', async () => {
      assert.deepEqual(ids(await get('/Patient?_text=cough')), [r.ann]);
      assert.deepEqual(ids(await get('/Patient?_text=coughing quietly')), [r.ann]); // English stems
      assert.deepEqual(ids(await get('/Patient?_text="quiet cough"')), [r.ann]);
      assert.deepEqual(ids(await get('/Patient?_text="cough quiet"')), []);
      assert.deepEqual(ids(await get('/Patient?_text=cough -quiet')), []);
      assert.deepEqual(ids(await get('/Patient?_content=bob,cat')), [r.bob, r.cat].sort());
      assert.deepEqual(ids(await get('/Patient?_content=ann cough')), [r.ann]);
      assert.deepEqual(ids(await get('/Observation?_content=2339-0')), [r.annLab, r.bobVital].sort());
      // The access policy applies as to any search: the vital sign stays hidden.
      assert.deepEqual(ids(await get('/Observation?_content=2339-0', labOnly)), [r.annLab]);
      assertOutcome(await get('/Patient?_text:exact=cough'), 400, 'invalid', "Unsupported modifier ':exact' for search parameter _text");
      assertOutcome(await get('/Patient?_sort=_content'), 400, 'invalid', 'Cannot sort by search parameter _content');
    });

    test('_filter: the grammar over every kind of parameter, through references, combined with and/or/not', async () => {
      const f = (type: string, expression: string, token?: string) => get(`/${type}?_filter=${encodeURIComponent(expression)}`, token);
      assert.deepEqual(ids(await f('Patient', 'name eq ann or name sw bo')), [r.ann, r.bob].sort());
      assert.deepEqual(ids(await f('Patient', 'name co "n" and not(name eq ann)')), []);
      assert.deepEqual(ids(await f('Patient', 'name ew "at"')), [r.cat]);
      assert.deepEqual(ids(await f('Patient', `_id eq ${r.ann} or (_id ne ${r.ann} and name eq cat)`)), [r.ann, r.cat].sort());
      assert.deepEqual(ids(await f('Observation', `code eq ${LOINC}|2339-0 and value-quantity gt 100`)), [r.annLab]);
      assert.deepEqual(ids(await f('Observation', 'value-quantity le 90 and category ne vital-signs')), [r.bobLab]);
      assert.deepEqual(ids(await f('Observation', 'subject.name eq bob')), [r.bobVital, r.bobLab].sort());
      assert.deepEqual(ids(await f('Observation', 'subject:Patient.name eq cat and component-code pr true')), [r.bp]);
      assert.deepEqual(ids(await f('Observation', 'value-quantity pr false')), [r.bp]);
      assert.deepEqual(ids(await f('Patient', '_text co cough')), [r.ann]);
      assert.deepEqual(ids(await f('Observation', '_lastUpdated gt 2000-01-01 and encounter pr true')), [r.annLab]);
      // With other parameters and through the access policy: the hidden vital sign stays hidden.
      assert.deepEqual(ids(await get(`/Observation?status=final&_filter=${encodeURIComponent('subject.name eq bob')}`, labOnly)), [r.bobLab]);
    });

    test('_filter po: a date or period overlaps the value\'s range; other types refuse it', async () => {
      const f = (type: string, expression: string) => get(`/${type}?_filter=${encodeURIComponent(expression)}`);
      await post('encJan', { resourceType: 'Encounter', status: 'finished', class: { code: 'AMB' }, period: { start: '2021-01-10', end: '2021-01-20' } });
      await post('encMar', { resourceType: 'Encounter', status: 'finished', class: { code: 'AMB' }, period: { start: '2021-03-01', end: '2021-03-05' } });
      assert.deepEqual(ids(await f('Encounter', 'date po 2021-01-15')), [r.encJan]);
      assert.deepEqual(ids(await f('Encounter', 'date po 2021-01')), [r.encJan]);
      assert.deepEqual(ids(await f('Encounter', 'date po 2021')), [r.encJan, r.encMar].sort());
      assert.deepEqual(ids(await f('Encounter', 'date po 2021-02')), []);
      // eq wants the period inside the value's range: a day inside it is not enough.
      assert.deepEqual(ids(await f('Encounter', 'date eq 2021-01-15')), []);
      assert.deepEqual(ids(await f('Encounter', `_lastUpdated po 2000 or _id eq ${r.encMar}`)), [r.encMar]);
      assertOutcome(await f('Patient', 'gender po female'), 400, 'invalid', "Operator 'po' is not supported for search parameter gender in _filter");
    });

    test('_filter errors and bound → 400 with exact texts', async () => {
      const f = (expression: string) => get(`/Patient?_filter=${encodeURIComponent(expression)}`);
      assertOutcome(await f('name eq'), 400, 'invalid', "Invalid _filter 'name eq': expected a value at position 8");
      assertOutcome(await f('name xx ann'), 400, 'invalid', "Invalid _filter 'name xx ann': expected an operator (eq, ne, co, sw, ew, gt, lt, ge, le, ap, sa, eb, pr, po, ss, sb, in, ni, re) at position 6");
      assertOutcome(await f('(name eq ann'), 400, 'invalid', "Invalid _filter '(name eq ann': expected ')' at position 13");
      assertOutcome(await f('name eq ann bob'), 400, 'invalid', "Invalid _filter 'name eq ann bob': unexpected 'bob' at position 13");
      assertOutcome(await f('name eq "ann'), 400, 'invalid', "Invalid _filter 'name eq \"ann': unterminated string at position 9");
      assertOutcome(await f('bogus eq 1'), 400, 'invalid', 'Unknown search parameter: bogus');
      assertOutcome(await f('gender gt female'), 400, 'invalid', "Operator 'gt' is not supported for search parameter gender in _filter");
      assertOutcome(await f('name in http://hl7.org/fhir/ValueSet/administrative-gender'), 400, 'invalid', "Operator 'in' is not supported for search parameter name in _filter");
      assertOutcome(await get(`/Observation?_filter=${encodeURIComponent('subject.gender in http://hl7.org/fhir/ValueSet/administrative-gender')}`), 400, 'invalid', "Operator 'in' is not supported for search parameter gender in _filter");
      assertOutcome(await f('birthdate eq soon'), 400, 'invalid', "Invalid date 'soon' for search parameter birthdate");
      const many = Array.from({ length: 21 }, (_, i) => `name eq n${i}`).join(' or ');
      assertOutcome(await f(many), 400, 'too-costly', '_filter has 21 comparisons (at most 20)');
    });

    test('_has errors and bounds → 400 with exact texts', async () => {
      assertOutcome(await get('/Patient?_has:Observation:patient=x'), 400, 'invalid', "Invalid _has parameter '_has:Observation:patient': expected _has:<Type>:<reference parameter>:<parameter>");
      assertOutcome(await get('/Patient?_has:Nope:patient:code=x'), 400, 'invalid', "Invalid _has parameter '_has:Nope:patient:code': expected _has:<Type>:<reference parameter>:<parameter>");
      assertOutcome(await get('/Patient?_has:Observation:nope:code=x'), 400, 'invalid', 'Unknown search parameter: nope');
      assertOutcome(await get('/Patient?_has:Observation:code:code=x'), 400, 'invalid', 'Search parameter code is not a reference and cannot be used in _has');
      assertOutcome(await get('/Patient?_has:Observation:encounter:code=x'), 400, 'invalid', 'Search parameter encounter of Observation cannot reference Patient');
      assertOutcome(await get('/Patient?_has:Observation:patient:bogus=x'), 400, 'invalid', 'Unknown search parameter: bogus');
      assertOutcome(
        await get('/Patient?_has:Observation:patient:_has:DiagnosticReport:result:_has:Provenance:target:agent=x'),
        400, 'too-costly', '_has nested too deep: 3 levels (at most 2)',
      );
    });
  });
}
