import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { generateKeyPair } from 'jose';
import { AccessTokens, type TokenSubject } from './access-token.js';
import type { KeyStore } from './keys.js';

/** A key store double that counts public-key lookups (the real one is tested end to end). */
async function fakeKeys() {
  const { publicKey, privateKey } = await generateKeyPair('ES256');
  const store = {
    lookups: 0,
    signingKey: () => ({ kid: 'k1', key: privateKey }),
    async publicKey(kid: string | undefined) {
      store.lookups++;
      return kid === 'k1' ? publicKey : undefined;
    },
  };
  return store;
}

const subject: TokenSubject = {
  projectId: 'p1',
  membershipId: 'm1',
  memberType: 'User',
  memberId: 'u1',
  profile: 'Practitioner/pr1',
  projectAdmin: true,
  superAdmin: false,
  loginId: 'l1',
};

describe('AccessTokens', () => {
  test('verify fills the granted scopes (the scope claim split at spaces); no scope claim → none (docs/auth.md#scopes)', async () => {
    const keys = await fakeKeys();
    const tokens = new AccessTokens(keys as unknown as KeyStore, () => 'http://issuer', () => 60);
    const scoped = await tokens.issue({ ...subject, scope: 'openid  patient/Observation.rs user/*.read' });
    assert.deepEqual((await tokens.verify(scoped.token))?.scopes, ['openid', 'patient/Observation.rs', 'user/*.read']);
    const plain = await tokens.issue(subject);
    assert.equal((await tokens.verify(plain.token))?.scopes, undefined);
  });

  test('a verified token maps to the membership’s AuthInfo', async () => {
    const keys = await fakeKeys();
    const tokens = new AccessTokens(keys as unknown as KeyStore, () => 'http://issuer', () => 60);
    const { token, expiresIn } = await tokens.issue(subject);
    assert.equal(expiresIn, 60);
    assert.deepEqual(await tokens.verify(token), {
      projectId: 'p1',
      membershipId: 'm1',
      userId: 'u1',
      profile: 'Practitioner/pr1',
      loginId: 'l1',
      projectAdmin: true,
      superAdmin: false,
    });
    const client = await tokens.issue({ ...subject, memberType: 'ClientApplication', memberId: 'c1', loginId: undefined });
    const auth = await tokens.verify(client.token);
    assert.equal(auth?.clientId, 'c1');
    assert.equal(auth?.userId, undefined);
  });

  test('a token seen before is answered from the cache (no key lookup, no signature check)', async () => {
    const keys = await fakeKeys();
    const tokens = new AccessTokens(keys as unknown as KeyStore, () => 'http://issuer', () => 60);
    const { token } = await tokens.issue(subject);
    const first = await tokens.verify(token);
    assert.equal(keys.lookups, 1);
    for (let i = 0; i < 100; i++) assert.equal(await tokens.verify(token), first);
    assert.equal(keys.lookups, 1);
  });

  test('the cache does not outlive the token', async () => {
    const keys = await fakeKeys();
    const tokens = new AccessTokens(keys as unknown as KeyStore, () => 'http://issuer', () => 1);
    const { token } = await tokens.issue(subject);
    assert.ok(await tokens.verify(token));
    await new Promise((resolve) => setTimeout(resolve, 2100));
    assert.equal(await tokens.verify(token), undefined);
  });

  test('an issuer change or unknown key invalidates; invalid tokens are not cached', async () => {
    const keys = await fakeKeys();
    let issuer = 'http://a';
    const tokens = new AccessTokens(keys as unknown as KeyStore, () => issuer, () => 60);
    const { token } = await tokens.issue(subject);
    issuer = 'http://b';
    assert.equal(await tokens.verify(token), undefined);
    assert.equal(await tokens.verify(token), undefined);
    assert.equal(keys.lookups, 2, 'each attempt was checked again');
    assert.equal(await tokens.verify('garbage'), undefined);
    assert.equal(await tokens.verify('a.b.c'), undefined);
  });
});
