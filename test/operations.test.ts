import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type {
  CapabilityStatementRestResource,
  CapabilityStatementRestResourceOperation,
  OperationDefinition,
  OperationDefinitionParameter,
  OperationOutcome,
  OperationOutcomeIssue,
  Parameters,
} from '@medplum/fhirtypes';
import { DEFINITION_IDS, loadDefinition } from '../src/operations/definitions/index.js';
import type { Operation } from '../src/core/operation.js';
import type { OperationsRegistry } from '../src/operations/registry.js';
import { typed } from '../src/operations/typed-value.js';
import { createTestDatabase, drivers, ooText, startServer, type ApiResponse, type TestServer } from './harness.js';

// Test-only operations, registered on a running server: they exercise every rule of the
// framework (docs/operations.md) without depending on any real operation.

type Param = OperationDefinitionParameter;
const p = (use: 'in' | 'out', name: string, min: number, max: string, type?: string, part?: Param[]): Param => ({
  name,
  use,
  min,
  max,
  ...(type ? { type } : {}),
  ...(part ? { part } : {}),
});

function definition(code: string, levels: Partial<OperationDefinition>, parameter: Param[]): OperationDefinition {
  return {
    resourceType: 'OperationDefinition',
    id: `test-${code}`,
    url: `http://example.org/fhir/OperationDefinition/test-${code}`,
    name: `Test_${code.replace(/-/g, '_')}`,
    status: 'active',
    kind: 'operation',
    code,
    system: false,
    type: false,
    instance: false,
    ...levels,
    parameter,
  };
}

/** System, type and instance level on Patient; echoes the typed input it received. */
const echo: Operation = {
  definition: definition('echo', { system: true, type: true, instance: true, resource: ['Patient'] }, [
    p('in', 'code', 1, '1', 'code'),
    p('in', 'flag', 0, '1', 'boolean'),
    p('in', 'count', 0, '1', 'integer'),
    p('in', 'ratio', 0, '1', 'decimal'),
    p('in', 'tag', 0, '*', 'string'),
    p('in', 'pair', 0, '2', 'string'),
    p('in', 'coding', 0, '1', 'Coding'),
    p('in', 'resource', 0, '1', 'Resource'),
    p('in', 'patient', 0, '1', 'Patient'),
    p('in', 'item', 0, '*', undefined, [
      p('in', 'key', 1, '1', 'code'),
      { ...p('in', 'val', 0, '1', 'Element'), extension: ['code', 'boolean'].map((t) => ({ url: 'http://hl7.org/fhir/StructureDefinition/operationdefinition-allowed-type', valueUri: t })) },
    ]),
    p('out', 'received', 1, '1', 'string'),
    p('out', 'target', 1, '1', 'string'),
  ]),
  handler: async (_ctx, input, target) => ({
    received: JSON.stringify(input),
    target: [target.level, target.resourceType, target.id].filter(Boolean).join(' '),
  }),
};

/** System level only. */
const systemOnly: Operation = {
  definition: definition('system', { system: true }, [p('out', 'ok', 1, '1', 'boolean')]),
  handler: async () => ({ ok: true }),
};

/** Type level on Observation, instance level only through `alsoInstance`; no id in the definition. */
const typeOnly: Operation = {
  definition: (() => {
    const d = definition('type-only', { type: true, resource: ['Observation'] }, [p('out', 'ok', 1, '1', 'boolean')]);
    delete d.id;
    delete d.url;
    return d;
  })(),
  alsoInstance: true,
  handler: async () => ({ ok: true }),
};

const mutate: Operation = {
  definition: definition('mutate', { type: true, resource: ['Patient'], affectsState: true }, [
    p('in', 'note', 0, '1', 'string'),
    p('out', 'done', 1, '1', 'boolean'),
  ]),
  handler: async () => ({ done: true }),
};

/** A single `return` out-parameter: the body is the resource itself. */
const fetchOp: Operation = {
  definition: definition('fetch', { type: true, resource: ['Patient'] }, [
    p('in', 'family', 1, '1', 'string'),
    p('out', 'return', 1, '1', 'Patient'),
  ]),
  handler: async (_ctx, input) => ({ return: { resourceType: 'Patient', name: [{ family: input.family }] } }),
};

