import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { OperationDefinition } from '@medplum/fhirtypes';
import { OutputViolation, formatOutput } from './format-output.js';
import { typed } from './typed-value.js';

/**
 * The formatter works from a plan made once per definition object (docs/operations.md#output):
 * these check that a reused plan gives the same answers and that violations name the
 * offending parameter by its dotted path.
 */
const definition: OperationDefinition = {
  resourceType: 'OperationDefinition',
  status: 'active',
  kind: 'operation',
  name: 'Lookupish',
  code: 'lookupish',
  system: false,
  type: true,
  instance: false,
  parameter: [
    { name: 'system', use: 'in', min: 0, max: '1', type: 'uri' },
    { name: 'name', use: 'out', min: 1, max: '1', type: 'string' },
    { name: 'abstract', use: 'out', min: 0, max: '1', type: 'boolean' },
    { name: 'designation', use: 'out', min: 0, max: '*', part: [
      { name: 'use', use: 'out', min: 0, max: '1', type: 'Coding' },
      { name: 'value', use: 'out', min: 1, max: '1', type: 'string' },
    ] },
    { name: 'property', use: 'out', min: 0, max: '*', part: [
      { name: 'code', use: 'out', min: 1, max: '1', type: 'code' },
      { name: 'value', use: 'out', min: 0, max: '1', type: 'Element' },
    ] },
  ],
};

function violation(output: unknown): string {
  try {
    formatOutput(definition, output);
  } catch (err) {
    assert.ok(err instanceof OutputViolation);
    return err.message;
  }
  assert.fail('no violation');
}

describe('formatOutput', () => {
  test('formats typed entries, parts and open types in definition order, the same each time', () => {
    const output = {
      property: [{ code: 'status', value: typed('code', 'active') }, { code: 'rank', value: 3 }],
      designation: [{ use: { system: 'http://snomed.info/sct', code: '900000000000013009' }, value: 'Synonym' }],
      abstract: false,
      name: 'Example',
    };
    const expected = {
      resourceType: 'Parameters',
      parameter: [
        { name: 'name', valueString: 'Example' },
        { name: 'abstract', valueBoolean: false },
        { name: 'designation', part: [{ name: 'use', valueCoding: { system: 'http://snomed.info/sct', code: '900000000000013009' } }, { name: 'value', valueString: 'Synonym' }] },
        { name: 'property', part: [{ name: 'code', valueCode: 'status' }, { name: 'value', valueCode: 'active' }] },
        { name: 'property', part: [{ name: 'code', valueCode: 'rank' }, { name: 'value', valueInteger: 3 }] },
      ],
    };
    assert.deepEqual(formatOutput(definition, output), expected);
    assert.deepEqual(formatOutput(definition, output), expected); // from the kept plan
  });

  test('violations name the parameter by its dotted path', () => {
    assert.equal(violation({}), 'out-parameter name: 0 value(s) for cardinality 1..1');
    assert.equal(violation({ name: 'x', extra: 1 }), 'undeclared out-parameter extra');
    assert.equal(violation({ name: 'x', designation: [{ value: 'v', colour: 'red' }] }), 'undeclared out-parameter designation.colour');
    assert.equal(violation({ name: 'x', designation: [{ use: { system: 's', code: 'c' } }] }), 'out-parameter designation.value: 0 value(s) for cardinality 1..1');
    assert.equal(violation({ name: 'x', property: [{ code: 'c', value: typed('code', '') }] }), 'out-parameter property.value: string "" is not a valid code');
    assert.equal(violation({ name: 'x', property: [{ code: 'c', value: Symbol.for('?') as unknown }] }).startsWith('out-parameter property.value: cannot tell the FHIR type'), true);
    assert.equal(violation({ name: 'x', designation: { value: 'v' } }), 'out-parameter designation is multi-valued: expected an array, got an object');
    assert.equal(violation({ name: ['x'] }), 'out-parameter name is single-valued (max 1), got an array');
    assert.equal(violation({ name: 'x', abstract: 'no' }), 'out-parameter abstract: string "no" is not a valid boolean');
  });
});
