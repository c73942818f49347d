import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { CodeSystem } from '@medplum/fhirtypes';
import { answerCacheHits } from '../src/terminology/operations/answer-cache.js';
import { drivers, startServer, type TestServer } from './harness.js';
import { out } from './support/terminology-client.js';

/**
 * The kept answers of the point operations (docs/terminology.md#answer-cache) hold a working
 * set of questions asked in turn — more of them than the 1,024 answers once kept, which were
 * all dropped when full and so never answered such a set from memory — and, wherever in the
 * cache an answer sits, never give it after the code system or value set changed: a PUT, a new
 * version, a DELETE (counted, not timed).
 */

const URL = 'http://example.org/fhir/CodeSystem/working-set';
const VS = 'http://example.org/fhir/ValueSet/working-set';
const SIZE = 1100;

function codeSystem(id: string, version: string, display: string): CodeSystem {
  return {
    resourceType: 'CodeSystem',
    id,
    url: URL,
    version,
    status: 'active',
    content: 'complete',
    concept: Array.from({ length: SIZE }, (_, i) => ({ code: `c${i}`, display: `${display} ${i}` })),
  };
}

for (const driver of drivers) {
  describe(`terminology: kept answers of a working set, and changes seen wherever an answer is kept (${driver})`, () => {
    let server: TestServer;
    const lookup = (i: number) => server.fhir('GET', `/CodeSystem/$lookup?system=${URL}&code=c${i}`);
    const validate = (code: string) =>
      server.fhir('POST', '/ValueSet/$validate-code', {
        body: { resourceType: 'Parameters', parameter: [{ name: 'url', valueUri: VS }, { name: 'coding', valueCoding: { system: URL, code } }] },
      });
    const write = async (method: 'PUT' | 'DELETE', path: string, body?: unknown) => {
      const res = await server.fhir(method, path, { body });
      assert.ok(res.status === 200 || res.status === 201 || res.status === 204, `${method} ${path}: ${res.status} ${res.text}`);
    };
    const valueSet = (codes: string[]) => ({ resourceType: 'ValueSet', id: 'working-set', url: VS, status: 'active', compose: { include: [{ system: URL, concept: codes.map((code) => ({ code })) }] } });
    /** Every code once, 25 at a time; answers the displays. */
    const round = async () => {
      const displays: unknown[] = [];
      for (let start = 0; start < SIZE; start += 25) {
        const batch = await Promise.all(Array.from({ length: Math.min(25, SIZE - start) }, (_, k) => lookup(start + k)));
        for (const res of batch) {
          assert.equal(res.status, 200, res.text);
          displays.push(out(res.body, 'display'));
        }
      }
      return displays;
    };

    before(async () => {
      server = await startServer(driver);
      await write('PUT', '/CodeSystem/working-set-1', codeSystem('working-set-1', '1', 'One'));
      await write('PUT', '/ValueSet/working-set', valueSet(['c1', 'c2']));
    });
    after(() => server.stop());

    test(`${SIZE} $lookup questions asked in turn: the third round is answered from memory, every one`, async () => {
      await round(); // asked
      await round(); // asked again: kept
      const hits = answerCacheHits();
      const third = await round();
      assert.equal(answerCacheHits() - hits, SIZE);
      assert.deepEqual(third, Array.from({ length: SIZE }, (_, i) => `One ${i}`));
    });

    test('a changed CodeSystem, a new version and a deleted one are seen by the next round, the first answers kept longest included', async () => {
      for (let i = 0; i < 2; i++) await round();
      await write('PUT', '/CodeSystem/working-set-1', codeSystem('working-set-1', '1', 'Uno'));
      assert.deepEqual(await round(), Array.from({ length: SIZE }, (_, i) => `Uno ${i}`));
      await round(); // kept again
      await write('PUT', '/CodeSystem/working-set-2', codeSystem('working-set-2', '2', 'Two'));
      const newest = await lookup(0);
      assert.equal(out(newest.body, 'version'), '2', newest.text);
      assert.equal(out(newest.body, 'display'), 'Two 0');
      for (let i = 0; i < 2; i++) await round();
      await write('DELETE', '/CodeSystem/working-set-2');
      assert.deepEqual(await round(), Array.from({ length: SIZE }, (_, i) => `Uno ${i}`));
      await write('DELETE', '/CodeSystem/working-set-1');
      const gone = await lookup(0);
      assert.equal(gone.status, 404, gone.text);
      await write('PUT', '/CodeSystem/working-set-1', codeSystem('working-set-1', '1', 'One'));
    });

    test('POST ValueSet/$validate-code asked again is kept; a changed, a new version of and a deleted ValueSet are seen next', async () => {
      const hits = answerCacheHits();
      const answers = [];
      for (let i = 0; i < 3; i++) answers.push(await validate('c2'));
      assert.equal(answerCacheHits(), hits + 1, 'the third is the kept answer');
      assert.equal(out(answers[2].body, 'result'), true, answers[2].text);
      assert.equal(answers[2].text, answers[0].text);
      // Another body is another question.
      const other = await validate('c1');
      assert.equal(out(other.body, 'code'), 'c1', other.text);
      assert.equal(out(other.body, 'result'), true);
      assert.equal(out((await validate('c4')).body, 'result'), false);
      await write('PUT', '/ValueSet/working-set', valueSet(['c1']));
      assert.equal(out((await validate('c2')).body, 'result'), false);
      for (let i = 0; i < 2; i++) await validate('c3');
      await write('PUT', '/ValueSet/working-set-2', { ...valueSet(['c3']), id: 'working-set-2', version: '2' });
      const newer = await validate('c3');
      assert.equal(out(newer.body, 'result'), true, newer.text);
      for (let i = 0; i < 2; i++) await validate('c3');
      await write('DELETE', '/ValueSet/working-set-2');
      await write('DELETE', '/ValueSet/working-set');
      const gone = await validate('c1');
      assert.equal(gone.status, 400, gone.text);
      assert.equal(gone.body.issue[0].details.text, `ValueSet ${VS} not found`);
    });
  });
}