/** Multi-valued and part-valued outputs, returned in an order unlike the definition's. */
const listing: Operation = {
  definition: definition('listing', { system: true }, [
    p('in', 'empty', 0, '1', 'boolean'),
    p('out', 'first', 0, '1', 'string'),
    p('out', 'item', 0, '*', 'string'),
    p('out', 'entry', 0, '*', undefined, [
      p('out', 'key', 1, '1', 'code'),
      p('out', 'value', 0, '1', 'Element'),
      p('out', 'sub', 0, '*', undefined, [p('out', 'n', 1, '1', 'integer')]),
    ]),
    p('out', 'flag', 0, '1', 'boolean'),
    p('out', 'absent', 0, '1', 'string'),
  ]),
  handler: async (_ctx, input) =>
    input.empty
      ? {}
      : {
          absent: undefined,
          flag: false,
          entry: [
            { key: 'a', value: true },
            { key: 'b', value: 7 },
            { key: 'c', value: 1.5 },
            { key: 'd', value: 'text' },
            { key: 'e', value: { system: 'http://example.org/cs', code: 'y', display: 'Y' } },
            { key: 'f', value: typed('code', 'z') },
            { key: 'g', sub: [{ n: 1 }, { n: 2 }] },
          ],
          item: ['x', 'y', 'z'],
          first: 'one',
        },
};

/** Deliberately broken: its output violates the definition in the way `mode` says. */
const broken: Operation = {
  definition: definition('broken', { system: true }, [
    p('in', 'mode', 1, '1', 'code'),
    p('out', 'result', 1, '1', 'boolean'),
    p('out', 'many', 0, '*', 'string'),
    p('out', 'one', 0, '1', 'string'),
    p('out', 'part', 0, '1', undefined, [p('out', 'x', 1, '1', 'integer')]),
    p('out', 'any', 0, '1', 'Element'),
  ]),
  handler: async (_ctx, { mode }) => {
    switch (mode) {
      case 'ok':
        return { result: true };
      case 'missing':
        return {};
      case 'wrong-type':
        return { result: 'yes' };
      case 'array':
        return { result: true, one: ['a', 'b'] };
      case 'not-array':
        return { result: true, many: 'a' };
      case 'undeclared':
        return { result: true, extra: 1 };
      case 'bad-part':
        return { result: true, part: { x: '1' } };
      case 'unknown-shape':
        return { result: true, any: { foo: 'bar' } };
      case 'not-object':
        return 'oops' as never;
      default:
        throw new Error('handler crashed');
    }
  },
};

const ALL = [echo, systemOnly, typeOnly, mutate, fetchOp, listing, broken];

const params = (...parameter: unknown[]) => ({ resourceType: 'Parameters', parameter });
const received = (body: Parameters): unknown => JSON.parse(body.parameter?.find((x) => x.name === 'received')?.valueString ?? '');

async function registerAll(server: TestServer): Promise<OperationsRegistry> {
  const registry = server.app.operations as OperationsRegistry;
  for (const op of ALL) registry.register(op);
  await registry.published();
  return registry;
}

