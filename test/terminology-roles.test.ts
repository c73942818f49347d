import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  createClient,
  createMember,
  createProject,
  drivers,
  flatContains,
  ooText,
  startServer,
  type ApiResponse,
  type TestMember,
  type TestProject,
  type TestServer,
} from './harness.js';

/**
 * The terminology operations as ordinary callers use them — a plain member (Practitioner) and a
 * client application of a project — not as the super admin (a real bug answered 500 to members:
 * resolving a base terminology wrote shared content with the caller's rights). Answers are
 * checked, not only statuses. A member of another project cannot resolve this project's
 * canonicals: it gets the documented not-found answers (docs/terminology.md#errors).
 *
 * In `lazy` base-terminology mode (the harness default) each base code system is written when a
 * request first resolves it; the member's and the client's tests each start with a base
 * terminology nobody has touched before on this server.
 */

const GENDER_CS = 'http://hl7.org/fhir/administrative-gender';
const GENDER_VS = 'http://hl7.org/fhir/ValueSet/administrative-gender';
const CS_URL = 'http://example.org/terminology-roles/vehicles';
const VS_URL = 'http://example.org/terminology-roles/road-vehicles';

const VEHICLES = {
  resourceType: 'CodeSystem',
  url: CS_URL,
  version: '1.0.0',
  name: 'Vehicles',
  status: 'active',
  content: 'complete',
  hierarchyMeaning: 'is-a',
  concept: [
    {
      code: 'vehicle',
      display: 'Vehicle',
      concept: [
        { code: 'car', display: 'Car', concept: [{ code: 'taxi', display: 'Taxi' }] },
        { code: 'bike', display: 'Bicycle' },
      ],
    },
    { code: 'boat', display: 'Boat' },
  ],
};

const ROAD_VEHICLES = {
  resourceType: 'ValueSet',
  url: VS_URL,
  status: 'active',
  compose: { include: [{ system: CS_URL, filter: [{ property: 'concept', op: 'is-a', value: 'car' }] }] },
};

/** The value of an out-parameter of a Parameters answer (first entry with that name). */
function out(res: ApiResponse, name: string): unknown {
  const p: object | undefined = res.body?.parameter?.find((x: { name?: string }) => x.name === name);
  return p && Object.entries(p).find(([k]) => k.startsWith('value') || k === 'resource')?.[1];
}

/** A code of an expansion. */
interface Coded {
  code: string;
  display?: string;
}

/** The codes of an `$expand` answer, in order. */
function codes(res: ApiResponse): string[] {
  return flatContains<Coded & { contains?: Coded[] }>(res.body?.expansion?.contains).map((c) => c.code);
}

function params(values: Record<string, unknown>): unknown {
  return {
    resourceType: 'Parameters',
    parameter: Object.entries(values).map(([name, value]) =>
      typeof value === 'object' ? { name, valueCoding: value } : { name, [name === 'system' || name === 'url' ? 'valueUri' : 'valueCode']: value },
    ),
  };
}

function ok(res: ApiResponse, what: string): void {
  assert.equal(res.status, 200, `${what}: ${res.text}`);
}

