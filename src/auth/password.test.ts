import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { loadConfig } from '../config.js';
import { hashPassword, verifyPassword } from './password.js';

describe('password hashing', () => {
  test('the default cost is scrypt N=2^15, r=8, p=1, and the hash verifies', async () => {
    const cost = loadConfig({}).passwordCost;
    assert.equal(cost, 15);
    const hash = await hashPassword('correct horse battery', cost);
    assert.match(hash, /^scrypt\$32768\$8\$1\$[A-Za-z0-9+/=]{24}\$[A-Za-z0-9+/=]{44}$/);
    assert.equal(await verifyPassword('correct horse battery', hash), true);
    assert.equal(await verifyPassword('correct horse batterY', hash), false);
  });

  test('a hash keeps the cost it was made with: changing LATTICE_PASSWORD_COST locks nobody out', async () => {
    const cheap = await hashPassword('pw-made-cheaply', loadConfig({ LATTICE_PASSWORD_COST: '10' }).passwordCost);
    assert.match(cheap, /^scrypt\$1024\$/);
    assert.equal(await verifyPassword('pw-made-cheaply', cheap), true);
    const dear = await hashPassword('pw-made-dearly', loadConfig({ LATTICE_PASSWORD_COST: '16' }).passwordCost);
    assert.match(dear, /^scrypt\$65536\$/);
    assert.equal(await verifyPassword('pw-made-dearly', dear), true);
  });

  test('LATTICE_PASSWORD_COST outside 10–17 is refused at start', () => {
    for (const value of ['9', '18', 'abc', '-1']) {
      assert.throws(() => loadConfig({ LATTICE_PASSWORD_COST: value }), /LATTICE_PASSWORD_COST must be/);
    }
  });

  test('malformed stored hashes never verify', async () => {
    for (const stored of [undefined, '', 'scrypt$1024$8$1$c2FsdA==', 'bcrypt$10$x$y$z$w']) {
      assert.equal(await verifyPassword('anything', stored), false);
    }
  });
});
