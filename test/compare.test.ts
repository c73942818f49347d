import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { CodeSystem, Parameters, ValueSet, ValueSetComposeInclude } from '@medplum/fhirtypes';
import { drivers, ooText, startServer, type TestServer } from './harness.js';

/**
 * ValueSet/$compare (docs/terminology.md#compare): the relation of one value set's codes to
 * another's, decided from the definitions where they suffice (`performed-expansion` false), else
 * from the expansions, and `indeterminate` with the reason when neither can decide.
 */

const SYS = 'http://example.org/fhir/CodeSystem/animals';
const OTHER = 'http://example.org/fhir/CodeSystem/colours';

function animals(version: string, extra: boolean): CodeSystem {
  return {
    resourceType: 'CodeSystem',
    id: `animals-${version}`,
    url: SYS,
    version,
    status: 'active',
    content: 'complete',
    hierarchyMeaning: 'is-a',
    concept: [
      {
        code: 'animal',
        concept: [
          { code: 'bird', concept: [{ code: 'owl' }, { code: 'wren' }, ...(extra ? [{ code: 'kite' }] : [])] },
          { code: 'fish', concept: [{ code: 'pike' }] },
        ],
      },
    ],
  };
}

const COLOURS: CodeSystem = {
  resourceType: 'CodeSystem', id: 'colours', url: OTHER, version: '1', status: 'active', content: 'complete',
  concept: [{ code: 'red' }, { code: 'blue' }],
};

const vs = (name: string, include: ValueSetComposeInclude[], exclude?: ValueSetComposeInclude[]): ValueSet => ({
  resourceType: 'ValueSet', url: `http://example.org/fhir/ValueSet/${name}`, version: '1', status: 'active', compose: { include, ...(exclude ? { exclude } : {}) },
});
const isA = (value: string, version?: string): ValueSetComposeInclude => ({ system: SYS, ...(version ? { version } : {}), filter: [{ property: 'concept', op: 'is-a', value }] });
const codes = (...list: string[]): ValueSetComposeInclude => ({ system: SYS, concept: list.map((code) => ({ code })) });

type Out = Record<string, string | boolean | undefined>;

