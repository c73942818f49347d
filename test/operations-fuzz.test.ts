import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { CodeableConcept, Coding, OperationDefinitionParameter, ValueSet } from '@medplum/fhirtypes';
import type { OperationsRegistry } from '../src/operations/registry.js';
import { drivers, startServer, type TestServer } from './harness.js';
import { prng } from './support/prng.js';

// Fuzz: thousands of generated bodies, mostly malformed, POSTed to an operation whose handler
// trusts its typed input. Every answer must be a 4xx OperationOutcome or a 200 Parameters —
// never a 5xx, never a hang.

// 3,000 per driver in `npm test` (LATTICE_FUZZ_REQUESTS raises it for a longer run).
const REQUESTS = Number(process.env.LATTICE_FUZZ_REQUESTS ?? 3000);
const CONCURRENCY = 20;
const REQUEST_TIMEOUT_MS = 15_000;

type Param = OperationDefinitionParameter;
const p = (name: string, min: number, max: string, type?: string, part?: Param[]): Param => ({
  name, use: 'in', min, max, ...(type ? { type } : {}), ...(part ? { part } : {}),
});

const IN_PARAMS: Param[] = [
  p('code', 1, '1', 'code'),
  p('flag', 0, '1', 'boolean'),
  p('count', 0, '1', 'integer'),
  p('tag', 0, '*', 'string'),
  p('coding', 0, '1', 'Coding'),
  p('concept', 0, '1', 'CodeableConcept'),
  p('valueSet', 0, '1', 'ValueSet'),
  p('item', 0, '*', undefined, [p('key', 1, '1', 'code'), p('val', 0, '1', 'Element')]),
];

/** The typed input IN_PARAMS declare (what the framework promises the handler). */
interface TrustingInput {
  code: string;
  flag?: boolean;
  count?: number;
  tag?: string[];
  coding?: Coding;
  concept?: CodeableConcept;
  valueSet?: ValueSet;
  item?: { key: string; val?: unknown }[];
}

/** A handler that uses its input the way real handlers do, without defensive checks. */
async function trustingHandler(_ctx: unknown, input: TrustingInput): Promise<Record<string, unknown>> {
  let size = input.code.length + (input.tag ?? []).reduce((n: number, t: string) => n + t.trim().length, 0);
  if (input.flag) size += 1;
  if (input.count !== undefined) size += input.count.toFixed(0).length;
  if (input.coding) size += (input.coding.code ?? '').length + (input.coding.system?.startsWith('http') ? 1 : 0);
  if (input.concept) size += (input.concept.coding ?? []).filter((c) => c.code?.toUpperCase()).length;
  if (input.valueSet) size += input.valueSet.resourceType.length + (input.valueSet.compose?.include ?? []).length;
  for (const item of input.item ?? []) size += item.key.length;
  return { size, echo: input.code.toUpperCase() };
}

class Gen {
  constructor(readonly next: () => number) {}
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)];
  }
  string(): string {
    return this.pick(['', 'a', 'abc', ' lead', 'trail ', 'x y', 'http://x.org/cs', 'ünï©ødé', '\u0000', 'a'.repeat(300), '{}', 'true', '12']);
  }
  number(): number {
    return this.pick([0, -1, 1, 1.5, 2 ** 31, -(2 ** 53), 1e308, 3, Number.MIN_VALUE]);
  }
  /** Any JSON value, nested up to `depth`. */
  json(depth: number): unknown {
    const kind = this.int(depth > 0 ? 7 : 5);
    switch (kind) {
      case 0: return null;
      case 1: return this.next() < 0.5;
      case 2: return this.number();
      case 3: return this.string();
      case 4: return {};
      case 5: return Array.from({ length: this.int(4) }, () => this.json(depth - 1));
      default: return Object.fromEntries(Array.from({ length: this.int(4) }, () => [this.pick(KEYS), this.json(depth - 1)]));
    }
  }
  /** A Parameters entry: sometimes well-formed, often not. */
  entry(depth: number): unknown {
    if (this.next() < 0.1) return this.json(2);
    const entry: Record<string, unknown> = {};
    if (this.next() < 0.9) entry.name = this.next() < 0.8 ? this.pick(NAMES) : this.json(1);
    const shape = this.int(6);
    if (shape <= 2) entry[this.pick(VALUE_KEYS)] = this.next() < 0.6 ? this.validValue() : this.json(2);
    if (shape === 1) entry[this.pick(VALUE_KEYS)] = this.json(1);
    if (shape === 3) entry.resource = this.next() < 0.5 ? this.pick(RESOURCES) : this.json(2);
    if (shape === 4 && depth > 0) entry.part = Array.from({ length: this.int(4) }, () => this.entry(depth - 1));
    if (shape === 5) entry[this.pick(KEYS)] = this.json(2);
    return entry;
  }
  validValue(): unknown {
    return this.pick([
      'abc', true, false, 7, 2.5, { system: 'http://x.org/cs', code: 'c' }, { coding: [{ code: 'c' }], text: 't' },
      { code: 5 }, { coding: 'x' }, [], '',
    ]);
  }
  /** One request body (undefined = no body). */
  body(): unknown {
    switch (this.int(10)) {
      case 0: return this.json(3);
      case 1: return { resourceType: 'Parameters', parameter: this.json(3) };
      case 2: {
        // deep nesting of parts
        let e: unknown = { name: 'key', valueCode: 'k' };
        for (let i = 0, n = 1 + this.int(300); i < n; i++) e = { name: this.pick(['item', 'x']), part: [e] };
        return { resourceType: 'Parameters', parameter: [{ name: 'code', valueCode: 'a' }, e] };
      }
      case 3: {
        // huge arrays
        const n = 500 + this.int(4000);
        return { resourceType: 'Parameters', parameter: Array.from({ length: n }, () => (this.next() < 0.98 ? { name: 'tag', valueString: 't' } : this.entry(1))) };
      }
      case 4: return undefined;
      case 5: return this.validBody();
      case 6: return { resourceType: this.pick(['Parameters', 'Patient', 'parameters', 5, null]), parameter: [this.entry(2)] };
      default: return { resourceType: 'Parameters', parameter: Array.from({ length: this.int(8) }, () => this.entry(3)) };
    }
  }
  validBody(): unknown {
    const parameter: unknown[] = [{ name: 'code', valueCode: this.pick(['a', 'b c', 'xyz']) }];
    if (this.next() < 0.5) parameter.push({ name: 'flag', valueBoolean: this.next() < 0.5 });
    if (this.next() < 0.5) parameter.push({ name: 'count', valueInteger: this.int(100) - 50 });
    for (let i = this.int(3); i > 0; i--) parameter.push({ name: 'tag', valueString: this.pick(['a', 'bb']) });
    if (this.next() < 0.5) parameter.push({ name: 'coding', valueCoding: { system: 'http://x.org/cs', code: 'c' } });
    if (this.next() < 0.3) parameter.push({ name: 'valueSet', resource: RESOURCES[0] });
    if (this.next() < 0.5) parameter.push({ name: 'item', part: [{ name: 'key', valueCode: 'k' }, { name: 'val', valueInteger: 1 }] });
    return { resourceType: 'Parameters', parameter };
  }
}

