import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { CodeSystem, Parameters, ParametersParameter, Resource } from '@medplum/fhirtypes';
import { createProject, drivers, ooText, startServer, type ApiResponse, type TestProject, type TestServer } from './harness.js';

/**
 * CodeSystem/$lookup and the terminology index behind it (docs/terminology.md#lookup, docs/terminology.md#import): outputs and
 * their order, errors with their exact texts, base terminologies out of the box, versions,
 * case sensitivity, re-indexing on update, removal on delete, tenancy.
 */

const URL_ = 'http://example.org/fhir/CodeSystem/animals';

const ANIMALS: CodeSystem = {
  resourceType: 'CodeSystem',
  id: 'lookup-animals',
  url: URL_,
  version: '1.0.0',
  name: 'Animals',
  title: 'Animal codes',
  status: 'active',
  content: 'complete',
  caseSensitive: true,
  language: 'en',
  property: [
    { code: 'colour', type: 'string' },
    { code: 'legs', type: 'integer' },
    { code: 'kind', type: 'Coding' },
    { code: 'eats', type: 'code' },
    { code: 'notSelectable', uri: 'http://hl7.org/fhir/concept-properties#notSelectable', type: 'boolean' },
    { code: 'status', uri: 'http://hl7.org/fhir/concept-properties#status', type: 'code' },
  ],
  concept: [
    {
      code: 'animal',
      display: 'Animal',
      property: [{ code: 'notSelectable', valueBoolean: true }],
      concept: [
        {
          code: 'mammal',
          display: 'Mammal',
          concept: [
            {
              code: 'dog',
              display: 'Dog',
              definition: 'A domesticated canine',
              designation: [
                { language: 'de', value: 'Hund' },
                { language: 'fr', use: { system: 'http://snomed.info/sct', code: '900000000000013009', display: 'Synonym' }, value: 'Chien' },
              ],
              property: [
                { code: 'colour', valueString: 'brown' },
                { code: 'legs', valueInteger: 4 },
                { code: 'kind', valueCoding: { system: 'http://example.org/kinds', code: 'pet', display: 'Pet' } },
                { code: 'eats', valueCode: 'cat' },
              ],
            },
            { code: 'cat', display: 'Cat' },
          ],
        },
      ],
    },
    { code: 'dodo', display: 'Dodo', property: [{ code: 'status', valueCode: 'retired' }] },
    { code: 'bat', display: 'Bat', property: [{ code: 'parent', valueCode: 'mammal' }] },
  ],
};

/** Out-parameters of a Parameters body by name (repeated names collected). */
function outs(body: Parameters | undefined): Map<string, ParametersParameter[]> {
  const map = new Map<string, ParametersParameter[]>();
  for (const p of body?.parameter ?? []) map.set(p.name, [...(map.get(p.name) ?? []), p]);
  return map;
}

/** The property entries of a $lookup answer as `code=value` strings. */
function properties(body: Parameters | undefined): string[] {
  return (outs(body).get('property') ?? []).map((p) => {
    const code = p.part!.find((x) => x.name === 'code')!.valueCode;
    const value = p.part!.find((x) => x.name === 'value')!;
    const v = value.valueCode ?? value.valueString ?? value.valueInteger ?? value.valueBoolean ?? value.valueCoding?.code;
    return `${code}=${v}`;
  });
}

function expectOO(res: ApiResponse, status: number, code: string, text: string): void {
  assert.equal(res.status, status, res.text);
  assert.equal(res.body.resourceType, 'OperationOutcome');
  assert.equal(res.body.issue[0].severity, 'error');
  assert.equal(res.body.issue[0].code, code);
  assert.equal(ooText(res.body), text);
}

