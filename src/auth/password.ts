import { randomBytes, scrypt as scryptCb, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { MAX_PASSWORD_COST, MIN_PASSWORD_COST } from '../config.js';

/**
 * scrypt with r=8, p=1 and N = 2^cost: cost 15 = ~32 MiB and tens of ms per hash — memory-hard,
 * salted. `LATTICE_PASSWORD_COST` (docs/auth.md#passwords-and-secrets) sets the cost of new
 * hashes; a stored hash keeps the one it was made with, so changing it never locks anyone out.
 * scrypt needs 128·N·r bytes; maxmem leaves room for the highest cost.
 */
const PARAMS = { r: 8, p: 1, maxmem: 2 * 128 * 8 * 2 ** MAX_PASSWORD_COST };
const KEY_LENGTH = 32;

export const MIN_PASSWORD_LENGTH = 8;

function scrypt(password: string, salt: Buffer, keylen: number, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scryptCb(password, salt, keylen, options, (err, key) => (err ? reject(err) : resolve(key))),
  );
}

/** Hashes a password as `scrypt$N$r$p$<salt b64>$<hash b64>`, with N = 2^cost. */
export async function hashPassword(password: string, cost: number): Promise<string> {
  if (!Number.isInteger(cost) || cost < MIN_PASSWORD_COST || cost > MAX_PASSWORD_COST) throw new Error(`password cost ${cost} out of range`);
  const N = 2 ** cost;
  const salt = randomBytes(16);
  const key = await scrypt(password, salt, KEY_LENGTH, { ...PARAMS, N });
  return ['scrypt', N, PARAMS.r, PARAMS.p, salt.toString('base64'), key.toString('base64')].join('$');
}

/** Checks a password against a stored hash in constant time; false for malformed hashes. */
export async function verifyPassword(password: string, stored: string | undefined): Promise<boolean> {
  const parts = stored?.split('$');
  if (!parts || parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [, n, r, p, saltB64, hashB64] = parts;
  const expected = Buffer.from(hashB64, 'base64');
  const key = await scrypt(password, Buffer.from(saltB64, 'base64'), expected.length, {
    N: Number(n),
    r: Number(r),
    p: Number(p),
    maxmem: PARAMS.maxmem,
  });
  return key.length === expected.length && timingSafeEqual(key, expected);
}
