import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { CodeSystem, OperationOutcome, Parameters, ParametersParameter, Resource, ValueSet } from '@medplum/fhirtypes';
import { drivers, ooText, startServer, type ApiResponse, type TestServer } from './harness.js';

/**
 * Several versions of one code system side by side (docs/terminology.md#canonicals-and-versions,
 * docs/terminology.md#version-parameters): value sets pinned to a version, to a pattern, to an
 * unknown version, versionless, or including two versions; `system-version`,
 * `check-system-version`, `force-system-version` in $validate-code and $expand.
 */

const CS = 'http://example.org/fhir/CodeSystem/tools';

const tools = (id: string, version: string, codes: string[]): CodeSystem => ({
  resourceType: 'CodeSystem',
  id,
  url: CS,
  version,
  name: 'Tools',
  status: 'active',
  content: 'complete',
  concept: codes.map((code) => ({ code, display: `${code} (${version})` })),
});

const vs = (id: string, include: NonNullable<ValueSet['compose']>['include']): ValueSet => ({
  resourceType: 'ValueSet',
  id,
  url: `http://example.org/fhir/ValueSet/${id}`,
  version: '1',
  status: 'active',
  compose: { include },
});

const RESOURCES: Resource[] = [
  tools('tools-1', '1.0.0', ['hammer', 'saw']),
  tools('tools-2', '2.0.0', ['hammer', 'saw', 'drill']),
  vs('tools-any', [{ system: CS }]),
  vs('tools-v1', [{ system: CS, version: '1.0.0' }]),
  vs('tools-v2', [{ system: CS, version: '2.0.0' }]),
  vs('tools-1x', [{ system: CS, version: '1.x' }]),
  vs('tools-bad', [{ system: CS, version: '1' }]),
  vs('tools-mixed', [
    { system: CS, version: '1.0.0', concept: [{ code: 'hammer' }] },
    { system: CS, version: '2.0.0', concept: [{ code: 'drill' }] },
  ]),
];

const vsUrl = (id: string) => `http://example.org/fhir/ValueSet/${id}`;

/** A $validate-code, $expand or error answer. */
type Answer = Omit<Parameters, 'resourceType'> & Omit<ValueSet, 'resourceType'> & Omit<OperationOutcome, 'resourceType'> & { resourceType: string };
type WithParameters = { parameter?: ParametersParameter[] } | undefined;

function param(body: WithParameters, name: string): ParametersParameter | undefined {
  return body?.parameter?.find((x) => x.name === name);
}

function out(body: WithParameters, name: string): unknown {
  const p = param(body, name);
  return p && (p.resource ?? Object.entries(p).find(([k]) => k.startsWith('value'))?.[1]);
}

/** The issues of a $validate-code answer as `severity type: text`. */
function issueList(body: WithParameters): string[] {
  const oo = param(body, 'issues')?.resource as OperationOutcome | undefined;
  return (oo?.issue ?? []).map((i) => `${i.severity} ${i.details?.coding?.[0]?.code}: ${i.details?.text}`);
}

