import { randomBytes } from 'node:crypto';
import assert from 'node:assert/strict';
import { createSetPasswordLink } from '../../src/admin/set-password-store.js';
import type { ApiResponse, TestProject, TestServer } from '../harness.js';

/** POST /admin/projects/<projectId>/invite as `token` (default: the super admin; `null`: none). */
export function invite(server: TestServer, projectId: string, body: unknown, token?: string | null): Promise<ApiResponse> {
  return server.request('POST', `/admin/projects/${projectId}/invite`, {
    body,
    contentType: 'application/json',
    token: token === undefined ? server.adminToken : token,
  });
}

/** A fresh e-mail address, e.g. `user-1a2b3c4d5e@example.org`. */
export function randomEmail(prefix = 'user'): string {
  return `${prefix}-${randomBytes(5).toString('hex')}@example.org`;
}

/** An invite body for a new Practitioner (Ada Lovelace) with a fresh e-mail. */
export function practitionerInvite(
  extra: Record<string, unknown> = {},
): { resourceType: string; firstName: string; lastName: string; email: string } & Record<string, unknown> {
  return { resourceType: 'Practitioner', firstName: 'Ada', lastName: 'Lovelace', email: randomEmail(), ...extra };
}

/**
 * Invites a new Practitioner into `project` (as its admin) and makes a set-password link for
 * the new user, as the invite does; returns the address and the link's parts.
 */
export async function invitedUserWithLink(
  server: TestServer,
  project: TestProject,
): Promise<{ email: string; id: string; secret: string; url: string }> {
  const email = randomEmail('pw');
  const res = await invite(server, project.projectId, { resourceType: 'Practitioner', firstName: 'Set', lastName: 'Password', email }, project.adminToken);
  assert.equal(res.status, 200, res.text);
  const userId = res.body.user.reference.split('/')[1];
  const url = await server.app.db.transaction((tx) => createSetPasswordLink(tx, userId, server.baseUrl));
  const [id, secret] = url.split('/').slice(-2);
  return { email, id, secret, url };
}
