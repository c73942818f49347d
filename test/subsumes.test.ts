import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { CodeSystem, CodeSystemConcept } from '@medplum/fhirtypes';
import { drivers, ooText, startServer, type ApiResponse, type TestServer } from './harness.js';

/**
 * CodeSystem/$subsumes (docs/terminology.md#subsumes): answered from the closure of the hierarchy, whatever
 * its shape — diamonds, deep chains, several paths, hierarchies declared by nesting or by
 * parent/child properties in either direction, even cycles — with the contract's error texts.
 */

const SYS = 'http://example.org/fhir/CodeSystem/shapes';

/** 20-level chain l0 → l1 → … → l19, nested. */
function chain(depth: number): CodeSystemConcept[] {
  let node: CodeSystemConcept | undefined;
  for (let i = depth - 1; i >= 0; i--) node = { code: `l${i}`, display: `Level ${i}`, ...(node ? { concept: [node] } : {}) };
  return [node as CodeSystemConcept];
}

const SHAPES: CodeSystem = {
  resourceType: 'CodeSystem',
  id: 'shapes',
  url: SYS,
  version: '1',
  status: 'active',
  content: 'complete',
  hierarchyMeaning: 'is-a',
  concept: [
    // diamond: top → left, right → bottom (bottom nested under both); right also has a second
    // parent, far (a parent property), so far reaches bottom only through right
    {
      code: 'top',
      display: 'Top',
      concept: [
        { code: 'left', concept: [{ code: 'bottom' }] },
        { code: 'right', property: [{ code: 'parent', valueCode: 'far' }], concept: [{ code: 'bottom' }] },
      ],
    },
    { code: 'far', display: 'Far' },
    { code: 'extra', property: [{ code: 'parent', valueCode: 'far' }] },
    // child property declared on the parent
    { code: 'boss', property: [{ code: 'child', valueCode: 'worker' }] },
    { code: 'worker' },
    // a cycle must not hang indexing or queries
    { code: 'egg', property: [{ code: 'parent', valueCode: 'hen' }] },
    { code: 'hen', property: [{ code: 'parent', valueCode: 'egg' }] },
    { code: 'alone' },
    ...chain(20),
  ],
};

function expectOO(res: ApiResponse, status: number, code: string, text: string): void {
  assert.equal(res.status, status, res.text);
  assert.equal(res.body.resourceType, 'OperationOutcome');
  assert.equal(res.body.issue[0].code, code);
  assert.equal(ooText(res.body), text);
}

