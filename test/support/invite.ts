import { randomBytes } from 'node:crypto';
import type { ApiResponse, TestServer } from '../harness.js';

/** POST /admin/projects/<projectId>/invite as `token` (default: the super admin; `null`: none). */
export function invite(server: TestServer, projectId: string, body: unknown, token?: string | null): Promise<ApiResponse> {
  return server.request('POST', `/admin/projects/${projectId}/invite`, { body, contentType: 'application/json', token });
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
