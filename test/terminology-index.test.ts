import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { CodeSystem, CodeSystemConcept, ValueSet, ValueSetComposeInclude } from '@medplum/fhirtypes';
import { ValueSetEvaluator } from '../src/terminology/engine/compose.js';
import { indexOf } from '../src/terminology/providers/fhir/index-provider.js';
import { parseLanguages } from '../src/terminology/engine/display.js';
import { expandValueSet } from '../src/terminology/engine/expand.js';
import { terminologyCache } from '../src/terminology/providers/fhir/index-cache.js';
import { lookupCode } from '../src/terminology/engine/lookup.js';
import { resolveCodeSystem } from '../src/terminology/engine/resolve.js';
import { subsumes } from '../src/terminology/engine/subsumes.js';
import type { CodeSystemInfo, TermContext } from '../src/terminology/types.js';
import { parseVersionRules } from '../src/terminology/versions.js';
import { drivers, startServer, type TestServer } from './harness.js';

/**
 * The in-memory terminology index (docs/terminology.md#in-memory-index) answers exactly as the
 * SQL reference does: on a generated code system (multi-parent hierarchy, designations, typed
 * properties, inactive and abstract concepts, one case-insensitive twin), thousands of random
 * lookups, subsumes pairs and value-set memberships are asked of both paths and compared.
 */

