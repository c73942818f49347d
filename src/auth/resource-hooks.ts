import type { ClientApplication, User } from '@medplum/fhirtypes';
import type { ResourceHook } from '../core/repository.js';
import { conflict } from '../fhir/outcome.js';
import { notifyPolicyChanged, revokeLogins } from './access-state.js';
import { passwordHashOf, splitReference } from './accounts.js';
import { normalizeEmail } from './email-address.js';
import { membershipHooks } from './memberships.js';

/**
 * The auth feature's write hooks (who may write account resources is the tenancy rule, in
 * storage/scope.ts):
 * - `User.passwordHash` and `ClientApplication.secret` never leave the server (redact);
 * - the login lookup tables mirror User e-mails and memberships in the same transaction.
 */
export function authHooks(): ResourceHook[] {
  return [userHook, ...membershipHooks(), clientHook, policyHook];
}

const userHook: ResourceHook = {
  types: ['User'],
  async beforeWrite(resource, _previous, _auth, db) {
    const user = resource as User;
    if (user.email !== undefined) user.email = normalizeEmail(user.email);
    if (user.email) {
      const taken = await db.query('SELECT 1 FROM auth_user WHERE email = $1 AND scope = $2 AND user_id <> $3', [
        user.email,
        userScope(user),
        user.id ?? '',
      ]);
      if (taken.rows.length > 0) throw conflict('Email already registered');
    }
    // Reads are redacted, so a read-modify-write never carries the hash: keep the stored one.
    if (user.passwordHash === undefined && user.id) {
      const stored = await passwordHashOf(db, user.id);
      if (stored) user.passwordHash = stored;
    }
  },
  async afterWrite(tx, resource, previous) {
    const user = resource as User;
    // A new password ends every session of the old one (docs/auth.md#revocation).
    if (previous && (previous as User).passwordHash !== user.passwordHash) await revokeLogins(tx, { userId: user.id as string });
    if (!user.email) {
      await tx.query('DELETE FROM auth_user WHERE user_id = $1', [user.id]);
      return;
    }
    await tx.query(
      `INSERT INTO auth_user (user_id, email, scope) VALUES ($1, $2, $3)
       ON CONFLICT (user_id) DO UPDATE SET email = EXCLUDED.email, scope = EXCLUDED.scope`,
      [user.id, user.email, userScope(user)],
    );
  },
  async afterDelete(tx, previous) {
    await tx.query('DELETE FROM auth_user WHERE user_id = $1', [previous.id]);
  },
  redact(resource) {
    const { passwordHash: _hash, mfaSecret: _mfa, ...rest } = resource as User;
    return rest;
  },
};

/** '' for a server-scoped user, the project id for a project-scoped one. */
function userScope(user: User): string {
  return splitReference(user.project?.reference)?.[1] ?? '';
}

const clientHook: ResourceHook = {
  types: ['ClientApplication'],
  beforeWrite(resource) {
    // Secrets live hashed in auth_client_secret (set by the client endpoint), never in the resource.
    const client = resource as ClientApplication;
    delete client.secret;
    delete client.retiringSecret;
  },
  async afterDelete(tx, previous) {
    await tx.query('DELETE FROM auth_client_secret WHERE client_id = $1', [previous.id]);
  },
  redact(resource) {
    const { secret: _s, retiringSecret: _r, ...rest } = resource as ClientApplication;
    return rest;
  },
};

/** A changed access policy takes effect on the next request of every member it is attached to (docs/auth.md#access-policies). */
const policyHook: ResourceHook = {
  types: ['AccessPolicy'],
  async afterWrite(tx, resource) {
    await notifyPolicyChanged(tx, resource.id as string);
  },
  async afterDelete(tx, previous) {
    await notifyPolicyChanged(tx, previous.id as string);
  },
};