for (const driver of drivers) {
  describe(`ValueSet/$compare (${driver})`, () => {
    let server: TestServer;
    before(async () => {
      server = await startServer(driver);
      for (const cs of [animals('1', false), animals('2', true), COLOURS]) {
        const res = await server.fhir('PUT', `/CodeSystem/${cs.id}`, { body: cs });
        assert.ok(res.status < 300, res.text);
      }
    });
    after(() => server?.stop());

    async function compare(a: ValueSet, b: ValueSet): Promise<Out> {
      const res = await server.fhir<Parameters>('POST', '/ValueSet/$compare', {
        body: { resourceType: 'Parameters', parameter: [{ name: 'thisValueSet', resource: a }, { name: 'otherValueSet', resource: b }] },
      });
      assert.equal(res.status, 200, res.text);
      const out: Out = {};
      for (const p of res.body.parameter ?? []) out[p.name] = p.valueCode ?? p.valueString ?? p.valueBoolean;
      return out;
    }

    test('definitions that differ only in the order of includes and filters are the same, without expanding', async () => {
      const a = vs('a', [isA('bird'), { system: SYS, filter: [{ property: 'concept', op: 'is-a', value: 'fish' }, { property: 'concept', op: 'regex', value: 'p.*' }] }]);
      const b = vs('b', [{ system: SYS, filter: [{ property: 'concept', op: 'regex', value: 'p.*' }, { property: 'concept', op: 'is-a', value: 'fish' }] }, isA('bird')]);
      assert.deepEqual(await compare(a, b), {
        result: 'same', 'performed-expansion': false,
        message: 'The value sets http://example.org/fhir/ValueSet/a|1 and http://example.org/fhir/ValueSet/b|1 contain the same codes',
      });
    });

    test('an is-a branch is a sub-set of the tree above it, and that tree a super-set, from the hierarchy alone', async () => {
      const branch = vs('branch', [isA('bird')]);
      const tree = vs('tree', [isA('animal')]);
      const sub = await compare(branch, tree);
      assert.equal(sub.result, 'subset');
      assert.equal(sub['performed-expansion'], false);
      assert.equal(sub.message, 'The valueSet http://example.org/fhir/ValueSet/branch|1 is a sub-set of the valueSet http://example.org/fhir/ValueSet/tree|1');
      const sup = await compare(tree, branch);
      assert.equal(sup.result, 'superset');
      assert.equal(sup.message, 'The valueSet http://example.org/fhir/ValueSet/tree|1 is a super-set of the valueSet http://example.org/fhir/ValueSet/branch|1');
    });

    test('enumerations are compared code by code, listing the common, missing and extra codes', async () => {
      const out = await compare(vs('x', [codes('owl', 'wren', 'pike')]), vs('y', [codes('pike', 'fish', 'owl'), { system: OTHER, concept: [{ code: 'red' }] }]));
      assert.deepEqual(out, {
        result: 'overlapping', 'performed-expansion': false, 'common-codes': 'owl,pike', 'missing-codes': 'wren', 'extra-codes': 'fish,red',
        message: "Both value sets http://example.org/fhir/ValueSet/x|1 and http://example.org/fhir/ValueSet/y|1 contain the codes the other doesn't, but there is some overlap",
      });
    });

    test('value sets drawing on different code systems are disjoint', async () => {
      const out = await compare(vs('p', [isA('bird')]), vs('q', [{ system: OTHER }]));
      assert.equal(out.result, 'disjoint');
      assert.equal(out.message, 'No shared codes between the value sets http://example.org/fhir/ValueSet/p|1 and http://example.org/fhir/ValueSet/q|1');
    });

    test('a filter against an enumeration, an exclude or an import is settled by expanding both', async () => {
      const filtered = await compare(vs('f', [isA('bird')]), vs('e', [codes('bird', 'owl', 'wren', 'kite', 'pike')]));
      assert.deepEqual(
        [filtered.result, filtered['performed-expansion'], filtered['common-codes'], filtered['extra-codes'], filtered['missing-codes']],
        ['subset', true, 'bird,kite,owl,wren', 'pike', undefined],
      );
      const excluded = await compare(vs('all-but-fish', [{ system: SYS, version: '1' }], [{ system: SYS, version: '1', concept: [{ code: 'fish' }, { code: 'pike' }] }]), vs('listed', [{ ...codes('animal', 'bird', 'owl', 'wren'), version: '1' }]));
      assert.deepEqual([excluded.result, excluded['performed-expansion']], ['same', true]);
    });

    test('includes of different versions of a code system are compared by their expansions, codes by system and code', async () => {
      // version 2 adds kite under bird
      const out = await compare(vs('v1', [isA('bird', '1')]), vs('v2', [isA('bird', '2')]));
      assert.deepEqual([out.result, out['performed-expansion'], out['extra-codes']], ['subset', true, 'kite']);
    });

    test('when neither the definitions nor the expansions decide, the answer is indeterminate with the reason', async () => {
      const unknown: ValueSetComposeInclude = { system: 'http://example.org/fhir/CodeSystem/nowhere', filter: [{ property: 'concept', op: 'is-a', value: 'z' }] };
      const out = await compare(vs('u', [unknown]), vs('w', [isA('bird')]));
      assert.equal(out.result, 'indeterminate');
      assert.equal(out['performed-expansion'], true);
      assert.match(out.message as string, /^Unable to compare http:\/\/example.org\/fhir\/ValueSet\/u\|1 and http:\/\/example.org\/fhir\/ValueSet\/w\|1: This expansion failed: .*nowhere/);
    });

    test('value sets by url; a missing one is a 400 naming it', async () => {
      const stored = { ...vs('stored', [isA('fish')]), id: 'stored' };
      assert.ok((await server.fhir('PUT', '/ValueSet/stored', { body: stored })).status < 300);
      const res = await server.fhir<Parameters>('POST', '/ValueSet/$compare', {
        body: { resourceType: 'Parameters', parameter: [{ name: 'thisUrl', valueUri: stored.url }, { name: 'otherValueSet', resource: vs('tree', [isA('animal')]) }] },
      });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.parameter?.find((p) => p.name === 'result')?.valueCode, 'subset');
      const missing = await server.fhir('POST', '/ValueSet/$compare', {
        body: { resourceType: 'Parameters', parameter: [{ name: 'thisUrl', valueUri: 'http://example.org/fhir/ValueSet/none' }, { name: 'otherUrl', valueUri: stored.url }] },
      });
      assert.equal(missing.status, 400);
      assert.equal(ooText(missing.body as never), 'ValueSet http://example.org/fhir/ValueSet/none not found');
      const neither = await server.fhir('POST', '/ValueSet/$compare', { body: { resourceType: 'Parameters', parameter: [{ name: 'otherUrl', valueUri: stored.url }] } });
      assert.equal(neither.status, 400);
      assert.equal(ooText(neither.body as never), 'No this value set specified (thisUrl or thisValueSet)');
    });
  });
}