/** Deterministic pseudo-random numbers (mulberry32). */
function rng(seed: number): () => number {
  let a = seed;
  return () => {
    a |= 0;
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const SIZE = 2500;
/** Extra parent edges that close cycles (child → parent). */
const CYCLES = new Map([
  [10, 11],
  [11, 10],
  [20, 21],
  [21, 22],
  [22, 20],
]);
const WORDS = ['alpha', 'beta', 'gamma', 'delta', 'Epsilon', 'zeta'];

/** A generated code system: concept i has 1–3 parents among the concepts before it. */
function generated(url: string, id: string, caseSensitive: boolean): CodeSystem {
  const random = rng(caseSensitive ? 7 : 11);
  const concept: CodeSystemConcept[] = [];
  for (let i = 0; i < SIZE; i++) {
    const parents = new Set<number>();
    if (i > 0) {
      const count = random() < 0.28 ? 2 + Math.floor(random() * 2) : 1;
      for (let k = 0; k < count; k++) parents.add(Math.floor(random() * i * (k === 0 ? 0.5 : 1)));
    }
    // The case-insensitive system has two cycles (concepts 10 ⇄ 11, 20 → 21 → 22 → 20): a concept
    // in a cycle is not its own ancestor, on both paths.
    if (!caseSensitive && CYCLES.has(i)) parents.add(CYCLES.get(i) as number);
    const c: CodeSystemConcept = {
      code: `K${i}${i % 7 === 0 ? 'x' : ''}`,
      display: i % 13 === 0 ? undefined : `Concept ${i} ${WORDS[i % WORDS.length]}`,
      property: [
        ...[...parents].map((p) => ({ code: 'parent', valueCode: `K${p}${p % 7 === 0 ? 'x' : ''}` })),
        { code: 'group', valueString: `g${i % 10}` },
        ...(i % 3 === 0 ? [{ code: 'rank', valueInteger: i % 5 }] : []),
        ...(i % 11 === 0 ? [{ code: 'inactive', valueBoolean: true }] : []),
        ...(i % 17 === 0 ? [{ code: 'notSelectable', valueBoolean: true }] : []),
        ...(i % 19 === 0 ? [{ code: 'status', valueCode: 'retired' }] : []),
        ...(i % 23 === 0 && i > 0 ? [{ code: 'sibling', valueCode: `K${i - 1}${(i - 1) % 7 === 0 ? 'x' : ''}` }] : []),
      ],
    };
    if (i % 4 === 0) c.designation = [{ language: 'de', value: `Begriff ${i}` }, { language: 'fr', use: { system: 'http://snomed.info/sct', code: '900000000000013009' }, value: `Terme ${i}` }];
    if (i % 29 === 0) c.definition = `Definition of ${i}`;
    concept.push(c);
  }
  return {
    resourceType: 'CodeSystem',
    id,
    url,
    version: '1.0.0',
    name: 'Generated',
    status: 'active',
    content: 'complete',
    caseSensitive,
    property: [
      { code: 'parent', uri: 'http://hl7.org/fhir/concept-properties#parent', type: 'code' },
      { code: 'group', type: 'string' },
      { code: 'rank', type: 'integer' },
      { code: 'inactive', uri: 'http://hl7.org/fhir/concept-properties#inactive', type: 'boolean' },
      { code: 'notSelectable', uri: 'http://hl7.org/fhir/concept-properties#notSelectable', type: 'boolean' },
      { code: 'status', uri: 'http://hl7.org/fhir/concept-properties#status', type: 'code' },
      { code: 'sibling', type: 'code' },
    ],
    concept,
  };
}

/** Includes exercising every filter operator the engine knows. */
function includes(system: string): ValueSetComposeInclude[][] {
  const f = (property: string, op: string, value: string) => ({ system, filter: [{ property, op, value }] }) as ValueSetComposeInclude;
  return [
    [f('concept', 'is-a', 'K3')],
    [f('concept', 'descendent-of', 'K1')],
    [f('concept', 'is-not-a', 'K2')],
    [f('concept', 'generalizes', 'K2400')],
    [f('concept', 'descendent-of', 'K10')],
    [f('concept', 'generalizes', 'K22')],
    [{ system, filter: [{ property: 'concept', op: 'child-of' as never, value: 'K5' }] }],
    [{ system, filter: [{ property: 'concept', op: 'descendent-leaf' as never, value: 'K4' }] }],
    [f('code', '=', 'k14X')],
    [f('code', 'in', 'K10,k21x,K22,K999')],
    [f('code', 'not-in', 'K10,K11,K12')],
    [f('code', 'regex', 'K1[0-9]*7')],
    [f('code', 'exists', 'true')],
    [f('display', 'regex', 'Concept [0-9]+ (alpha|beta)')],
    [f('display', '=', 'Concept 5 zeta')],
    [f('display', 'in', 'Concept 1 beta,Concept 2 gamma')],
    [f('display', 'not-in', 'Concept 1 beta,Concept 2 gamma')],
    [f('display', 'exists', 'false')],
    [f('inactive', '=', 'true')],
    [f('notSelectable', '=', 'false')],
    [f('parent', '=', 'K2')],
    [f('child', 'in', 'K100,K101,K102')],
    [f('group', '=', 'g3')],
    [f('group', 'in', 'g1,g2')],
    [f('group', 'not-in', 'g1,g2')],
    [f('group', 'regex', 'g[4-6]')],
    [f('rank', 'exists', 'true')],
    [f('sibling', 'is-a', 'K1')],
    [f('sibling', 'descendent-of', 'K3')],
    [{ system, concept: [{ code: 'K1' }, { code: 'k2' }, { code: 'K7X' }, { code: 'nope' }] }],
    [{ system, filter: [{ property: 'concept', op: 'is-a', value: 'K2' }, { property: 'group', op: 'in', value: 'g1,g3,g5' }] }],
    [{ system }],
    [{ system, valueSet: ['http://example.org/vs/nested'] }, f('concept', 'is-a', 'K9')],
  ];
}

for (const driver of drivers) {
  describe(`terminology index: in-memory answers equal the SQL reference (${driver})`, () => {
    let server: TestServer;
    let memory: TermContext;
    let reference: TermContext;
    const systems: Array<{ url: string; cs: CodeSystemInfo }> = [];
    const nested: ValueSet = {
      resourceType: 'ValueSet',
      url: 'http://example.org/vs/nested',
      status: 'active',
      compose: { include: [{ system: 'http://example.org/gen/cs', filter: [{ property: 'concept', op: 'descendent-of', value: 'K2' }] }] },
    };

    before(async () => {
      server = await startServer(driver);
      for (const [url, id, sensitive] of [
        ['http://example.org/gen/cs', 'gen-cs', true],
        ['http://example.org/gen/ci', 'gen-ci', false],
      ] as const) {
        const put = await server.fhir('PUT', `/CodeSystem/${id}`, { body: generated(url, id, sensitive) });
        assert.equal(put.status, 201, put.text);
      }
      const app = server.app;
      const context = (sqlReference: boolean): TermContext => ({
        db: app.db,
        repo: app.system,
        env: { db: app.db, system: app.system, log: app.log },
        log: app.log,
        inlineCodeSystems: [],
        inlineValueSets: [nested],
        supplements: [],
        memo: new Map(),
        versionRules: parseVersionRules({}),
        sqlReference,
      });
      memory = context(false);
      reference = context(true);
      for (const url of ['http://example.org/gen/cs', 'http://example.org/gen/ci']) {
        const cs = await resolveCodeSystem(memory, url);
        assert.ok(cs);
        await indexOf(memory, cs); // built before comparing: until then the memory path answers from SQL too
        systems.push({ url, cs });
      }
    });
    after(() => server.stop());

    /** Random codes of the system: most exist, some differ in case, some are unknown. */
    function codes(seed: number, count: number): string[] {
      const random = rng(seed);
      return Array.from({ length: count }, () => {
        const i = Math.floor(random() * SIZE * 1.05);
        const code = `K${i}${i % 7 === 0 ? 'x' : ''}`;
        return random() < 0.1 ? code.toLowerCase() : code;
      });
    }

    /** The answer, or the error's status and message, of one call. */
    async function outcome<T>(fn: () => Promise<T>): Promise<T | string> {
      try {
        return await fn();
      } catch (err) {
        return `${(err as { status?: number }).status ?? 'throw'} ${JSON.stringify((err as { outcome?: unknown }).outcome ?? (err as Error).message)}`;
      }
    }

    test('1,000 random $lookups per system answer identically', async () => {
      const languages = parseLanguages('de');
      for (const { cs } of systems) {
        let found = 0;
        for (const code of codes(1, 1000)) {
          const a = await outcome(() => lookupCode(memory, cs, code, languages, undefined));
          const b = await outcome(() => lookupCode(reference, cs, code, languages, undefined));
          assert.deepEqual(a, b, `lookup ${cs.url} ${code}`);
          if (typeof a !== 'string') found++;
        }
        assert.ok(found > 750, `only ${found} codes found`);
      }
    });

    test('3,000 random $subsumes pairs per system answer identically', async () => {
      for (const { cs } of systems) {
        const left = codes(2, 3000);
        const right = codes(3, 3000);
        const seen = new Set<string>();
        for (let i = 0; i < left.length; i++) {
          const a = await outcome(() => subsumes(memory, cs, left[i], right[i]));
          const b = await outcome(() => subsumes(reference, cs, left[i], right[i]));
          assert.deepEqual(a, b, `subsumes ${cs.url} ${left[i]} ${right[i]}`);
          seen.add(String(a));
        }
        // Pairs within the cycles (of the case-insensitive system).
        for (const [x, y] of [['K10', 'K11'], ['K11', 'K10'], ['K20', 'K22'], ['K22', 'K21x'], ['K21x', 'K20'], ['K10', 'K10'], ['K0x', 'K21x']]) {
          assert.deepEqual(await outcome(() => subsumes(memory, cs, x, y)), await outcome(() => subsumes(reference, cs, x, y)), `subsumes ${cs.url} ${x} ${y}`);
        }
        // The pairs cover every outcome (incl. deep ancestors through several parents).
        const root = await subsumes(memory, cs, 'K0x', 'K2498');
        assert.equal(root, await subsumes(reference, cs, 'K0x', 'K2498'));
        assert.equal(root, 'subsumes');
        assert.ok(seen.has('not-subsumed') && seen.has('subsumes') && seen.has('subsumed-by'), [...seen].join());
      }
    });

    test('value-set membership of 1,500 random codes is identical for every filter operator, include, exclude and nesting', async () => {
      let members = 0;
      for (const { url } of systems) {
        const all = includes(url);
        for (const [i, include] of all.entries()) {
          const vs: ValueSet = {
            resourceType: 'ValueSet',
            url: `http://example.org/vs/${i}`,
            status: 'active',
            compose: { include, ...(i % 4 === 1 ? { exclude: [{ system: url, filter: [{ property: 'group', op: '=', value: 'g2' }] }] } : {}), ...(i % 5 === 2 ? { inactive: false } : {}) },
          };
          const sample = [...codes(100 + i, 1500), 'K10', 'K11', 'K20', 'K21x', 'K22']; // with the cycles' members
          for (const activeOnly of [false, true]) {
            const a = await outcome(async () => [...(await new ValueSetEvaluator(memory, vs).members(url, undefined, sample, { activeOnly }))].sort());
            const b = await outcome(async () => [...(await new ValueSetEvaluator(reference, vs).members(url, undefined, sample, { activeOnly }))].sort());
            assert.deepEqual(a, b, `${url} include ${JSON.stringify(include)} activeOnly ${activeOnly}`);
            if (Array.isArray(a)) members += a.length;
          }
        }
      }
      assert.ok(members > 10_000, `only ${members} members in all`);
    });

    test('$expand pages are identical (filters, text filter, offsets)', async () => {
      for (const { url } of systems) {
        for (const [i, include] of includes(url).entries()) {
          if (i % 3 !== 0) continue;
          const vs: ValueSet = { resourceType: 'ValueSet', url: `http://example.org/vs/x${i}`, status: 'active', compose: { include } };
          for (const filter of [undefined, 'alp', 'begriff 1']) {
            const req = { offset: 7, count: 50, filter, activeOnly: false, includeDesignations: true, includeDefinition: false, languages: parseLanguages(undefined), echo: [] };
            const strip = (v: ValueSet | string) => (typeof v === 'string' ? v : { ...v.expansion, identifier: undefined, timestamp: undefined });
            const a = strip(await outcome(() => expandValueSet(memory, vs, req)));
            const b = strip(await outcome(() => expandValueSet(reference, vs, req)));
            assert.deepEqual(a, b, `expand ${url} ${JSON.stringify(include)} filter ${filter}`);
          }
        }
      }
    });

    test('an invalid filter is the same 400 on both paths', async () => {
      const url = systems[0].url;
      for (const filter of [
        { property: 'concept', op: 'is-a', value: '' },
        { property: 'concept', op: 'regex', value: 'a)|(b' },
        { property: 'concept', op: 'regex', value: '[' },
        { property: 'inactive', op: '=', value: 'maybe' },
        { property: 'concept', op: 'nonsense', value: 'K1' },
      ]) {
        const vs = { resourceType: 'ValueSet', url: 'http://example.org/vs/bad', status: 'active', compose: { include: [{ system: url, filter: [filter] }] } } as ValueSet;
        const a = await outcome(() => new ValueSetEvaluator(memory, vs).members(url, undefined, ['K1']));
        const b = await outcome(() => new ValueSetEvaluator(reference, vs).members(url, undefined, ['K1']));
        assert.equal(typeof a, 'string', JSON.stringify(filter));
        assert.equal(a, b, JSON.stringify(filter));
      }
    });

    test('the index was built once per code system and kept', () => {
      const stats = terminologyCache(server.app.db).stats();
      assert.ok(stats.indexes >= 2, JSON.stringify(stats));
      assert.equal(stats.evictions, 0);
    });
  });
}