for (const driver of drivers) {
  describe(`$subsumes (${driver})`, () => {
    let server: TestServer;
    const subsumes = (a: string, b: string, system = SYS) =>
      server.fhir('GET', `/CodeSystem/$subsumes?system=${encodeURIComponent(system)}&codeA=${encodeURIComponent(a)}&codeB=${encodeURIComponent(b)}`);
    const outcome = async (a: string, b: string, system = SYS) => {
      const res = await subsumes(a, b, system);
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.body, { resourceType: 'Parameters', parameter: [{ name: 'outcome', valueCode: res.body.parameter[0].valueCode }] });
      return res.body.parameter[0].valueCode;
    };
    const put = async (cs: CodeSystem) => {
      const res = await server.fhir('PUT', `/CodeSystem/${cs.id}`, { body: cs });
      assert.ok(res.status === 200 || res.status === 201, res.text);
    };

    before(async () => {
      server = await startServer(driver);
      await put(SHAPES);
      await put({ resourceType: 'CodeSystem', id: 'parts', url: 'http://example.org/parts', status: 'active', content: 'complete', hierarchyMeaning: 'part-of', concept: [{ code: 'car', concept: [{ code: 'wheel' }] }] });
      await put({ resourceType: 'CodeSystem', id: 'ci-shapes', url: 'http://example.org/ci-shapes', status: 'active', content: 'complete', caseSensitive: false, concept: [{ code: 'Round', concept: [{ code: 'Circle' }] }] });
    });
    after(() => server.stop());

    test('diamond: the top subsumes the bottom through either side; siblings are not related', async () => {
      assert.equal(await outcome('top', 'bottom'), 'subsumes');
      assert.equal(await outcome('left', 'bottom'), 'subsumes');
      assert.equal(await outcome('right', 'bottom'), 'subsumes');
      assert.equal(await outcome('left', 'right'), 'not-subsumed');
    });

    test('reversed order answers subsumed-by', async () => {
      assert.equal(await outcome('bottom', 'top'), 'subsumed-by');
      assert.equal(await outcome('l19', 'l0'), 'subsumed-by');
    });

    test('depth 20: every ancestor subsumes the deepest concept', async () => {
      assert.equal(await outcome('l0', 'l19'), 'subsumes');
      assert.equal(await outcome('l7', 'l15'), 'subsumes');
      assert.equal(await outcome('l15', 'l7'), 'subsumed-by');
    });

    test('two paths: an ancestor reachable only through the second parent counts', async () => {
      assert.equal(await outcome('far', 'bottom'), 'subsumes');
      assert.equal(await outcome('far', 'extra'), 'subsumes');
      assert.equal(await outcome('top', 'extra'), 'not-subsumed');
    });

    test('child properties declare the hierarchy as well as parent properties', async () => {
      assert.equal(await outcome('boss', 'worker'), 'subsumes');
      assert.equal(await outcome('worker', 'boss'), 'subsumed-by');
    });

    test('equivalent: the same code, or the same up to case in a case-insensitive system', async () => {
      assert.equal(await outcome('top', 'top'), 'equivalent');
      assert.equal(await outcome('round', 'ROUND', 'http://example.org/ci-shapes'), 'equivalent');
      assert.equal(await outcome('round', 'circle', 'http://example.org/ci-shapes'), 'subsumes');
      assert.equal(await outcome('alone', 'top'), 'not-subsumed');
    });

    test('a cycle in the hierarchy is indexed without hanging and answered', async () => {
      assert.ok(['subsumes', 'subsumed-by'].includes(await outcome('egg', 'hen')));
    });

    test('instance level, POST with codingA/codingB, and the version input', async () => {
      const instance = await server.fhir('GET', '/CodeSystem/shapes/$subsumes?codeA=top&codeB=left');
      assert.equal(instance.status, 200, instance.text);
      assert.equal(instance.body.parameter[0].valueCode, 'subsumes');
      const post = await server.fhir('POST', '/CodeSystem/$subsumes', {
        body: {
          resourceType: 'Parameters',
          parameter: [
            { name: 'codingA', valueCoding: { system: SYS, code: 'bottom' } },
            { name: 'codingB', valueCoding: { system: SYS, code: 'top' } },
          ],
        },
      });
      assert.equal(post.status, 200, post.text);
      assert.equal(post.body.parameter[0].valueCode, 'subsumed-by');
      const versioned = await server.fhir('GET', `/CodeSystem/$subsumes?system=${SYS}&version=1&codeA=top&codeB=bottom`);
      assert.equal(versioned.body.parameter[0].valueCode, 'subsumes');
      expectOO(await server.fhir('GET', `/CodeSystem/$subsumes?system=${SYS}&version=2&codeA=top&codeB=bottom`), 404, 'not-found', `CodeSystem ${SYS}|2 not found`);
    });

    test('unknown codes and systems are 404 with the contract texts', async () => {
      expectOO(await subsumes('top', 'nope'), 404, 'not-found', `Code 'nope' not found in CodeSystem ${SYS}`);
      expectOO(await subsumes('nope', 'top'), 404, 'not-found', `Code 'nope' not found in CodeSystem ${SYS}`);
      expectOO(await subsumes('a', 'b', 'http://example.org/unknown'), 404, 'not-found', 'CodeSystem http://example.org/unknown not found');
      expectOO(await server.fhir('GET', '/CodeSystem/no-such/$subsumes?codeA=a&codeB=b'), 404, 'not-found', 'Not found');
    });

    test('a code system without an is-a hierarchy is a 400 (identical codes are still equivalent)', async () => {
      expectOO(await subsumes('car', 'wheel', 'http://example.org/parts'), 400, 'invalid', 'CodeSystem http://example.org/parts does not define an is-a hierarchy');
      assert.equal(await outcome('car', 'car', 'http://example.org/parts'), 'equivalent');
    });

    test('missing inputs are 400 with the contract texts', async () => {
      expectOO(await server.fhir('GET', `/CodeSystem/$subsumes?system=${SYS}&codeA=top`), 400, 'invalid', 'Must specify codeA and codeB parameters');
      expectOO(await server.fhir('GET', `/CodeSystem/$subsumes?system=${SYS}&codeB=top`), 400, 'invalid', 'Must specify codeA and codeB parameters');
      expectOO(await server.fhir('GET', '/CodeSystem/shapes/$subsumes?codeA=top'), 400, 'invalid', 'Must specify codeA and codeB parameters');
      expectOO(await server.fhir('GET', '/CodeSystem/$subsumes?codeA=top&codeB=left'), 400, 'invalid', 'No code system specified');
      const mixed = await server.fhir('POST', '/CodeSystem/$subsumes', {
        body: {
          resourceType: 'Parameters',
          parameter: [
            { name: 'codingA', valueCoding: { system: SYS, code: 'top' } },
            { name: 'codingB', valueCoding: { system: 'http://example.org/other', code: 'left' } },
          ],
        },
      });
      expectOO(mixed, 400, 'invalid', 'codingA and codingB must have the same system');
    });
  });
}