for (const driver of drivers) {
  describe(`terminology by members and client applications (${driver})`, () => {
    let server: TestServer;
    let a: TestProject;
    let b: TestProject;
    let aMember: TestMember;
    let bMember: TestMember;
    let aClientToken: string;
    let csId: string;
    let vsId: string;

    before(async () => {
      server = await startServer(driver);
      a = await createProject(server, 'Terminology A');
      b = await createProject(server, 'Terminology B');
      aMember = await createMember(server, a.projectId, { firstName: 'Plain', lastName: 'Member' });
      bMember = await createMember(server, b.projectId, { firstName: 'Other', lastName: 'Member' });
      aClientToken = (await createClient(server, a.projectId, { token: a.adminToken, name: 'Terminology client' })).token;
    });
    after(() => server.stop());

    test('a plain member creates a CodeSystem and a ValueSet in its project', async () => {
      const cs = await server.fhir('POST', '/CodeSystem', { token: aMember.token, body: VEHICLES });
      assert.equal(cs.status, 201, cs.text);
      assert.equal(cs.body.meta.project, a.projectId);
      csId = cs.body.id;
      const vs = await server.fhir('POST', '/ValueSet', { token: aMember.token, body: ROAD_VEHICLES });
      assert.equal(vs.status, 201, vs.text);
      assert.equal(vs.body.meta.project, a.projectId);
      vsId = vs.body.id;
    });

    const callers: Array<[string, () => string, { cs: string; vs: string; code: string; display: string }]> = [
      // Each caller is the first to resolve its base terminology on this server (lazy mode).
      ['plain member', () => aMember.token, { cs: 'http://hl7.org/fhir/address-use', vs: 'http://hl7.org/fhir/ValueSet/address-use', code: 'home', display: 'Home' }],
      [
        'client application',
        () => aClientToken,
        { cs: 'http://hl7.org/fhir/contact-point-use', vs: 'http://hl7.org/fhir/ValueSet/contact-point-use', code: 'mobile', display: 'Mobile' },
      ],
    ];

    for (const [caller, token, firstUse] of callers) {
      const get = (path: string) => server.fhir('GET', path, { token: token() });
      const post = (path: string, body: unknown) => server.fhir('POST', path, { token: token(), body });

      test(`${caller}: first use of a base terminology (lazy) works for every operation`, async () => {
        const { cs, vs, code, display } = firstUse;
        const lookup = await get(`/CodeSystem/$lookup?system=${encodeURIComponent(cs)}&code=${code}`);
        ok(lookup, 'lookup');
        assert.equal(out(lookup, 'display'), display);
        const validate = await post('/ValueSet/$validate-code', params({ url: vs, coding: { system: cs, code } }));
        ok(validate, 'validate-code');
        assert.equal(out(validate, 'result'), true, validate.text);
        const expand = await get(`/ValueSet/$expand?url=${encodeURIComponent(vs)}`);
        ok(expand, 'expand');
        const contains: Coded[] = flatContains<Coded & { contains?: Coded[] }>(expand.body.expansion.contains);
        assert.ok(contains.some((c) => c.code === code && c.display === display), expand.text);
      });

      test(`${caller}: $lookup of administrative-gender (base) and of the project's CodeSystem`, async () => {
        const base = await get(`/CodeSystem/$lookup?system=${encodeURIComponent(GENDER_CS)}&code=male`);
        ok(base, 'base lookup');
        assert.equal(out(base, 'name'), 'AdministrativeGender');
        assert.equal(out(base, 'version'), '4.0.1');
        assert.equal(out(base, 'display'), 'Male');

        const basePost = await post('/CodeSystem/$lookup', params({ coding: { system: GENDER_CS, code: 'unknown' } }));
        ok(basePost, 'base lookup (POST coding)');
        assert.equal(out(basePost, 'display'), 'Unknown');

        const own = await get(`/CodeSystem/$lookup?system=${encodeURIComponent(CS_URL)}&code=car`);
        ok(own, 'project lookup');
        assert.equal(out(own, 'name'), 'Vehicles');
        assert.equal(out(own, 'version'), '1.0.0');
        assert.equal(out(own, 'display'), 'Car');
        type Part = { name: string; valueCode?: string };
        const props: Array<{ name: string; part: Part[] }> = (own.body.parameter ?? []).filter((p: { name: string }) => p.name === 'property');
        const rel = props.map((p) => `${p.part[0].valueCode}=${p.part[1].valueCode}`);
        assert.ok(rel.includes('parent=vehicle') && rel.includes('child=taxi'), own.text);

        const instance = await post(`/CodeSystem/${csId}/$lookup`, params({ code: 'taxi' }));
        ok(instance, 'instance lookup');
        assert.equal(out(instance, 'display'), 'Taxi');

        const missing = await get(`/CodeSystem/$lookup?system=${encodeURIComponent(CS_URL)}&code=plane`);
        assert.equal(missing.status, 404, missing.text);
        assert.equal(ooText(missing.body), `Unknown code 'plane' in the CodeSystem '${CS_URL}' version '1.0.0'`);
      });

      test(`${caller}: ValueSet/$validate-code against the base and the project value set`, async () => {
        const yes = await post('/ValueSet/$validate-code', params({ url: GENDER_VS, coding: { system: GENDER_CS, code: 'female' } }));
        ok(yes, 'base validate-code');
        assert.equal(out(yes, 'result'), true);
        assert.equal(out(yes, 'display'), 'Female');

        const no = await get(`/ValueSet/$validate-code?url=${encodeURIComponent(GENDER_VS)}&system=${encodeURIComponent(GENDER_CS)}&code=dragon`);
        ok(no, 'base validate-code (unknown code)');
        assert.equal(out(no, 'result'), false);
        assert.match(String(out(no, 'message')), /dragon/);

        const own = await post('/ValueSet/$validate-code', params({ url: VS_URL, system: CS_URL, code: 'taxi' }));
        ok(own, 'project validate-code');
        assert.equal(out(own, 'result'), true, own.text);
        assert.equal(out(own, 'display'), 'Taxi');

        const notIn = await post('/ValueSet/$validate-code', params({ url: VS_URL, system: CS_URL, code: 'boat' }));
        ok(notIn, 'project validate-code (not in the value set)');
        assert.equal(out(notIn, 'result'), false, notIn.text);

        const instance = await post(`/ValueSet/${vsId}/$validate-code`, params({ coding: { system: CS_URL, code: 'car' } }));
        ok(instance, 'instance validate-code');
        assert.equal(out(instance, 'result'), true, instance.text);
      });

      test(`${caller}: CodeSystem/$subsumes in the project's and a base code system`, async () => {
        const down = await get(`/CodeSystem/$subsumes?system=${encodeURIComponent(CS_URL)}&codeA=vehicle&codeB=taxi`);
        ok(down, 'subsumes');
        assert.equal(out(down, 'outcome'), 'subsumes');
        const up = await post(`/CodeSystem/${csId}/$subsumes`, params({ codeA: 'taxi', codeB: 'car' }));
        ok(up, 'instance subsumes');
        assert.equal(out(up, 'outcome'), 'subsumed-by');
        const apart = await get(`/CodeSystem/$subsumes?system=${encodeURIComponent(CS_URL)}&codeA=bike&codeB=boat`);
        ok(apart, 'not subsumed');
        assert.equal(out(apart, 'outcome'), 'not-subsumed');
        const base = await get(`/CodeSystem/$subsumes?system=${encodeURIComponent(GENDER_CS)}&codeA=male&codeB=male`);
        ok(base, 'base subsumes');
        assert.equal(out(base, 'outcome'), 'equivalent');
      });

      test(`${caller}: ValueSet/$expand of the base and the project value set`, async () => {
        const base = await get(`/ValueSet/$expand?url=${encodeURIComponent(GENDER_VS)}`);
        ok(base, 'base expand');
        assert.equal(base.body.resourceType, 'ValueSet');
        assert.equal(base.body.expansion.total, 4);
        assert.deepEqual(codes(base).sort(), ['female', 'male', 'other', 'unknown']);

        const own = await post('/ValueSet/$expand', params({ url: VS_URL }));
        ok(own, 'project expand');
        assert.equal(own.body.expansion.total, 2);
        const contains: Coded[] = flatContains<Coded & { contains?: Coded[] }>(own.body.expansion.contains);
        assert.deepEqual(contains.map((c) => `${c.code}:${c.display}`).sort(), ['car:Car', 'taxi:Taxi']);

        const instance = await get(`/ValueSet/${vsId}/$expand?filter=tax`);
        ok(instance, 'instance expand');
        assert.deepEqual(codes(instance), ['taxi']);
      });

      test(`${caller}: CodeSystem/$validate-code in the base and the project code system`, async () => {
        const base = await get(`/CodeSystem/$validate-code?url=${encodeURIComponent(GENDER_CS)}&code=other`);
        ok(base, 'base validate-code');
        assert.equal(out(base, 'result'), true);
        assert.equal(out(base, 'display'), 'Other');

        const own = await post('/CodeSystem/$validate-code', params({ url: CS_URL, code: 'bike', display: 'Bicycle' }));
        ok(own, 'project validate-code');
        assert.equal(out(own, 'result'), true, own.text);

        const wrong = await post(`/CodeSystem/${csId}/$validate-code`, params({ code: 'bike', display: 'Motorbike' }));
        ok(wrong, 'wrong display');
        assert.equal(out(wrong, 'result'), false);
        assert.match(String(out(wrong, 'message')), /^Wrong Display Name 'Motorbike' for http:\/\/example\.org\/terminology-roles\/vehicles#bike/);

        const unknown = await post('/CodeSystem/$validate-code', params({ url: CS_URL, code: 'plane' }));
        ok(unknown, 'unknown code');
        assert.equal(out(unknown, 'result'), false);
        assert.match(String(out(unknown, 'message')), /Unknown code 'plane'/);
      });
    }

    test("another project's member cannot resolve A's CodeSystem or ValueSet (documented not-found answers)", async () => {
      const asB = { token: bMember.token };
      const lookup = await server.fhir('GET', `/CodeSystem/$lookup?system=${encodeURIComponent(CS_URL)}&code=car`, asB);
      assert.equal(lookup.status, 404, lookup.text);
      assert.equal(ooText(lookup.body), `CodeSystem ${CS_URL} not found`);

      const subsumes = await server.fhir('GET', `/CodeSystem/$subsumes?system=${encodeURIComponent(CS_URL)}&codeA=vehicle&codeB=car`, asB);
      assert.equal(subsumes.status, 404, subsumes.text);
      assert.equal(ooText(subsumes.body), `CodeSystem ${CS_URL} not found`);

      const vsValidate = await server.fhir('POST', '/ValueSet/$validate-code', { ...asB, body: params({ url: VS_URL, system: CS_URL, code: 'car' }) });
      assert.equal(vsValidate.status, 400, vsValidate.text);
      assert.equal(vsValidate.body.issue[0].code, 'invalid');
      assert.equal(ooText(vsValidate.body), `ValueSet ${VS_URL} not found`);

      const expand = await server.fhir('GET', `/ValueSet/$expand?url=${encodeURIComponent(VS_URL)}`, asB);
      assert.equal(expand.status, 400, expand.text);
      assert.equal(ooText(expand.body), `ValueSet ${VS_URL} not found`);

      // A code cannot be valid in a code system the caller does not know: result false, not-found.
      const csValidate = await server.fhir('POST', '/CodeSystem/$validate-code', { ...asB, body: params({ url: CS_URL, code: 'car' }) });
      assert.equal(csValidate.status, 200, csValidate.text);
      assert.equal(out(csValidate, 'result'), false);
      assert.equal(out(csValidate, 'x-unknown-system'), CS_URL, csValidate.text);
      const issues = out(csValidate, 'issues') as { issue: Array<{ code: string }> } | undefined;
      assert.ok(issues?.issue.some((i) => i.code === 'not-found'), csValidate.text);
      assert.ok(!csValidate.text.includes('"display"'), 'no display of A\'s concept leaks');

      // Instance level: A's resources do not exist for B.
      for (const path of [`/CodeSystem/${csId}/$lookup?code=car`, `/ValueSet/${vsId}/$expand`, `/CodeSystem/${csId}/$subsumes?codeA=car&codeB=taxi`]) {
        const res = await server.fhir('GET', path, asB);
        assert.equal(res.status, 404, `${path}: ${res.text}`);
        assert.equal(ooText(res.body), 'Not found');
      }
      // The base terminologies stay available to B.
      const base = await server.fhir('GET', `/CodeSystem/$lookup?system=${encodeURIComponent(GENDER_CS)}&code=female`, asB);
      assert.equal(base.status, 200, base.text);
      assert.equal(out(base, 'display'), 'Female');
    });
  });
}
