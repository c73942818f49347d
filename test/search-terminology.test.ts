import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createProject, drivers, ooText, startServer, type ApiResponse, type TestProject, type TestServer } from './harness.js';

/**
 * Token modifiers backed by the terminology engine (docs/rest.md#terminology-modifiers): `:below`,
 * `:above`, `:in`, `:not-in` over a project's own code system and value set, as a plain member;
 * another project's value set does not exist for it; a change to the value set is seen by the
 * next search; past LATTICE_SEARCH_MAX_CODES distinct stored codes → 400 too-costly. Also
 * `:of-type` and `:text`.
 */
const SYSTEM = 'http://example.org/fhir/CodeSystem/search-terms';
const VALUE_SET = 'http://example.org/fhir/ValueSet/search-terms-ab';

const ids = (res: ApiResponse): string[] => (res.body.entry ?? []).map((e: { resource: { id: string } }) => e.resource.id).sort();

function assertOutcome(res: ApiResponse, status: number, code: string, text: string): void {
  assert.equal(res.status, status, res.text);
  assert.equal(res.body.issue[0].code, code, res.text);
  assert.equal(ooText(res.body), text);
}

for (const driver of drivers) {
  describe(`search: terminology modifiers (${driver})`, () => {
    let server: TestServer;
    let other: TestProject;
    const c: Record<string, string> = {};
    before(async () => {
      server = await startServer(driver, { env: { LATTICE_SEARCH_MAX_CODES: '6' } });
      other = await createProject(server, 'Terms other');
      const cs = await server.fhir('POST', '/CodeSystem', {
        body: {
          resourceType: 'CodeSystem', url: SYSTEM, status: 'active', content: 'complete', hierarchyMeaning: 'is-a',
          concept: [
            { code: 'root', display: 'Root', concept: [{ code: 'a', display: 'Alpha', concept: [{ code: 'a1', display: 'Alpha one' }] }, { code: 'b', display: 'Beta' }] },
            { code: 'lone', display: 'Lone' },
          ],
        },
      });
      assert.equal(cs.status, 201, cs.text);
      const vs = await server.fhir('POST', '/ValueSet', {
        body: { resourceType: 'ValueSet', url: VALUE_SET, status: 'active', compose: { include: [{ system: SYSTEM, concept: [{ code: 'a' }, { code: 'b' }] }] } },
      });
      assert.equal(vs.status, 201, vs.text);
      c.vs = vs.body.id;
      for (const code of ['root', 'a', 'a1', 'b', 'lone']) {
        const res = await server.fhir('POST', '/Condition', { body: { resourceType: 'Condition', subject: { reference: 'Patient/p' }, code: { coding: [{ system: SYSTEM, code }], text: `Condition ${code}` } } });
        assert.equal(res.status, 201, res.text);
        c[code] = res.body.id;
      }
      c.none = (await server.fhir('POST', '/Condition', { body: { resourceType: 'Condition', subject: { reference: 'Patient/p' } } })).body.id;
      // Another project's condition coded `a`: never in this project's answers.
      const theirs = await server.fhir('POST', '/Condition', { token: other.adminToken, body: { resourceType: 'Condition', subject: { reference: 'Patient/p' }, code: { coding: [{ system: SYSTEM, code: 'a' }] } } });
      assert.equal(theirs.status, 201, theirs.text);
    });
    after(() => server.stop());

    const search = (query: string, token?: string) => server.fhir('GET', `/Condition?${query}`, token ? { token } : {});

    test(':below and :above follow the code system hierarchy (the code itself included)', async () => {
      assert.deepEqual(ids(await search(`code:below=${SYSTEM}|a`)), [c.a, c.a1].sort());
      assert.deepEqual(ids(await search(`code:below=${SYSTEM}|root`)), [c.root, c.a, c.a1, c.b].sort());
      assert.deepEqual(ids(await search(`code:above=${SYSTEM}|a1`)), [c.root, c.a, c.a1].sort());
      assert.deepEqual(ids(await search(`code:below=${SYSTEM}|a,${SYSTEM}|lone`)), [c.a, c.a1, c.lone].sort());
      assert.deepEqual(ids(await search(`code:below=${SYSTEM}|unknown-code`)), []);
      // The same in _filter: sb (subsumed by) = :below, ss (subsumes) = :above, in / ni = :in / :not-in.
      const filter = (expression: string) => search(`_filter=${encodeURIComponent(expression)}`);
      assert.deepEqual(ids(await filter(`code sb ${SYSTEM}|a or code eq ${SYSTEM}|lone`)), [c.a, c.a1, c.lone].sort());
      assert.deepEqual(ids(await filter(`code ss ${SYSTEM}|a1 and not(code eq ${SYSTEM}|root)`)), [c.a, c.a1].sort());
      // Combined with other parameters as any criterion.
      assert.deepEqual(ids(await search(`code:below=${SYSTEM}|root&_id=${c.b},${c.lone}`)), [c.b]);
    });

    test(':in and :not-in evaluate the value set; a change to it is seen by the next search', async () => {
      assert.deepEqual(ids(await search(`code:in=${VALUE_SET}`)), [c.a, c.b].sort());
      assert.deepEqual(ids(await search(`code:in=ValueSet/${c.vs}`)), [c.a, c.b].sort());
      assert.deepEqual(ids(await search(`code:not-in=${VALUE_SET}`)), [c.root, c.a1, c.lone, c.none].sort());
      assert.deepEqual(ids(await search(`_filter=${encodeURIComponent(`code in ${VALUE_SET} or code ni ${VALUE_SET}`)}`)), [c.root, c.a, c.a1, c.b, c.lone, c.none].sort());
      const vs = (await server.fhir('GET', `/ValueSet/${c.vs}`)).body;
      const updated = await server.fhir('PUT', `/ValueSet/${c.vs}`, { body: { ...vs, compose: { include: [{ system: SYSTEM, filter: [{ property: 'concept', op: 'is-a', value: 'a' }] }] } } });
      assert.equal(updated.status, 200, updated.text);
      assert.deepEqual(ids(await search(`code:in=${VALUE_SET}`)), [c.a, c.a1].sort());
      assert.deepEqual(ids(await search('code:in=http://hl7.org/fhir/ValueSet/administrative-gender')), []);
    });

    test('unknown code system or value set, a value without system → 400 with the exact text', async () => {
      assertOutcome(await search('code:below=http://example.org/unknown|a'), 400, 'invalid', "Unknown code system 'http://example.org/unknown' for search parameter code:below");
      assertOutcome(await search('code:below=a'), 400, 'invalid', 'Search parameter code:below needs a system and a code: code:below=<system>|<code>');
      assertOutcome(await search('code:in=http://example.org/ValueSet/none'), 400, 'invalid', "Unknown value set 'http://example.org/ValueSet/none' for search parameter code:in");
      assertOutcome(await search(`subject:Group.code:below=${SYSTEM}|a`), 400, 'invalid', 'Modifier :below of search parameter code is not supported in a chain or _has');
    });

    test("another project's value set and code system do not exist for the caller; its resources never match", async () => {
      const url = 'http://example.org/fhir/ValueSet/theirs';
      const theirs = await server.fhir('POST', '/ValueSet', { token: other.adminToken, body: { resourceType: 'ValueSet', url, status: 'active', compose: { include: [{ system: SYSTEM }] } } });
      assert.equal(theirs.status, 201, theirs.text);
      assertOutcome(await search(`code:in=${url}`), 400, 'invalid', `Unknown value set '${url}' for search parameter code:in`);
      assertOutcome(await search(`code:in=ValueSet/${theirs.body.id}`), 400, 'invalid', `Unknown value set 'ValueSet/${theirs.body.id}' for search parameter code:in`);
      assertOutcome(await search(`code:below=${SYSTEM}|a`, other.adminToken), 400, 'invalid', `Unknown code system '${SYSTEM}' for search parameter code:below`);
      const mine = await search(`code:below=${SYSTEM}|root&_count=100`);
      assert.equal(mine.body.total, 4);
    });

    test('more distinct stored codes than LATTICE_SEARCH_MAX_CODES → 400 too-costly', async () => {
      for (const code of ['x1', 'x2']) {
        assert.equal((await server.fhir('POST', '/Condition', { body: { resourceType: 'Condition', subject: { reference: 'Patient/p' }, code: { coding: [{ system: SYSTEM, code }] } } })).status, 201);
      }
      assertOutcome(await search(`code:below=${SYSTEM}|root`), 400, 'too-costly', 'Search parameter code:below would test more than 6 distinct stored codes (at most 6): narrow it');
    });

    test(':of-type finds an identifier by its type and value; :text the concept text', async () => {
      const mrn = { system: 'http://terminology.hl7.org/CodeSystem/v2-0203', code: 'MR' };
      const p = await server.fhir('POST', '/Patient', { body: { resourceType: 'Patient', identifier: [{ type: { coding: [mrn] }, system: 'http://hospital.example/mrn', value: 'M-77' }] } });
      assert.equal(p.status, 201, p.text);
      assert.deepEqual(ids(await server.fhir('GET', `/Patient?identifier:of-type=${mrn.system}|MR|M-77`)), [p.body.id]);
      assert.deepEqual(ids(await server.fhir('GET', `/Patient?identifier:of-type=${mrn.system}|DL|M-77`)), []);
      assertOutcome(await server.fhir('GET', '/Patient?identifier:of-type=M-77'), 400, 'invalid', "Invalid value 'M-77' for identifier:of-type (expected <type system>|<type code>|<value>)");
      assertOutcome(await server.fhir('GET', '/Patient?gender:of-type=a|b|c'), 400, 'invalid', "Unsupported modifier ':of-type' for search parameter gender");
      assert.deepEqual(ids(await search('code:text=condition a1')), [c.a1]);
    });
  });
}