for (const driver of drivers) {
  describe(`terminology: $lookup and the index (${driver})`, () => {
    let server: TestServer;
    let projectA: TestProject;
    let projectB: TestProject;
    const put = async (r: Resource, token?: string) => {
      const res = await server.fhir('PUT', `/${r.resourceType}/${r.id}`, { body: r, token });
      assert.ok(res.status === 200 || res.status === 201, res.text);
      return res.body;
    };
    const lookup = (query: string, token?: string) => server.fhir('GET', `/CodeSystem/$lookup?${query}`, { token });

    before(async () => {
      server = await startServer(driver);
      await put(ANIMALS);
      projectA = await createProject(server, 'Terminology A');
      projectB = await createProject(server, 'Terminology B');
    });
    after(() => server.stop());

    test('lookup answers name, version, display, definition, designations and properties, in that order', async () => {
      const res = await lookup(`system=${URL_}&code=dog`);
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.resourceType, 'Parameters');
      const names = [...new Set(res.body.parameter.map((p: ParametersParameter) => p.name))];
      assert.deepEqual(names.slice(0, 6), ['name', 'version', 'display', 'definition', 'designation', 'property']);
      const o = outs(res.body);
      assert.equal(o.get('name')?.[0].valueString, 'Animals');
      assert.equal(o.get('version')?.[0].valueString, '1.0.0');
      assert.equal(o.get('display')?.[0].valueString, 'Dog');
      assert.equal(o.get('definition')?.[0].valueString, 'A domesticated canine');
      const designations = o.get('designation') ?? [];
      // the display itself (preferred for the code system's language), then the stored designations
      assert.equal(designations.length, 3);
      assert.deepEqual(designations[0].part?.map((p) => p.valueString ?? p.valueCode ?? p.valueCoding?.code), ['en', 'preferredForLanguage', 'Dog']);
      const fr = designations.find((d) => d.part?.some((p) => p.valueString === 'Chien'));
      assert.deepEqual(fr?.part?.find((p) => p.name === 'use')?.valueCoding, {
        system: 'http://snomed.info/sct',
        code: '900000000000013009',
        display: 'Synonym',
      });
      assert.equal(fr?.part?.find((p) => p.name === 'language')?.valueCode, 'fr');
      assert.deepEqual(properties(res.body).sort(), ['colour=brown', 'eats=cat', 'inactive=false', 'kind=pet', 'legs=4', 'parent=mammal'].sort());
    });

    test('property values keep their declared type; related codes carry their display as description', async () => {
      const res = await lookup(`system=${URL_}&code=dog`);
      const byCode = new Map<string | undefined, ParametersParameter[] | undefined>(
        (outs(res.body).get('property') ?? []).map((p) => [p.part?.find((x) => x.name === 'code')?.valueCode, p.part]),
      );
      assert.equal(byCode.get('legs')?.find((x) => x.name === 'value')?.valueInteger, 4);
      assert.equal(byCode.get('colour')?.find((x) => x.name === 'value')?.valueString, 'brown');
      assert.deepEqual(byCode.get('kind')?.find((x) => x.name === 'value')?.valueCoding, { system: 'http://example.org/kinds', code: 'pet', display: 'Pet' });
      assert.equal(byCode.get('eats')?.find((x) => x.name === 'value')?.valueCode, 'cat');
      assert.equal(byCode.get('eats')?.find((x) => x.name === 'description')?.valueString, 'Cat');
      assert.equal(byCode.get('parent')?.find((x) => x.name === 'description')?.valueString, 'Mammal');
      assert.equal(byCode.get('inactive')?.find((x) => x.name === 'value')?.valueBoolean, false);
    });

    test('children are listed one entry per child; hierarchy from parent properties counts too', async () => {
      const res = await lookup(`system=${URL_}&code=mammal`);
      assert.deepEqual(properties(res.body).filter((p) => p.startsWith('child=')).sort(), ['child=bat', 'child=cat', 'child=dog']);
      assert.deepEqual(properties(res.body).filter((p) => p.startsWith('parent=')), ['parent=animal']);
    });

    test('the property input restricts the properties returned', async () => {
      const res = await lookup(`system=${URL_}&code=dog&property=parent&property=legs`);
      assert.deepEqual(properties(res.body).sort(), ['legs=4', 'parent=mammal']);
    });

    test('a retired concept is inactive; notSelectable is reported as abstract', async () => {
      const dodo = await lookup(`system=${URL_}&code=dodo`);
      assert.ok(properties(dodo.body).includes('inactive=true'));
      assert.ok(properties(dodo.body).includes('status=retired'));
      const animal = await lookup(`system=${URL_}&code=animal`);
      assert.equal(outs(animal.body).get('abstract')?.[0].valueBoolean, true);
    });

    test('displayLanguage picks the designation in that language', async () => {
      const res = await lookup(`system=${URL_}&code=dog&displayLanguage=de`);
      assert.equal(outs(res.body).get('display')?.[0].valueString, 'Hund');
    });

    test('POST with a coding, and instance level with code only', async () => {
      const post = await server.fhir('POST', '/CodeSystem/$lookup', {
        body: { resourceType: 'Parameters', parameter: [{ name: 'coding', valueCoding: { system: URL_, code: 'cat' } }] },
      });
      assert.equal(post.status, 200, post.text);
      assert.equal(outs(post.body).get('display')?.[0].valueString, 'Cat');
      const instance = await server.fhir('GET', `/CodeSystem/${ANIMALS.id}/$lookup?code=cat`);
      assert.equal(instance.status, 200, instance.text);
      assert.equal(outs(instance.body).get('display')?.[0].valueString, 'Cat');
    });

    test('errors: code not found, unknown system, unknown instance, missing inputs', async () => {
      // The code, the code system and its version are named (the wording of $validate-code's unknown codes).
      expectOO(await lookup(`system=${URL_}&code=unicorn`), 404, 'not-found', `Unknown code 'unicorn' in the CodeSystem '${URL_}' version '1.0.0'`);
      expectOO(await lookup('system=http://example.org/nope&code=x'), 404, 'not-found', 'CodeSystem http://example.org/nope not found');
      expectOO(await server.fhir('GET', '/CodeSystem/no-such-id/$lookup?code=x'), 404, 'not-found', 'Not found');
      expectOO(await lookup('code=dog'), 400, 'invalid', 'No code system specified');
      expectOO(await lookup(`system=${URL_}`), 400, 'invalid', 'No code specified');
      expectOO(await server.fhir('GET', `/CodeSystem/${ANIMALS.id}/$lookup`), 400, 'invalid', 'No code specified');
      const other = await server.fhir('POST', `/CodeSystem/${ANIMALS.id}/$lookup`, {
        body: { resourceType: 'Parameters', parameter: [{ name: 'coding', valueCoding: { system: 'http://other', code: 'dog' } }] },
      });
      expectOO(other, 404, 'not-found', 'Not found');
    });

    test('base terminologies work out of the box', async () => {
      const res = await lookup('system=http://hl7.org/fhir/administrative-gender&code=male');
      assert.equal(res.status, 200, res.text);
      assert.equal(outs(res.body).get('display')?.[0].valueString, 'Male');
      assert.equal(outs(res.body).get('name')?.[0].valueString, 'AdministrativeGender');
      // v3 and v2 code systems too, and the base value sets
      const v3 = await lookup('system=http://terminology.hl7.org/CodeSystem/v3-ActCode&code=AMB');
      assert.equal(v3.status, 200, v3.text);
      const vs = await server.fhir(
        'GET',
        '/ValueSet/$validate-code?url=http://hl7.org/fhir/ValueSet/administrative-gender&system=http://hl7.org/fhir/administrative-gender&code=female',
      );
      assert.equal(vs.status, 200, vs.text);
      assert.equal(outs(vs.body).get('result')?.[0].valueBoolean, true);
      // shared content: every project sees it; it is readable as a resource
      const asB = await lookup('system=http://hl7.org/fhir/administrative-gender&code=other', projectB.adminToken);
      assert.equal(asB.status, 200, asB.text);
      const read = await server.fhir('GET', '/CodeSystem/administrative-gender', { token: projectA.adminToken });
      assert.equal(read.status, 200, read.text);
    });

    test('useSupplement adds the designations and properties of a supplement', async () => {
      await put({
        resourceType: 'CodeSystem',
        id: 'animals-es',
        url: 'http://example.org/fhir/CodeSystem/animals-es',
        status: 'active',
        content: 'supplement',
        supplements: URL_,
        concept: [{ code: 'dog', designation: [{ language: 'es', value: 'Perro' }], property: [{ code: 'sound', valueString: 'guau' }] }],
      });
      const plain = await lookup(`system=${URL_}&code=dog&displayLanguage=es`);
      assert.equal(outs(plain.body).get('display')?.[0].valueString, 'Dog');
      const res = await lookup(`system=${URL_}&code=dog&displayLanguage=es&useSupplement=http://example.org/fhir/CodeSystem/animals-es`);
      assert.equal(res.status, 200, res.text);
      assert.equal(outs(res.body).get('display')?.[0].valueString, 'Perro');
      assert.ok(properties(res.body).includes('sound=guau'));
      const valid = await server.fhir(
        'GET',
        `/CodeSystem/$validate-code?url=${URL_}&code=dog&display=Perro&useSupplement=http://example.org/fhir/CodeSystem/animals-es`,
      );
      assert.equal(outs(valid.body).get('result')?.[0].valueBoolean, true, valid.text);
      expectOO(
        await lookup(`system=${URL_}&code=dog&useSupplement=http://example.org/nope`),
        404,
        'not-found',
        'Required supplement not found: http://example.org/nope',
      );
    });

    test('versions: newest by semver unless a version is asked for (url|version or version)', async () => {
      const url = 'http://example.org/fhir/CodeSystem/versioned';
      for (const v of ['9.0.0', '10.0.0', '2.1.0']) {
        await put({ resourceType: 'CodeSystem', id: `versioned-${v.replace(/\./g, '-')}`, url, version: v, status: 'active', content: 'complete', concept: [{ code: 'a', display: `A ${v}` }] });
      }
      const display = async (q: string) => outs((await lookup(q)).body).get('display')?.[0].valueString;
      assert.equal(await display(`system=${url}&code=a`), 'A 10.0.0');
      assert.equal(await display(`system=${url}&code=a&version=9.0.0`), 'A 9.0.0');
      assert.equal(await display(`system=${encodeURIComponent(`${url}|2.1.0`)}&code=a`), 'A 2.1.0');
      expectOO(await lookup(`system=${url}&code=a&version=3.0.0`), 404, 'not-found', `CodeSystem ${url}|3.0.0 not found`);
    });

    test('case sensitivity: case-insensitive systems match any case, others do not', async () => {
      await put({ resourceType: 'CodeSystem', id: 'ci', url: 'http://example.org/ci', status: 'active', content: 'complete', caseSensitive: false, concept: [{ code: 'Abc', display: 'ABC' }] });
      const ci = await lookup('system=http://example.org/ci&code=aBC');
      assert.equal(ci.status, 200, ci.text);
      assert.equal(outs(ci.body).get('display')?.[0].valueString, 'ABC');
      expectOO(await lookup(`system=${URL_}&code=DOG`), 404, 'not-found', `Unknown code 'DOG' in the CodeSystem '${URL_}' version '1.0.0'`);
    });

    test('an update re-indexes; a delete removes the index', async () => {
      const cs = { resourceType: 'CodeSystem', id: 'mutable', url: 'http://example.org/mutable', status: 'active', content: 'complete', concept: [{ code: 'old', display: 'Old' }] } as CodeSystem;
      await put(cs);
      assert.equal((await lookup('system=http://example.org/mutable&code=old')).status, 200);
      await put({ ...cs, concept: [{ code: 'new', display: 'New' }] });
      expectOO(await lookup('system=http://example.org/mutable&code=old'), 404, 'not-found', "Unknown code 'old' in the CodeSystem 'http://example.org/mutable'");
      assert.equal((await lookup('system=http://example.org/mutable&code=new')).status, 200);
      const del = await server.fhir('DELETE', '/CodeSystem/mutable');
      assert.equal(del.status, 200, del.text);
      expectOO(await lookup('system=http://example.org/mutable&code=new'), 404, 'not-found', 'CodeSystem http://example.org/mutable not found');
    });

    test('tenancy: a project sees its own code systems first, then shared ones, never another project’s', async () => {
      const url = 'http://example.org/fhir/CodeSystem/tenant';
      const shared = { resourceType: 'CodeSystem', id: 'tenant-shared', url, version: '1', status: 'active', content: 'complete', concept: [{ code: 'x', display: 'Shared' }] } as CodeSystem;
      await server.app.system.update(shared);
      await put({ ...shared, id: 'tenant-a', concept: [{ code: 'x', display: 'Mine' }, { code: 'only-a', display: 'A only' }] }, projectA.adminToken);
      const display = async (token: string, code = 'x') => {
        const res = await lookup(`system=${url}&code=${code}`, token);
        return res.status === 200 ? outs(res.body).get('display')?.[0].valueString : res.status;
      };
      assert.equal(await display(projectA.adminToken), 'Mine');
      assert.equal(await display(projectB.adminToken), 'Shared');
      assert.equal(await display(projectB.adminToken, 'only-a'), 404);
      const hidden = await server.fhir('GET', '/CodeSystem/tenant-a/$lookup?code=x', { token: projectB.adminToken });
      expectOO(hidden, 404, 'not-found', 'Not found');
    });

    test('a large code system (2,000 concepts, 12 levels, two parents each) is indexed with its closure', async () => {
      const concept = Array.from({ length: 2000 }, (_, i) => {
        const parents = i === 0 ? [] : [Math.floor((i - 1) / 2), Math.max(0, Math.floor((i - 1) / 2) - 1)];
        const property = [...new Set(parents)].map((p) => ({ code: 'parent', valueCode: `n${p}` }));
        return { code: `n${i}`, display: `Node ${i}`, ...(property.length > 0 ? { property } : {}) };
      });
      const started = Date.now();
      await put({ resourceType: 'CodeSystem', id: 'dag', url: 'http://example.org/dag', status: 'active', content: 'complete', hierarchyMeaning: 'is-a', concept });
      assert.ok(Date.now() - started < 20_000, `indexing took ${Date.now() - started} ms`);
      const res = await server.fhir('GET', '/CodeSystem/$subsumes?system=http://example.org/dag&codeA=n0&codeB=n1999');
      assert.equal(res.status, 200, res.text);
      assert.equal(outs(res.body).get('outcome')?.[0].valueCode, 'subsumes');
    });
  });
}