for (const driver of drivers) {
  describe(`operations framework (${driver})`, () => {
    let server: TestServer;
    before(async () => {
      server = await startServer(driver);
      await registerAll(server);
    });
    after(() => server.stop());

    const expectOO = async (res: Promise<ApiResponse<OperationOutcome>> | ApiResponse<OperationOutcome>, status: number, code: string, text: string) => {
      const r = await res;
      assert.equal(r.status, status, r.text);
      assert.equal(r.body?.resourceType, 'OperationOutcome', r.text);
      assert.equal(r.body.issue[0].severity, 'error');
      assert.equal(r.body.issue[0].code, code, r.text);
      assert.equal(ooText(r.body), text, r.text);
      return r.body;
    };
    const post = (path: string, body: unknown) => server.fhir('POST', path, { body });

    describe('routing', () => {
      test('system, type and instance levels as the definition says', async () => {
        for (const [path, target] of [
          ['/$echo', 'system'],
          ['/Patient/$echo', 'type Patient'],
          ['/Patient/p-1/$echo', 'instance Patient p-1'],
        ]) {
          const res = await post(path, params({ name: 'code', valueCode: 'a' }));
          assert.equal(res.status, 200, res.text);
          assert.equal(res.body.resourceType, 'Parameters');
          assert.deepEqual(res.body.parameter[1], { name: 'target', valueString: target });
        }
      });

      test('%24 in place of $ works', async () => {
        const res = await server.fhir('GET', '/Patient/%24echo?code=a');
        assert.equal(res.status, 200, res.text);
        assert.deepEqual(res.body.parameter[1], { name: 'target', valueString: 'type Patient' });
      });

      test('unknown operation → 404 at every level', async () => {
        await expectOO(post('/$nope', params()), 404, 'not-found', 'Operation $nope not found');
        await expectOO(server.fhir('GET', '/Patient/$nope'), 404, 'not-found', 'Operation $nope not found');
        await expectOO(post('/Patient/1/$nope', params()), 404, 'not-found', 'Operation $nope not found');
      });

      test('a registered operation at a level or type it does not support → 404', async () => {
        await expectOO(post('/Observation/$echo', params()), 404, 'not-found', 'Operation $echo not found');
        await expectOO(post('/Patient/$system', params()), 404, 'not-found', 'Operation $system not found');
        await expectOO(post('/Patient/1/$system', params()), 404, 'not-found', 'Operation $system not found');
        await expectOO(post('/$type-only', params()), 404, 'not-found', 'Operation $type-only not found');
        await expectOO(post('/$mutate', params()), 404, 'not-found', 'Operation $mutate not found');
        await expectOO(post('/Patient/1/$mutate', params()), 404, 'not-found', 'Operation $mutate not found');
      });

      test('alsoInstance adds the instance level', async () => {
        assert.equal((await post('/Observation/$type-only', params())).status, 200);
        const res = await post('/Observation/o-1/$type-only', params());
        assert.equal(res.status, 200, res.text);
        assert.deepEqual(res.body, { resourceType: 'Parameters', parameter: [{ name: 'ok', valueBoolean: true }] });
      });

      test('methods other than GET and POST → 405', async () => {
        await expectOO(server.fhir('PUT', '/Patient/$echo', { body: params() }), 405, 'not-supported', 'Operation $echo cannot be invoked with PUT');
        await expectOO(server.fhir('DELETE', '/$echo'), 405, 'not-supported', 'Operation $echo cannot be invoked with DELETE');
      });
    });

    describe('POST input', () => {
      test('typed values reach the handler', async () => {
        const coding = { system: 'http://example.org/cs', code: 'c', display: 'C' };
        const patient = { resourceType: 'Patient', id: 'x', active: true };
        const res = await post(
          '/Patient/$echo',
          params(
            { name: 'code', valueCode: 'abc' },
            { name: 'flag', valueBoolean: false },
            { name: 'count', valueInteger: 3 },
            { name: 'ratio', valueDecimal: 1.5 },
            { name: 'tag', valueString: 'a' },
            { name: 'unknown', valueString: 'ignored' },
            { name: 'tag', valueString: 'b' },
            { name: 'coding', valueCoding: coding },
            { name: 'resource', resource: { resourceType: 'Basic', code: { text: 'b' } } },
            { name: 'patient', resource: patient },
            { name: 'item', part: [{ name: 'key', valueCode: 'k1' }, { name: 'val', valueBoolean: true }] },
            { name: 'item', part: [{ name: 'key', valueCode: 'k2' }, { name: 'other', valueString: 'ignored' }] },
          ),
        );
        assert.equal(res.status, 200, res.text);
        assert.deepEqual(received(res.body), {
          code: 'abc',
          flag: false,
          count: 3,
          ratio: 1.5,
          tag: ['a', 'b'],
          coding,
          resource: { resourceType: 'Basic', code: { text: 'b' } },
          patient,
          item: [{ key: 'k1', val: true }, { key: 'k2' }],
        });
      });

      test('no body, or a JSON body that is not Parameters → 400', async () => {
        const text = 'Expected a Parameters resource';
        await expectOO(server.fhir('POST', '/$echo'), 400, 'invalid', text);
        await expectOO(post('/$echo', { resourceType: 'Patient' }), 400, 'invalid', text);
        await expectOO(post('/$echo', [params()]), 400, 'invalid', text);
        await expectOO(post('/$echo', 'Parameters'), 400, 'invalid', text);
        await expectOO(post('/$echo', 42), 400, 'invalid', text);
        await expectOO(post('/$echo', null), 400, 'invalid', text);
      });

      test('parameter that is not an array of objects → 400 with its path', async () => {
        const r1 = await post('/$echo', { resourceType: 'Parameters', parameter: { name: 'code', valueCode: 'a' } });
        assert.equal(r1.status, 400, r1.text);
        assert.deepEqual(r1.body.issue[0].expression, ['Parameters.parameter']);
        const r2 = await post('/$echo', params({ name: 'code', valueCode: 'a' }, 'x', null));
        assert.equal(r2.status, 400, r2.text);
        assert.deepEqual(r2.body.issue.map((i: OperationOutcomeIssue) => i.expression?.[0]), ['Parameters.parameter[1]', 'Parameters.parameter[2]']);
      });

      test('an entry with no name → 400 with the path of the entry', async () => {
        const body = await expectOO(
          post('/$echo', params({ name: 'code', valueCode: 'a' }, { name: 'tag', valueString: 'x' }, { valueString: 'y' })),
          400,
          'invalid',
          'Parameter Parameters.parameter[2] has no name',
        );
        assert.deepEqual(body.issue[0].expression, ['Parameters.parameter[2]']);
        const nested = await post('/$echo', params({ name: 'item', part: [{ name: 'key', valueCode: 'k' }, { valueCode: 'v' }] }));
        assert.equal(nested.status, 400);
        assert.deepEqual(nested.body.issue[0].expression, ['Parameters.parameter[0].part[1]']);
      });

      test('an entry with two value[x] → 400 with the path of the entry', async () => {
        const body = await expectOO(
          post('/$echo', params({ name: 'code', valueCode: 'a', valueString: 'b' })),
          400,
          'invalid',
          'Parameter Parameters.parameter[0] has more than one value[x] (valueCode, valueString)',
        );
        assert.deepEqual(body.issue[0].expression, ['Parameters.parameter[0]']);
        const mixed = await post('/$echo', params({ name: 'code', valueCode: 'a' }, { name: 'x', valueCode: 'a', part: [] }));
        assert.equal(mixed.status, 400);
        assert.deepEqual(mixed.body.issue[0].expression, ['Parameters.parameter[1]']);
      });

      test('malformed values inside value[x] → 400 with the element path', async () => {
        const r = await post('/$echo', params({ name: 'code', valueCode: 'a' }, { name: 'coding', valueCoding: { code: 5 } }));
        assert.equal(r.status, 400, r.text);
        assert.deepEqual(r.body.issue[0].expression, ['Parameters.parameter[1].valueCoding.code']);
        const b = await post('/$echo', params({ name: 'code', valueCode: 'a' }, { name: 'flag', valueBoolean: 'yes' }));
        assert.equal(b.status, 400, b.text);
        assert.deepEqual(b.body.issue[0].expression, ['Parameters.parameter[1].valueBoolean']);
      });

      test('valueBoolean as the JSON string "true"/"false" is read as the boolean (docs/operations.md#post)', async () => {
        const r = await post('/$echo', params({ name: 'code', valueCode: 'a' }, { name: 'flag', valueBoolean: 'false' }));
        assert.equal(r.status, 200, r.text);
        const received = JSON.parse(r.body.parameter.find((x: { name: string }) => x.name === 'received').valueString);
        assert.equal(received.flag, false);
      });

      test('cardinality → exact texts', async () => {
        await expectOO(post('/$echo', params()), 400, 'invalid', 'Expected 1 value(s) for input parameter code, but 0 provided');
        await expectOO(
          post('/$echo', params({ name: 'code', valueCode: 'a' }, { name: 'code', valueCode: 'b' })),
          400,
          'invalid',
          'Expected 1 value(s) for input parameter code, but 2 provided',
        );
        await expectOO(
          post('/$echo', params({ name: 'code', valueCode: 'a' }, { name: 'flag', valueBoolean: true }, { name: 'flag', valueBoolean: false })),
          400,
          'invalid',
          'Expected 0..1 value(s) for input parameter flag, but 2 provided',
        );
        const three = [1, 2, 3].map((n) => ({ name: 'pair', valueString: `v${n}` }));
        await expectOO(post('/$echo', params({ name: 'code', valueCode: 'a' }, ...three)), 400, 'invalid', 'Expected 0..2 value(s) for input parameter pair, but 3 provided');
        await expectOO(
          post('/$echo', params({ name: 'code', valueCode: 'a' }, { name: 'item', part: [{ name: 'val', valueCode: 'v' }] })),
          400,
          'invalid',
          'Expected 1 value(s) for input parameter item.key, but 0 provided',
        );
      });

      test('value type must match the definition', async () => {
        const withCode = (...rest: unknown[]) => post('/$echo', params({ name: 'code', valueCode: 'a' }, ...rest));
        await expectOO(withCode({ name: 'flag', valueString: 'true' }), 400, 'invalid', "Parameter 'flag' must be valueBoolean");
        await expectOO(withCode({ name: 'count', valueDecimal: 3 }), 400, 'invalid', "Parameter 'count' must be valueInteger");
        await expectOO(withCode({ name: 'coding', valueString: 'x' }), 400, 'invalid', "Parameter 'coding' must be valueCoding");
        await expectOO(withCode({ name: 'tag', valueBoolean: true }), 400, 'invalid', "Parameter 'tag' must be valueString");
        await expectOO(withCode({ name: 'coding', resource: { resourceType: 'Basic', code: { text: 'b' } } }), 400, 'invalid', "Parameter 'coding' must be valueCoding");
        await expectOO(withCode({ name: 'resource', valueString: 'x' }), 400, 'invalid', "Parameter 'resource' must be a resource");
        await expectOO(withCode({ name: 'patient', resource: { resourceType: 'Basic', code: { text: 'b' } } }), 400, 'invalid', "Parameter 'patient' must be a Patient resource");
        await expectOO(withCode({ name: 'item', valueString: 'x' }), 400, 'invalid', "Parameter 'item' must have part");
        await expectOO(
          withCode({ name: 'item', part: [{ name: 'key', valueCode: 'k' }, { name: 'val', valueInteger: 1 }] }),
          400,
          'invalid',
          "Parameter 'item.val' must be one of valueCode, valueBoolean",
        );
        const flagged = await withCode({ name: 'flag', valueString: 'true' });
        assert.deepEqual(flagged.body.issue[0].expression, ['Parameters.parameter[1]']);
      });

      test('string-like value[x] are accepted for string-like parameters', async () => {
        for (const key of ['valueString', 'valueUri', 'valueCanonical', 'valueId', 'valueMarkdown', 'valueCode']) {
          const res = await post('/$echo', params({ name: 'code', [key]: 'abc' }, { name: 'tag', [key]: 'abc' }));
          assert.equal(res.status, 200, `${key}: ${res.text}`);
          assert.deepEqual(received(res.body), { code: 'abc', tag: ['abc'] });
        }
      });
    });

    describe('GET input', () => {
      test('simple parameters from the query, converted by type', async () => {
        const res = await server.fhir('GET', '/Patient/$echo?code=abc&flag=true&count=-3&ratio=1.25&tag=a&tag=b&unknown=x&_format=json');
        assert.equal(res.status, 200, res.text);
        assert.deepEqual(received(res.body), { code: 'abc', flag: true, count: -3, ratio: 1.25, tag: ['a', 'b'] });
      });

      test('_pretty is honoured and not an input', async () => {
        const res = await server.fhir('GET', '/$echo?code=a&_pretty=true');
        assert.equal(res.status, 200, res.text);
        assert.match(res.text, /\n {2}"resourceType"/);
        assert.deepEqual(received(res.body), { code: 'a' });
      });

      test('affectsState → 405', async () => {
        await expectOO(server.fhir('GET', '/Patient/$mutate'), 405, 'not-supported', 'Operation $mutate affects state and cannot be invoked with GET');
        const ok = await post('/Patient/$mutate', params({ name: 'note', valueString: 'n' }));
        assert.equal(ok.status, 200, ok.text);
      });

      test('a complex-typed parameter in the query → 400', async () => {
        const text = (name: string, type: string) => `Complex parameter ${name} (${type}) cannot be passed via query string`;
        await expectOO(server.fhir('GET', '/$echo?code=a&coding=x'), 400, 'invalid', text('coding', 'Coding'));
        await expectOO(server.fhir('GET', '/$echo?code=a&resource=x'), 400, 'invalid', text('resource', 'Resource'));
        await expectOO(server.fhir('GET', '/$echo?code=a&patient=x'), 400, 'invalid', text('patient', 'Patient'));
        await expectOO(server.fhir('GET', '/$echo?code=a&item=x'), 400, 'invalid', text('item', 'part'));
      });

      test('an empty value counts as absent', async () => {
        const res = await server.fhir('GET', '/$echo?code=a&flag=&coding=&count=');
        assert.equal(res.status, 200, res.text);
        assert.deepEqual(received(res.body), { code: 'a' });
        await expectOO(server.fhir('GET', '/$echo?code='), 400, 'invalid', 'Expected 1 value(s) for input parameter code, but 0 provided');
      });

      test('values that do not convert to the declared type → 400', async () => {
        const cases: Array<[string, string]> = [
          ['flag=yes', "Invalid value 'yes' provided for boolean parameter 'flag'"],
          ['flag=TRUE', "Invalid value 'TRUE' provided for boolean parameter 'flag'"],
          ['count=1.5', "Invalid value '1.5' provided for integer parameter 'count'"],
          ['count=12abc', "Invalid value '12abc' provided for integer parameter 'count'"],
          ['ratio=abc', "Invalid value 'abc' provided for decimal parameter 'ratio'"],
        ];
        for (const [query, text] of cases) await expectOO(server.fhir('GET', `/$echo?code=a&${query}`), 400, 'invalid', text);
      });

      test('cardinality applies to repeated query names', async () => {
        await expectOO(server.fhir('GET', '/$echo?code=a&code=b'), 400, 'invalid', 'Expected 1 value(s) for input parameter code, but 2 provided');
        await expectOO(server.fhir('GET', '/$echo?code=a&pair=1&pair=2&pair=3'), 400, 'invalid', 'Expected 0..2 value(s) for input parameter pair, but 3 provided');
      });
    });

    describe('output', () => {
      test('definition order, repeated entries, nested parts, types inferred for open types, absent omitted', async () => {
        const res = await server.fhir('GET', '/$listing');
        assert.equal(res.status, 200, res.text);
        assert.deepEqual(res.body, {
          resourceType: 'Parameters',
          parameter: [
            { name: 'first', valueString: 'one' },
            { name: 'item', valueString: 'x' },
            { name: 'item', valueString: 'y' },
            { name: 'item', valueString: 'z' },
            { name: 'entry', part: [{ name: 'key', valueCode: 'a' }, { name: 'value', valueBoolean: true }] },
            { name: 'entry', part: [{ name: 'key', valueCode: 'b' }, { name: 'value', valueInteger: 7 }] },
            { name: 'entry', part: [{ name: 'key', valueCode: 'c' }, { name: 'value', valueDecimal: 1.5 }] },
            { name: 'entry', part: [{ name: 'key', valueCode: 'd' }, { name: 'value', valueString: 'text' }] },
            {
              name: 'entry',
              part: [
                { name: 'key', valueCode: 'e' },
                { name: 'value', valueCoding: { system: 'http://example.org/cs', code: 'y', display: 'Y' } },
              ],
            },
            { name: 'entry', part: [{ name: 'key', valueCode: 'f' }, { name: 'value', valueCode: 'z' }] },
            {
              name: 'entry',
              part: [
                { name: 'key', valueCode: 'g' },
                { name: 'sub', part: [{ name: 'n', valueInteger: 1 }] },
                { name: 'sub', part: [{ name: 'n', valueInteger: 2 }] },
              ],
            },
            { name: 'flag', valueBoolean: false },
          ],
        });
      });

      test('no output values → an empty Parameters', async () => {
        const res = await server.fhir('GET', '/$listing?empty=true');
        assert.equal(res.status, 200, res.text);
        assert.deepEqual(res.body, { resourceType: 'Parameters' });
      });

      test('a single return out-parameter → the resource itself is the body', async () => {
        const res = await server.fhir('GET', '/Patient/$fetch?family=Smith');
        assert.equal(res.status, 200, res.text);
        assert.deepEqual(res.body, { resourceType: 'Patient', name: [{ family: 'Smith' }] });
        assert.match(res.headers.get('content-type') ?? '', /^application\/fhir\+json/);
      });

      test('output that violates the definition → 500 Internal server error', async () => {
        const ok = await post('/$broken', params({ name: 'mode', valueCode: 'ok' }));
        assert.equal(ok.status, 200, ok.text);
        for (const mode of ['missing', 'wrong-type', 'array', 'not-array', 'undeclared', 'bad-part', 'unknown-shape', 'not-object', 'throw']) {
          const body = await expectOO(post('/$broken', params({ name: 'mode', valueCode: mode })), 500, 'exception', 'Internal server error');
          assert.equal(JSON.stringify(body).includes('handler'), false, 'no details leak');
        }
      });
    });

    describe('definitions and metadata', () => {
      test('each registered definition is readable at OperationDefinition/<id>', async () => {
        for (const op of [echo, mutate, fetchOp]) {
          const res = await server.fhir('GET', `/OperationDefinition/${op.definition.id}`);
          assert.equal(res.status, 200, res.text);
          assert.equal(res.body.code, op.definition.code);
          assert.equal(res.body.url, op.definition.url);
          assert.deepEqual(res.body.parameter, op.definition.parameter);
        }
      });

      test('a definition without id/url gets <Type>-<code> and a canonical below the FHIR base; alsoInstance shows as instance', async () => {
        const res = await server.fhir('GET', '/OperationDefinition/Observation-type-only');
        assert.equal(res.status, 200, res.text);
        assert.match(res.body.url, /\/fhir\/R4\/OperationDefinition\/Observation-type-only$/);
        assert.equal(res.body.instance, true);
        assert.equal(res.body.meta.project, undefined, 'shared content');
      });

      test('the terminology definitions are served and listed in /metadata', async () => {
        const registry = server.app.operations as OperationsRegistry;
        const registered = new Set(registry.definitions().map((d) => d.id));
        for (const id of ['CodeSystem-lookup', 'ValueSet-validate-code', 'CodeSystem-subsumes']) assert.ok(registered.has(id), `${id} registered`);
        const metadata = await server.fhir('GET', '/metadata');
        const opsOf = (type: string) => metadata.body.rest[0].resource.find((r: CapabilityStatementRestResource) => r.type === type).operation;
        for (const id of DEFINITION_IDS.filter((d) => registered.has(d))) {
          const res = await server.fhir('GET', `/OperationDefinition/${id}`);
          assert.equal(res.status, 200, res.text);
          // Served = registered (a feature may extend the shipped file); never less than the file.
          const served = registry.definitions().find((d) => d.id === id);
          assert.deepEqual(res.body.parameter, served?.parameter, id);
          const key = (q: OperationDefinitionParameter) => `${q.use} ${q.name}`;
          const servedKeys = new Set(res.body.parameter.map(key));
          for (const q of loadDefinition(id).parameter ?? []) assert.ok(servedKeys.has(key(q)), `${id}: ${key(q)}`);
          // An operation on any resource (Resource, DomainResource) is listed on every type: check Patient.
          const type = ['Resource', 'DomainResource'].includes(res.body.resource[0]) ? 'Patient' : res.body.resource[0];
          // A system-level-only operation ($versions) is listed under rest.operation.
          const listed = res.body.type || res.body.instance ? opsOf(type) : metadata.body.rest[0].operation;
          assert.ok(listed.some((o: CapabilityStatementRestResourceOperation) => o.name === res.body.code && o.definition === res.body.url), `${id} in /metadata`);
        }
      });

      test('definitions are searchable like any stored resource', async () => {
        const res = await server.fhir('GET', `/OperationDefinition?url=${encodeURIComponent(echo.definition.url as string)}`);
        assert.equal(res.status, 200, res.text);
        assert.deepEqual(res.body.entry?.map((e: { resource: OperationDefinition }) => e.resource.id), ['test-echo']);
      });

      test('/metadata lists every registered operation, at every level and type it answers', async () => {
        const registry = server.app.operations as OperationsRegistry;
        const rest = (await server.fhir('GET', '/metadata')).body.rest[0];
        const has = (list: CapabilityStatementRestResourceOperation[] | undefined, d: OperationDefinition) => (list ?? []).some((o) => o.name === d.code && o.definition === d.url);
        for (const d of registry.definitions()) {
          if (d.system) assert.ok(has(rest.operation, d), `${d.id} at system level`);
          for (const declared of d.type || d.instance ? (d.resource ?? []) : []) {
            // An operation on any resource (Resource, DomainResource) is listed on every type: check Patient.
            const type = ['Resource', 'DomainResource'].includes(declared) ? 'Patient' : declared;
            assert.ok(has(rest.resource.find((r: CapabilityStatementRestResource) => r.type === type)?.operation, d), `${d.id} on ${type}`);
          }
        }
      });

      test('/metadata lists the test operations only where they belong', async () => {
        const res = await server.fhir('GET', '/metadata');
        assert.equal(res.status, 200, res.text);
        const rest = res.body.rest[0];
        const ops = (type: string) => rest.resource.find((r: CapabilityStatementRestResource) => r.type === type)?.operation ?? [];
        // Other features register operations too: check ours are present, and only where they belong.
        const names = (list: CapabilityStatementRestResourceOperation[]) => new Set(list.map((o) => o.name));
        const system = names(rest.operation);
        for (const name of ['broken', 'echo', 'listing', 'system']) assert.ok(system.has(name), `system: ${name}`);
        for (const name of ['fetch', 'mutate', 'type-only']) assert.ok(!system.has(name), `not system: ${name}`);
        assert.deepEqual(rest.operation.find((o: CapabilityStatementRestResourceOperation) => o.name === 'echo'), { name: 'echo', definition: echo.definition.url });
        const patient = names(ops('Patient'));
        for (const name of ['echo', 'fetch', 'mutate']) assert.ok(patient.has(name), `Patient: ${name}`);
        for (const name of ['system', 'listing', 'type-only']) assert.ok(!patient.has(name), `not Patient: ${name}`);
        const typeOnlyEntry = ops('Observation').find((o: CapabilityStatementRestResourceOperation) => o.name === 'type-only');
        assert.match(typeOnlyEntry?.definition ?? '', /\/OperationDefinition\/Observation-type-only$/);
      });
    });
  });

  describe(`operation definitions across restarts (${driver})`, () => {
    test('re-publishing an unchanged definition creates no new version', async () => {
      const dataDir = driver === 'pglite' ? mkdtempSync(join(tmpdir(), 'lattice-ops-')) : undefined;
      const databaseUrl = driver === 'pg' ? await createTestDatabase() : undefined;
      try {
        for (let run = 0; run < 2; run++) {
          const server = await startServer(driver, { dataDir, databaseUrl });
          try {
            await registerAll(server);
            const res = await server.fhir('GET', '/OperationDefinition/test-echo');
            assert.equal(res.status, 200, res.text);
            assert.equal(res.body.meta.versionId, '1');
          } finally {
            await server.stop();
          }
        }
        // A definition that changed between two starts is stored again (the others are not).
        const server = await startServer(driver, { dataDir, databaseUrl });
        try {
          const registry = server.app.operations as OperationsRegistry;
          for (const op of ALL) registry.register(op === echo ? { ...echo, definition: { ...echo.definition, description: 'Echoes its input, changed' } } : op);
          await registry.published();
          const changed = await server.fhir('GET', '/OperationDefinition/test-echo');
          assert.equal(changed.body.meta.versionId, '2');
          assert.equal(changed.body.description, 'Echoes its input, changed');
          const unchanged = await server.fhir('GET', '/OperationDefinition/test-fetch');
          assert.equal(unchanged.status, 200, unchanged.text);
          assert.equal(unchanged.body.meta.versionId, '1');
        } finally {
          await server.stop();
        }
      } finally {
        if (dataDir) rmSync(dataDir, { recursive: true, force: true });
      }
    });
  });
}
