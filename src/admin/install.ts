import type { AppRoute } from '../core/app-route.js';
import type { FeatureEnv } from '../core/feature.js';
import { inviteUser, type InviteDeps } from './invite.js';
import { memberRoutes } from './member-routes.js';
import { setPasswordRoutes } from './set-password-routes.js';
import { TxWriter } from './tx-writer.js';

/** Wires the admin feature: the invite endpoint, member management and the set-password page and endpoint. */
export function installAdmin(env: FeatureEnv): AppRoute[] {
  const writer = new TxWriter(env.system);
  const deps: InviteDeps = { db: env.db, system: env.system, writer, passwordCost: env.config.passwordCost };
  return [
    {
      method: 'POST',
      url: '/admin/projects/:projectId/invite',
      auth: true,
      async handler(req) {
        const membership = await inviteUser(deps, req.ctx, req.params.projectId, req.body);
        return { status: 200, body: membership, contentType: 'application/fhir+json; charset=utf-8' };
      },
    },
    ...memberRoutes({ db: env.db, system: env.system, writer }),
    ...setPasswordRoutes(env.db, writer, env.config.passwordCost),
  ];
}