const NAMES = ['code', 'flag', 'count', 'tag', 'coding', 'concept', 'valueSet', 'item', 'key', 'val', 'unknown', ''];
const VALUE_KEYS = ['valueCode', 'valueString', 'valueBoolean', 'valueInteger', 'valueDecimal', 'valueCoding', 'valueCodeableConcept', 'valueUri', 'valueQuantity', 'valueFoo', 'valueDateTime'];
const KEYS = ['name', 'resourceType', 'parameter', 'part', 'resource', 'extension', 'id', 'valueString', 'coding', 'code', 'system', '_valueString', 'foo'];
const RESOURCES = [
  { resourceType: 'ValueSet', status: 'active', compose: { include: [{ system: 'http://x.org/cs' }] } },
  { resourceType: 'ValueSet' },
  { resourceType: 'ValueSet', status: 'active', compose: { include: 'x' } },
  { resourceType: 'Patient', id: 'p' },
  { resourceType: 'NotAType' },
];

/** Runs `fn(i)` for i in [0, total) with at most `limit` in flight. */
async function pool(limit: number, total: number, fn: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: limit }, async () => {
    while (next < total) await fn(next++);
  }));
}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms: ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

for (const driver of drivers) {
  describe(`operations fuzz (${driver})`, () => {
    let server: TestServer;
    before(async () => {
      server = await startServer(driver);
      const registry = server.app.operations as OperationsRegistry;
      registry.register({
        definition: {
          resourceType: 'OperationDefinition', id: 'fuzz-target', name: 'FuzzTarget', status: 'active', kind: 'operation', code: 'fuzz',
          resource: ['ValueSet'], system: false, type: true, instance: true,
          parameter: [...IN_PARAMS, { name: 'size', use: 'out', min: 1, max: '1', type: 'integer' }, { name: 'echo', use: 'out', min: 1, max: '1', type: 'string' }],
        },
        handler: trustingHandler as never,
      });
      await registry.published();
    });
    after(() => server.stop());

    test(`${REQUESTS} generated bodies: only 200 or 4xx OperationOutcome`, async () => {
      const gen = new Gen(prng(20240611));
      const bodies = Array.from({ length: REQUESTS }, () => gen.body());
      const failures: string[] = [];
      const statuses = new Map<number, number>();
      await pool(CONCURRENCY, REQUESTS, async (i) => {
        const body = bodies[i];
        const raw = body === undefined ? undefined : JSON.stringify(body);
        const path = i % 2 === 0 ? '/ValueSet/$fuzz' : '/ValueSet/vs-1/$fuzz';
        const res = await withTimeout(server.fhir('POST', path, { raw }), REQUEST_TIMEOUT_MS, `#${i}`);
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        const ok =
          (res.status === 200 && res.body?.resourceType === 'Parameters') ||
          (res.status >= 400 && res.status < 500 && res.body?.resourceType === 'OperationOutcome' && typeof res.body.issue?.[0]?.details?.text === 'string');
        if (!ok && failures.length < 5) failures.push(`#${i} ${res.status} ${res.text.slice(0, 300)}\n  body: ${(raw ?? '').slice(0, 300)}`);
      });
      assert.deepEqual(failures, []);
      // The generator must exercise both outcomes, or the test proves nothing.
      assert.ok((statuses.get(200) ?? 0) > REQUESTS / 50, `too few valid bodies: ${JSON.stringify([...statuses])}`);
      assert.ok((statuses.get(400) ?? 0) > REQUESTS / 2, `too few invalid bodies: ${JSON.stringify([...statuses])}`);
    });
  });
}
