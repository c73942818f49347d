import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseResourceScope } from '../fhir/smart-scopes.js';
import { grantScopes, type GrantInput } from './granted-scopes.js';

/** The granting rules of docs/auth.md#granted-scopes, one per test. */
const user = (requested: string, extra: Partial<GrantInput> = {}): GrantInput => ({
  grantType: 'authorization_code',
  memberType: 'User',
  requested,
  ...extra,
});
const client = (requested: string, extra: Partial<GrantInput> = {}): GrantInput => ({
  grantType: 'client_credentials',
  memberType: 'ClientApplication',
  requested,
  ...extra,
});

describe('granted scopes', () => {
  test('SMART v1 and v2 resource scopes parse; other text does not', () => {
    assert.equal(parseResourceScope('patient/Observation.read')?.permissions, 'rs');
    assert.equal(parseResourceScope('user/*.write')?.permissions, 'cud');
    assert.equal(parseResourceScope('system/*.*')?.permissions, 'cruds');
    assert.deepEqual(parseResourceScope('patient/Observation.rs?category=laboratory'), {
      raw: 'patient/Observation.rs?category=laboratory',
      context: 'patient',
      type: 'Observation',
      permissions: 'rs',
      query: 'category=laboratory',
    });
    for (const bad of ['patient/Observation.sr', 'patient/Nope.read', 'group/*.read', 'patient/Observation.', 'patient/Observation.read?x=1', 'openid']) {
      assert.equal(parseResourceScope(bad), undefined, bad);
    }
  });

  test('nothing requested: openid for a person, nothing for client credentials, the registered scope when the client has one', () => {
    assert.deepEqual(grantScopes(user('')), { scope: 'openid' });
    assert.deepEqual(grantScopes(client('')), { scope: '' });
    assert.deepEqual(grantScopes(client('', { clientScope: 'system/Patient.rs' })), { scope: 'system/Patient.rs' });
  });

  test('unknown scope syntax is left out', () => {
    assert.deepEqual(grantScopes(user('openid bogus user/Nope.read user/Patient.read')), { scope: 'openid user/Patient.read' });
  });

  test('system/ scopes only for client credentials; user/, openid and launch scopes only for people', () => {
    assert.deepEqual(grantScopes(user('openid system/*.read user/*.read')), { scope: 'openid user/*.read' });
    assert.deepEqual(grantScopes(client('system/*.read user/*.read openid offline_access')), { scope: 'system/*.read' });
  });

  test('patient/ scopes and launch/patient need a patient context', () => {
    assert.deepEqual(grantScopes(user('openid launch/patient patient/*.read user/Patient.read')), { scope: 'openid user/Patient.read' });
    assert.deepEqual(grantScopes(user('openid launch/patient patient/*.read', { patient: 'p1' })), { scope: 'openid launch/patient patient/*.read' });
    assert.deepEqual(grantScopes(user('launch launch/encounter user/*.rs', { patient: 'p1' })), { scope: 'user/*.rs' });
    assert.deepEqual(grantScopes(user('launch launch/encounter user/*.rs', { patient: 'p1', encounter: 'e1', launched: true })), {
      scope: 'launch launch/encounter user/*.rs',
    });
  });

  test('a client registration narrows what is granted', () => {
    const clientScope = 'openid launch/patient patient/Observation.rs';
    assert.deepEqual(grantScopes(user('openid fhirUser launch/patient patient/*.read', { patient: 'p1', clientScope })), {
      scope: 'openid launch/patient patient/Observation.rs',
    });
    assert.deepEqual(grantScopes(user('patient/*.cruds', { patient: 'p1', clientScope: 'patient/*.read' })), { scope: 'patient/*.read' });
    assert.deepEqual(grantScopes(user('patient/Observation.cruds', { patient: 'p1', clientScope: 'patient/*.rs?category=vital-signs' })), {
      scope: 'patient/Observation.rs?category=vital-signs',
    });
  });

  test('asking only for what cannot be granted → invalid_scope', () => {
    assert.deepEqual(grantScopes(user('bogus')), { error: 'None of the requested scopes can be granted' });
    assert.deepEqual(grantScopes(client('system/*.read', { clientScope: 'system/Patient.read' })), { scope: 'system/Patient.read' });
    assert.deepEqual(grantScopes(client('system/Observation.read', { clientScope: 'system/Patient.read' })), {
      error: 'None of the requested scopes can be granted',
    });
    // Resource scopes were asked for and none remains: a token without them would act with the membership's rights.
    assert.deepEqual(grantScopes(user('openid patient/*.read')), { error: 'None of the requested resource scopes can be granted' });
  });

  test('a refresh keeps the earlier grant, may narrow it, never widens it', () => {
    const previous = 'openid offline_access user/*.rs';
    assert.deepEqual(grantScopes({ ...user(''), grantType: 'refresh_token', previous }), { scope: previous });
    assert.deepEqual(grantScopes({ ...user('user/Patient.rs'), grantType: 'refresh_token', previous }), { scope: 'user/Patient.rs' });
    assert.deepEqual(grantScopes({ ...user('openid user/*.cruds'), grantType: 'refresh_token', previous }), { scope: 'openid user/*.rs' });
  });
});
