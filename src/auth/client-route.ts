import { randomUUID } from 'node:crypto';
import type { ClientApplication } from '@medplum/fhirtypes';
import { badRequest, notFound } from '../fhir/outcome.js';
import type { AppRoute } from '../core/app-route.js';
import type { FeatureEnv } from '../core/feature.js';
import { requireProjectAdmin } from './access.js';
import { createMembership } from './accounts.js';
import { hashSecret, randomSecret } from './secrets.js';

/**
 * `POST /admin/projects/<projectId>/client {name}` → 201 ClientApplication with `id` and
 * `secret` (shown only here), plus the ProjectMembership that lets it act in the project.
 */
export function clientRoute(env: FeatureEnv): AppRoute {
  return {
    method: 'POST',
    url: '/admin/projects/:projectId/client',
    auth: true,
    async handler(req) {
      const projectId = req.params.projectId;
      requireProjectAdmin(req.ctx.auth, projectId);
      const body = req.body as { name?: unknown } | undefined;
      const name = body && typeof body === 'object' ? body.name : undefined;
      if (typeof name !== 'string' || name.trim() === '') throw badRequest('Missing name', 'name');
      const system = env.system;
      if (!(await system.tryRead('Project', projectId))) throw notFound();

      const id = randomUUID();
      const secret = randomSecret();
      // The hash goes in first: if the resource write fails, an orphan hash grants nothing
      // (client_credentials also needs the membership).
      await env.db.query('INSERT INTO auth_client_secret (client_id, secret_hash) VALUES ($1, $2)', [id, hashSecret(secret)]);
      const client = await system.create<ClientApplication>(
        { resourceType: 'ClientApplication', name: name.trim(), meta: { project: projectId } },
        { id },
      );
      await createMembership(env.system, {
        projectId,
        member: { reference: `ClientApplication/${id}` },
        profile: { reference: `ClientApplication/${id}` },
      });
      return { status: 201, body: { ...client, secret }, contentType: 'application/fhir+json; charset=utf-8' };
    },
  };
}