for (const driver of drivers) {
  describe(`terminology: versions (${driver})`, () => {
    let server: TestServer;
    const post = (path: string, parameter: unknown[]) => server.fhir<Answer>('POST', path, { body: { resourceType: 'Parameters', parameter } });
    const validate = (vsId: string, coding: { code: string; version?: string }, extra: unknown[] = []) =>
      post('/ValueSet/$validate-code', [{ name: 'url', valueUri: vsUrl(vsId) }, { name: 'coding', valueCoding: { system: CS, ...coding } }, ...extra]);
    const expand = (vsId: string, extra: unknown[] = []) => post('/ValueSet/$expand', [{ name: 'url', valueUri: vsUrl(vsId) }, ...extra]);
    const rule = (name: string, version: string) => ({ name, valueCanonical: `${CS}|${version}` });
    const expectValid = (res: ApiResponse<Answer>, version: string) => {
      assert.equal(res.status, 200, res.text);
      assert.equal(out(res.body, 'result'), true, res.text);
      assert.equal(out(res.body, 'version'), version);
    };

    before(async () => {
      server = await startServer(driver);
      for (const r of RESOURCES) {
        const res = await server.fhir('PUT', `/${r.resourceType}/${r.id}`, { body: r });
        assert.ok(res.status === 200 || res.status === 201, res.text);
      }
    });
    after(() => server?.stop());

    test('a versionless value set and coding: the newest version', async () => {
      const res = await validate('tools-any', { code: 'drill' });
      expectValid(res, '2.0.0');
      assert.equal(out(res.body, 'display'), 'drill (2.0.0)');
    });

    test('a versionless value set takes the coding version when it exists', async () => {
      const res = await validate('tools-any', { code: 'hammer', version: '1.0.0' });
      expectValid(res, '1.0.0');
      assert.equal(out(res.body, 'display'), 'hammer (1.0.0)');
    });

    test('a coding version other than the pinned include version is an error; the include version is used', async () => {
      const res = await validate('tools-v2', { code: 'hammer', version: '1.0.0' });
      assert.equal(out(res.body, 'result'), false);
      assert.equal(out(res.body, 'version'), '2.0.0');
      const text = `The code system '${CS}' version '2.0.0' in the ValueSet include is different to the one in the value ('1.0.0')`;
      assert.equal(out(res.body, 'message'), text);
      assert.deepEqual(issueList(res.body), [`error vs-invalid: ${text}`]);
    });

    test('a pattern include (1.x) takes the matching coding version, else the newest match', async () => {
      expectValid(await validate('tools-1x', { code: 'saw', version: '1.0.0' }), '1.0.0');
      expectValid(await validate('tools-1x', { code: 'saw' }), '1.0.0');
    });

    test('an include pinned to an unknown version (1 is not 1.0.0): not found, valid versions listed oldest first', async () => {
      const res = await validate('tools-bad', { code: 'saw' });
      assert.equal(out(res.body, 'result'), false);
      assert.equal(
        out(res.body, 'message'),
        `A definition for CodeSystem '${CS}' version '1' could not be found, so the code cannot be validated. Valid versions: 1.0.0 or 2.0.0`,
      );
      assert.equal(out(res.body, 'x-caused-by-unknown-system'), `${CS}|1`);
      assert.equal(issueList(res.body).length, 1, 'no "not in the value set" besides the unknown version');
    });

    test('an unknown coding version against a versionless include: error, and a warning left out of the message', async () => {
      const res = await validate('tools-any', { code: 'saw', version: '9.9.9' });
      assert.equal(out(res.body, 'result'), false);
      const notFound = `A definition for CodeSystem '${CS}' version '9.9.9' could not be found, so the code cannot be validated. Valid versions: 1.0.0 or 2.0.0`;
      assert.equal(out(res.body, 'message'), notFound);
      assert.deepEqual(issueList(res.body), [
        `error not-found: ${notFound}`,
        `warning vs-invalid: The code system '${CS}' version '2.0.0' for the versionless include in the ValueSet include is different to the one in the value ('9.9.9')`,
      ]);
      assert.equal(out(res.body, 'x-caused-by-unknown-system'), `${CS}|9.9.9`);
    });

    test('system-version is the version of a versionless include', async () => {
      expectValid(await validate('tools-any', { code: 'hammer' }, [rule('system-version', '1.0.0')]), '1.0.0');
      expectValid(await validate('tools-v2', { code: 'hammer' }, [rule('system-version', '1.0.0')]), '2.0.0');
    });

    test('check-system-version: a versionless include takes its newest match; another version is an error', async () => {
      expectValid(await validate('tools-any', { code: 'hammer' }, [rule('check-system-version', '1.x')]), '1.0.0');
      const res = await validate('tools-v2', { code: 'hammer' }, [rule('check-system-version', '1.x')]);
      assert.equal(out(res.body, 'result'), false);
      assert.equal(out(res.body, 'message'), `The version '2.0.0' is not allowed for system '${CS}': required to be '1.x' by a version-check parameter`);
      assert.deepEqual(issueList(res.body).map((i) => i.split(':')[0]), ['error version-error']);
    });

    test('force-system-version overrides the include and the coding', async () => {
      expectValid(await validate('tools-v2', { code: 'hammer', version: '1.0.0' }, [rule('force-system-version', '1.0.0')]), '1.0.0');
      const res = await validate('tools-v2', { code: 'hammer', version: '2.0.0' }, [rule('force-system-version', '1.0.0')]);
      assert.equal(out(res.body, 'result'), false);
      assert.equal(
        out(res.body, 'message'),
        `The code system '${CS}' version '1.0.0' resulting from the version '2.0.0' in the ValueSet include is different to the one in the value ('2.0.0')`,
      );
    });

    test('one value set including two versions: each code is validated at the version of the include that has it', async () => {
      expectValid(await validate('tools-mixed', { code: 'hammer' }), '1.0.0');
      expectValid(await validate('tools-mixed', { code: 'drill' }), '2.0.0');
    });

    test('$expand of two versions: entries name their version, both versions are used-codesystem', async () => {
      const res = await expand('tools-mixed');
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(
        res.body.expansion?.contains?.map((c) => `${c.code}|${c.version}`),
        ['hammer|1.0.0', 'drill|2.0.0'],
      );
      const used = res.body.expansion?.parameter?.filter((p) => p.name === 'used-codesystem').map((p) => p.valueUri);
      assert.deepEqual(used?.sort(), [`${CS}|1.0.0`, `${CS}|2.0.0`]);
    });

    test('$expand of one version: entries carry no version', async () => {
      const res = await expand('tools-v1');
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.body.expansion?.contains?.map((c) => c.version), [undefined, undefined]);
    });

    test('$expand with an include of an unknown version: 400 not-found', async () => {
      const res = await expand('tools-bad');
      assert.equal(res.status, 400, res.text);
      assert.equal(res.body.issue?.[0].code, 'not-found');
      assert.equal(ooText(res.body as OperationOutcome), `A definition for CodeSystem '${CS}' version '1' could not be found, so the value set cannot be expanded. Valid versions: 1.0.0 or 2.0.0`);
    });

    test('$expand with a failed version check: 400 exception', async () => {
      const res = await expand('tools-v2', [rule('check-system-version', '1.x')]);
      assert.equal(res.status, 400, res.text);
      assert.equal(res.body.issue?.[0].code, 'exception');
      assert.equal(ooText(res.body as OperationOutcome), `The version '2.0.0' is not allowed for system '${CS}': required to be '1.x' by a version-check parameter`);
    });

    test('$expand echoes the version parameters it applied, and only those', async () => {
      const forced = await expand('tools-v2', [rule('force-system-version', '1.0.0')]);
      assert.equal(forced.status, 200, forced.text);
      assert.equal(forced.body.expansion?.total, 2);
      const names = (r: typeof forced) => r.body.expansion?.parameter?.map((p) => `${p.name}=${p.valueUri ?? ''}`);
      assert.ok(names(forced)?.includes(`force-system-version=${CS}|1.0.0`), forced.text);
      const defaulted = await expand('tools-any', [rule('system-version', '1.0.0')]);
      assert.ok(names(defaulted)?.includes(`system-version=${CS}|1.0.0`), defaulted.text);
      const pinned = await expand('tools-v2', [rule('system-version', '1.0.0')]);
      assert.equal(pinned.body.expansion?.total, 3);
      assert.ok(!names(pinned)?.some((n) => n.startsWith('system-version')), pinned.text);
    });
  });
}
