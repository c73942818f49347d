import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { accessLayersOf, policyGrants, smartScopeGrants } from './access-rights.js';

/** The parsing of SMART scopes and access policies into grants (docs/auth.md#scopes, docs/auth.md#access-policies). */
describe('access rights', () => {
  const letters = (scope: string, patient?: string) => smartScopeGrants([scope], patient)?.map((g) => [g.resourceType, [...g.interactions].sort().join(''), g.compartment, g.criteria]);

  test('v1 and v2 forms', () => {
    assert.deepEqual(letters('user/Observation.read'), [['Observation', 'rs', undefined, undefined]]);
    assert.deepEqual(letters('user/Observation.write'), [['Observation', 'cdu', undefined, undefined]]);
    assert.deepEqual(letters('system/*.*'), [['*', 'cdrsu', undefined, undefined]]);
    assert.deepEqual(letters('user/Patient.cud'), [['Patient', 'cdu', undefined, undefined]]);
    assert.deepEqual(letters('user/Observation.rs?category=laboratory'), [['Observation', 'rs', undefined, [['category', 'laboratory']]]]);
  });

  test('patient/ needs a patient; letters out of order, queries on v1 or * grant nothing; non-resource scopes leave the token unscoped', () => {
    assert.deepEqual(letters('patient/Observation.rs'), []);
    assert.deepEqual(letters('patient/Observation.rs', 'p1'), [['Observation', 'rs', 'p1', undefined]]);
    assert.deepEqual(letters('user/Observation.sr'), []);
    assert.deepEqual(letters('user/Observation.read?category=x'), []);
    assert.deepEqual(letters('user/*.rs?category=x'), []);
    assert.equal(smartScopeGrants(['openid', 'fhirUser', 'launch/patient', 'offline_access'], undefined), undefined);
  });

  test('policies: readonly, interaction, criteria with variables, compartment', () => {
    const auth = { superAdmin: false, projectAdmin: false, profile: 'Patient/p1' };
    const grants = policyGrants(
      {
        resourceType: 'AccessPolicy',
        compartment: { reference: '%patient' },
        resource: [
          { resourceType: 'Observation', readonly: true, criteria: 'Observation?subject=%patient&performer=%profile.id' },
          { resourceType: 'Encounter', interaction: ['read', 'search'] },
          { resourceType: 'Condition', criteria: 'Observation?status=final' },
        ],
      },
      auth,
    );
    assert.deepEqual(
      grants.map((g) => [g.resourceType, [...g.interactions].sort().join(''), g.compartment, g.criteria]),
      [
        ['Observation', 'rs', 'p1', [['subject', 'Patient/p1'], ['performer', 'p1']]],
        ['Encounter', 'rs', 'p1', undefined],
      ],
    );
  });

  test('a Patient profile without a policy is confined to its compartment; a Practitioner keeps its rights', () => {
    assert.deepEqual(accessLayersOf({ superAdmin: false, projectAdmin: false, profile: 'Practitioner/x' }), []);
    const layers = accessLayersOf({ superAdmin: false, projectAdmin: false, profile: 'Patient/p9' });
    assert.equal(layers.length, 1);
    assert.equal(layers[0][0].compartment, 'p9');
  });
});
