import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import type { OperationDefinition } from '@medplum/fhirtypes';
import { validateResource } from '../src/fhir/validation/validate-resource.js';
import { buildDefinitions, definitionFileText } from '../scripts/build-definitions.js';
import { DEFINITION_IDS, loadDefinition } from '../src/operations/definitions/index.js';
import type { DefinitionPublisher } from '../src/operations/publish.js';
import { OperationsRegistry } from '../src/operations/registry.js';

/** `use name min..max type` of every top-level parameter, for compact assertions. */
const signature = (def: OperationDefinition) =>
  (def.parameter ?? []).map((p) => `${p.use} ${p.name} ${p.min}..${p.max}${p.type ? ` ${p.type}` : ''}`);

describe('shipped OperationDefinitions', () => {
  test('the files are exactly what scripts/build-definitions.ts generates from the R4 definitions', () => {
    const built = buildDefinitions();
    assert.deepEqual(Object.keys(built).sort(), [...DEFINITION_IDS].sort());
    for (const [id, def] of Object.entries(built)) {
      const file = readFileSync(new URL(`../src/operations/definitions/${id}.json`, import.meta.url), 'utf8');
      assert.equal(file, definitionFileText(def), `${id}.json is stale: run npx tsx scripts/build-definitions.ts`);
    }
  });

  test('every definition is a valid R4 OperationDefinition with the standard id', () => {
    for (const id of DEFINITION_IDS) {
      const def = loadDefinition(id);
      assert.equal(def.id, id);
      assert.deepEqual(validateResource(def), [], id);
    }
  });

  test('loadDefinition returns a fresh copy', () => {
    const a = loadDefinition('CodeSystem-lookup');
    a.parameter?.splice(0);
    assert.ok((loadDefinition('CodeSystem-lookup').parameter ?? []).length > 0);
  });

  test('$lookup: R4 plus output definition after display, tx-resource/useSupplement, abstract, code, system, used-supplement', () => {
    const def = loadDefinition('CodeSystem-lookup');
    assert.equal(def.url, 'http://hl7.org/fhir/OperationDefinition/CodeSystem-lookup');
    const sig = signature(def);
    for (const p of ['in code 0..1 code', 'in system 0..1 uri', 'in coding 0..1 Coding', 'in property 0..* code', 'in displayLanguage 0..1 code']) {
      assert.ok(sig.includes(p), p);
    }
    assert.deepEqual(
      sig.filter((s) => s.startsWith('out')),
      [
        'out name 1..1 string',
        'out version 0..1 string',
        'out display 1..1 string',
        'out definition 0..1 string',
        'out designation 0..*',
        'out property 0..*',
        'out abstract 0..1 boolean',
        'out code 0..1 code',
        'out system 0..1 uri',
        'out used-supplement 0..* canonical',
      ],
    );
    for (const p of ['in tx-resource 0..* Resource', 'in useSupplement 0..* canonical']) assert.ok(sig.includes(p), p);
    const designation = def.parameter?.find((p) => p.use === 'out' && p.name === 'designation');
    assert.deepEqual(designation?.part?.map((p) => p.name), ['language', 'use', 'value', 'source']);
  });

  for (const id of ['ValueSet-validate-code', 'CodeSystem-validate-code'] as const) {
    test(`${id}: R5 outputs and the tx ecosystem inputs`, () => {
      const sig = signature(loadDefinition(id));
      assert.deepEqual(
        sig.filter((s) => s.startsWith('out')),
        [
          'out result 1..1 boolean',
          'out message 0..1 string',
          'out display 0..1 string',
          'out code 0..1 code',
          'out system 0..1 uri',
          'out version 0..1 string',
          'out codeableConcept 0..1 CodeableConcept',
          'out issues 0..1 OperationOutcome',
          'out inactive 0..1 boolean',
          'out status 0..1 code',
          'out normalized-code 0..1 code',
          'out x-unknown-system 0..1 canonical',
          'out x-caused-by-unknown-system 0..1 canonical',
        ],
      );
      for (const p of [
        'in tx-resource 0..* Resource',
        'in useSupplement 0..* canonical',
        'in systemVersion 0..1 string',
        'in codeableConcept 0..1 CodeableConcept',
        'in activeOnly 0..1 boolean',
        'in lenient-display-validation 0..1 boolean',
        'in valueset-membership-only 0..1 boolean',
      ]) {
        assert.ok(sig.includes(p), `${id}: ${p}`);
      }
      if (id === 'ValueSet-validate-code') assert.ok(sig.includes('in valueSetVersion 0..1 string'));
    });
  }

  test('$subsumes is the R4 definition plus tx-resource', () => {
    assert.deepEqual(signature(loadDefinition('CodeSystem-subsumes')), [
      'in codeA 0..1 code',
      'in codeB 0..1 code',
      'in system 0..1 uri',
      'in version 0..1 string',
      'in codingA 0..1 Coding',
      'in codingB 0..1 Coding',
      'in tx-resource 0..* Resource',
      'out outcome 1..1 code',
    ]);
  });

  test('$expand: R4 plus tx-resource and useSupplement, returns the ValueSet', () => {
    const sig = signature(loadDefinition('ValueSet-expand'));
    for (const p of ['in url 0..1 uri', 'in filter 0..1 string', 'in offset 0..1 integer', 'in count 0..1 integer', 'in tx-resource 0..* Resource', 'in useSupplement 0..* canonical']) {
      assert.ok(sig.includes(p), p);
    }
    assert.deepEqual(sig.filter((s) => s.startsWith('out')), ['out return 1..1 ValueSet']);
  });

  test('CodeSystem $import: type level, affects state, concept/property/designation parts', () => {
    const def = loadDefinition('CodeSystem-import');
    assert.equal(def.code, 'import');
    assert.equal(def.affectsState, true);
    assert.deepEqual([def.system, def.type, def.instance, def.resource], [false, true, false, ['CodeSystem']]);
    assert.deepEqual(signature(def), [
      'in system 1..1 uri',
      'in concept 0..* Coding',
      'in property 0..*',
      'in designation 0..*',
      'out return 1..1 CodeSystem',
    ]);
    const parts = (name: string) => def.parameter?.find((p) => p.name === name)?.part?.map((p) => `${p.name} ${p.min}..${p.max} ${p.type}`);
    assert.deepEqual(parts('property'), ['code 1..1 code', 'property 1..1 code', 'value 1..1 Element']);
    assert.deepEqual(parts('designation'), ['code 1..1 code', 'language 0..1 code', 'use 0..1 Coding', 'value 1..1 string']);
  });

  test('all shipped definitions register together; alsoInstance serves instance: true', () => {
    const stored: OperationDefinition[] = [];
    const publisher = { publish: (d: OperationDefinition) => stored.push(d), settled: async () => {} } as unknown as DefinitionPublisher;
    const registry = new OperationsRegistry(publisher, () => 'http://example.org/fhir/R4');
    for (const id of DEFINITION_IDS) registry.register({ definition: loadDefinition(id), handler: async () => ({}), alsoInstance: id === 'CodeSystem-lookup' });
    assert.deepEqual(stored.map((d) => d.id), DEFINITION_IDS);
    assert.equal(stored.find((d) => d.id === 'CodeSystem-lookup')?.instance, true);
    assert.equal(stored.find((d) => d.id === 'CodeSystem-import')?.url, 'http://example.org/fhir/R4/OperationDefinition/CodeSystem-import');
    const caps = registry.capabilities();
    assert.deepEqual(caps.find((c) => c.definition.endsWith('/ValueSet-validate-code')), {
      name: 'validate-code',
      definition: 'http://hl7.org/fhir/OperationDefinition/ValueSet-validate-code',
      resourceTypes: ['ValueSet'],
      system: false,
    });
    assert.throws(() => registry.register({ definition: loadDefinition('CodeSystem-lookup'), handler: async () => ({}) }), /already registered/);
  });
});
