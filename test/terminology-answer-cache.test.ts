import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { CodeSystem } from '@medplum/fhirtypes';
import { answerCacheHits } from '../src/terminology/operations/answer-cache.js';
import { createMember, createProject, drivers, startServer, type TestServer } from './harness.js';
import { out } from './support/terminology-client.js';

/**
 * The kept answers of the point operations (docs/terminology.md#answer-cache): a question about
 * a code system asked again is kept and then given again (counted, not timed),
 * and nothing that changes the answer or who may ask is missed — a changed CodeSystem, another
 * project's code system of the same URL, the request's language, supplements, a removed
 * membership.
 */

const URL = 'http://example.org/fhir/CodeSystem/answer-cache';

function codeSystem(display: string, parentOfB = 'a'): CodeSystem {
  return {
    resourceType: 'CodeSystem',
    id: 'answer-cache',
    url: URL,
    version: '1',
    status: 'active',
    content: 'complete',
    property: [{ code: 'parent', type: 'code' }],
    concept: [
      { code: 'a', display, designation: [{ language: 'de', value: 'Eins' }] },
      { code: 'b', display: 'Bee', property: [{ code: 'parent', valueCode: parentOfB }] },
      { code: 'c', display: 'Cee' },
    ],
  };
}

for (const driver of drivers) {
  describe(`terminology: kept answers of $lookup, $subsumes and $validate-code (${driver})`, () => {
    let server: TestServer;
    const lookup = (token?: string, headers?: Record<string, string>) => server.fhir('GET', `/CodeSystem/$lookup?system=${URL}&code=a`, { token, headers });
    const put = async (cs: CodeSystem, token?: string) => {
      const res = await server.fhir('PUT', `/CodeSystem/${cs.id}`, { body: cs, token });
      assert.ok(res.status === 200 || res.status === 201, res.text);
    };

    before(async () => {
      server = await startServer(driver);
      await put(codeSystem('One'));
    });
    after(() => server.stop());

    test('a question asked again is kept; the next time it is the kept answer, byte for byte', async () => {
      const hits = answerCacheHits();
      const first = await lookup();
      assert.equal(first.status, 200, first.text);
      const second = await lookup(); // asked before: now kept
      assert.equal(answerCacheHits(), hits, 'the first two are computed');
      const third = await lookup();
      assert.equal(answerCacheHits(), hits + 1);
      assert.equal(second.text, first.text);
      assert.equal(third.text, first.text);
      assert.equal(out(third.body, 'display'), 'One');
    });

    test('a changed CodeSystem is seen by the next $lookup, $validate-code and $subsumes', async () => {
      const validate = () => server.fhir('GET', `/CodeSystem/$validate-code?url=${URL}&code=a&display=One`);
      const subsumes = () => server.fhir('GET', `/CodeSystem/$subsumes?system=${URL}&codeA=a&codeB=b`);
      for (let i = 0; i < 3; i++) {
        assert.equal(out((await lookup()).body, 'display'), 'One');
        assert.equal(out((await validate()).body, 'result'), true);
        assert.equal(out((await subsumes()).body, 'outcome'), 'subsumes');
      }
      await put(codeSystem('Uno', 'c'));
      assert.equal(out((await lookup()).body, 'display'), 'Uno');
      const changed = await validate();
      assert.equal(out(changed.body, 'result'), false, changed.text);
      assert.equal(out((await subsumes()).body, 'outcome'), 'not-subsumed');
      await put(codeSystem('One'));
      assert.equal(out((await lookup()).body, 'display'), 'One');
    });

    test('another project’s code system of the same URL answers for that project only', async () => {
      const p = await createProject(server, 'Answer cache tenancy');
      await put({ ...codeSystem('Own'), id: 'answer-cache-own' }, p.adminToken);
      for (let i = 0; i < 3; i++) {
        assert.equal(out((await lookup(p.adminToken)).body, 'display'), 'Own');
        assert.equal(out((await lookup()).body, 'display'), 'One');
      }
    });

    test('the request’s language and supplements are part of the question', async () => {
      await lookup();
      await lookup();
      const hits = answerCacheHits();
      for (let i = 0; i < 3; i++) {
        const german = await lookup(undefined, { 'accept-language': 'de' });
        assert.equal(out(german.body, 'display'), 'Eins');
      }
      assert.equal(answerCacheHits(), hits + 1, 'another language is another question');
      const english = await lookup();
      assert.equal(answerCacheHits(), hits + 2);
      assert.equal(out(english.body, 'display'), 'One');

      const supplement: CodeSystem = {
        resourceType: 'CodeSystem',
        id: 'answer-cache-supplement',
        url: `${URL}/supplement`,
        version: '1',
        status: 'active',
        content: 'supplement',
        supplements: `${URL}|1`,
        concept: [{ code: 'a', designation: [{ language: 'fr', value: 'Un' }] }],
      };
      await put(supplement);
      const path = `/CodeSystem/$lookup?system=${URL}&code=a&useSupplement=${encodeURIComponent(`${URL}/supplement`)}`;
      const before = answerCacheHits();
      for (let i = 0; i < 3; i++) {
        const res = await server.fhir('GET', path);
        assert.equal(res.status, 200, res.text);
        assert.ok(res.text.includes('"Un"'), res.text);
      }
      assert.equal(answerCacheHits(), before, 'an answer with a supplement is not kept');
      assert.ok(!(await lookup()).text.includes('"Un"'), 'nor given to a request without it');
    });

    test('a kept answer inside a batch Bundle: each entry carries it', async () => {
      const entry = { request: { method: 'GET', url: `CodeSystem/$lookup?system=${URL}&code=a` } };
      const hits = answerCacheHits();
      const res = await server.fhir('POST', '/', { body: { resourceType: 'Bundle', type: 'batch', entry: [entry, entry, entry] } });
      assert.ok(answerCacheHits() > hits, 'a kept answer was given');
      assert.equal(res.status, 200, res.text);
      const entries = res.body.entry as Array<{ response: { status: string }; resource: { resourceType: string } }>;
      assert.deepEqual(
        entries.map((e) => [e.response.status, out(e.resource as never, 'display')]),
        [
          ['200 OK', 'One'],
          ['200 OK', 'One'],
          ['200 OK', 'One'],
        ],
      );
    });

    test('ValueSet $validate-code asked again is kept; a changed ValueSet or a changed code system it includes is seen next', async () => {
      const vsUrl = 'http://example.org/fhir/ValueSet/answer-cache';
      const valueSet = (codes: string[]) => ({ resourceType: 'ValueSet', id: 'answer-cache-vs', url: vsUrl, status: 'active', compose: { include: [{ system: URL, concept: codes.map((code) => ({ code })) }] } });
      const putVs = async (codes: string[]) => {
        const res = await server.fhir('PUT', '/ValueSet/answer-cache-vs', { body: valueSet(codes) });
        assert.ok(res.status === 200 || res.status === 201, res.text);
      };
      const validate = (code: string) => server.fhir('GET', `/ValueSet/$validate-code?url=${vsUrl}&system=${URL}&code=${code}`);
      await putVs(['a', 'b']);
      const hits = answerCacheHits();
      const answers = [];
      for (let i = 0; i < 3; i++) answers.push(await validate('b'));
      assert.equal(answerCacheHits(), hits + 1, 'the third is the kept answer');
      assert.equal(out(answers[2].body, 'result'), true, answers[2].text);
      assert.equal(answers[2].text, answers[0].text);
      // The value set no longer holds b: the next answer says so.
      await putVs(['a']);
      assert.equal(out((await validate('b')).body, 'result'), false);
      // The display comes from the code system the value set includes: a change of it is seen too.
      for (let i = 0; i < 3; i++) assert.equal(out((await validate('a')).body, 'display'), 'One');
      await put(codeSystem('Uno'));
      assert.equal(out((await validate('a')).body, 'display'), 'Uno');
      await put(codeSystem('One'));
    });

    test('a removed membership: the next $lookup is 401, also when its answer is kept', async () => {
      const member = await createMember(server, server.projectId!);
      for (let i = 0; i < 3; i++) assert.equal((await lookup(member.token)).status, 200);
      assert.equal((await server.fhir('DELETE', `/ProjectMembership/${member.membershipId}`, { token: server.adminToken })).status, 200);
      assert.equal((await lookup(member.token)).status, 401);
    });
  });
}
