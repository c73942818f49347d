import { randomBytes } from 'node:crypto';
import type { Database } from '../core/database.js';
import type { SystemRepository } from '../core/repository.js';
import { findUserIdByEmail, setPassword } from './accounts.js';
import { normalizeEmail } from './email-address.js';
import { LoginThrottle } from './login-throttle.js';

/**
 * `lattice admin set-password <email>`: an operator's way to (re)set any user's password from
 * the server's machine — the recovery for a lost super-admin password. It works on the
 * database directly (PGlite folder or DATABASE_URL), not over HTTP, so it needs no token.
 */

/** A random password, as the first start generates one. */
export function generatePassword(): string {
  return randomBytes(12).toString('base64url');
}

export interface SetPasswordOutcome {
  userId: string;
  email: string;
}

/**
 * Sets the password of the user who logs in with `email` (a project-scoped user when
 * `projectId` is given) and clears the account's failed-login count, so a locked-out user can
 * log in at once. Throws when there is no such user or the password is too short.
 */
export async function setPasswordByEmail(
  services: { db: Database; system: SystemRepository; config: { passwordCost: number } },
  email: string,
  password: string,
  projectId?: string,
): Promise<SetPasswordOutcome> {
  const normalized = normalizeEmail(email) ?? '';
  const userId = await findUserIdByEmail(services.db, normalized, projectId);
  if (!userId) throw new Error(`No user logs in with ${normalized}${projectId ? ` in project ${projectId}` : ''}`);
  await setPassword(services.system, userId, password, services.config.passwordCost);
  await new LoginThrottle(services.db).clearAccount(normalized);
  return { userId, email: normalized };
}

/**
 * The new password from the terminal (asked twice, not echoed) or from standard input (its
 * first line); undefined when nothing was entered, meaning "generate one".
 */
export async function readNewPassword(): Promise<string | undefined> {
  const stdin = process.stdin;
  if (!stdin.isTTY) {
    const chunks: Buffer[] = [];
    for await (const chunk of stdin) chunks.push(Buffer.from(chunk as Buffer));
    const line = Buffer.concat(chunks).toString('utf8').split(/\r?\n/)[0];
    return line ? line : undefined;
  }
  const first = await promptHidden('New password (empty: generate one): ');
  if (!first) return undefined;
  const second = await promptHidden('Repeat it: ');
  if (first !== second) throw new Error('The two passwords differ');
  return first;
}

/** Reads one line from the terminal without echoing it. */
function promptHidden(prompt: string): Promise<string> {
  const stdin = process.stdin;
  process.stderr.write(prompt);
  stdin.setRawMode(true);
  stdin.setEncoding('utf8');
  stdin.resume();
  return new Promise((resolve, reject) => {
    let value = '';
    const finish = () => {
      stdin.off('data', onData);
      stdin.setRawMode(false);
      stdin.pause();
      process.stderr.write('\n');
    };
    const onData = (chunk: string) => {
      for (const ch of chunk) {
        if (ch === '\r' || ch === '\n') {
          finish();
          resolve(value);
          return;
        }
        if (ch === '\u0003' || ch === '\u0004') {
          finish();
          reject(new Error('Cancelled'));
          return;
        }
        if (ch === '\u007f' || ch === '\b') value = value.slice(0, -1);
        else value += ch;
      }
    };
    stdin.on('data', onData);
  });
}
