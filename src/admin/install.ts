import { SYSTEM_AUTH } from '../context.js';
import type { Feature } from '../services.js';
import { backfillClaims, claimsHook } from './claims.js';
import { inviteUser } from './invite.js';
import { setPasswordRoutes } from './set-password-routes.js';
import { TxWriter } from './tx-writer.js';

/**
 * Wires the admin feature: the uniqueness claims on User/ProjectMembership writes (plus a
 * backfill of rows written before this hook existed, e.g. the first-start super admin), the
 * invite endpoint and the set-password page and endpoint.
 */
export const installAdmin: Feature = async (services, routes) => {
  services.hooks.add(claimsHook());
  await backfillClaims(services.db);
  const writer = new TxWriter(services.repository(SYSTEM_AUTH));

  routes.push({
    method: 'POST',
    url: '/admin/projects/:projectId/invite',
    auth: true,
    async handler(req) {
      const membership = await inviteUser(req.ctx, writer, req.params.projectId, req.body);
      return { status: 200, body: membership, contentType: 'application/fhir+json; charset=utf-8' };
    },
  });
  routes.push(...setPasswordRoutes(services, writer));
};
