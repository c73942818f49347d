import { randomUUID } from 'node:crypto';
import type { ClientApplication } from '@medplum/fhirtypes';
import type { Queryable } from '../core/database.js';
import { badRequest, notFound } from '../fhir/outcome.js';
import type { AppRoute } from '../core/app-route.js';
import type { FeatureEnv } from '../core/feature.js';
import { createMembership } from './accounts.js';
import { parseClientRequest } from './client-request.js';
import { readRawInProject } from '../storage/raw-resources.js';
import { hashSecret, randomSecret } from './secrets.js';

/**
 * `POST /admin/projects/<projectId>/client {name, description?, redirectUri?, redirectUris?, scope?, public?}`
 * (docs/auth.md#client-applications) → 201 ClientApplication with `id` and, for a confidential
 * client, `secret` (shown only here), plus the ProjectMembership that lets it act in the
 * project with client_credentials. A public client gets neither: it signs users in with the
 * authorization code and PKCE. Everything is written in one transaction.
 */
export function clientRoute(env: FeatureEnv): AppRoute {
  return {
    method: 'POST',
    url: '/admin/projects/:projectId/client',
    auth: true,
    async handler(req) {
      const projectId = req.params.projectId;
      req.ctx.repo.scope.checkAdminister(projectId);
      const fields = parseClientRequest(req.body);
      const system = env.system;
      if (!(await system.tryRead('Project', projectId))) throw notFound();

      const id = randomUUID();
      const body = await env.db.transaction(async (tx) => {
        const repo = system.inTransaction(tx);
        const client = await repo.create(
          { resourceType: 'ClientApplication', ...fields, meta: { project: projectId } },
          { id },
        );
        if (fields.public) return client;
        await createMembership(repo, {
          projectId,
          member: { reference: `ClientApplication/${id}` },
          profile: { reference: `ClientApplication/${id}` },
        });
        return { ...client, ...(await issueSecret(tx, id, env.config.clientSecretLifetime)) };
      });
      return { status: 201, body, contentType: FHIR_JSON };
    },
  };
}

const FHIR_JSON = 'application/fhir+json; charset=utf-8';
/** Rotation asked for a public client (docs/auth.md#client-secrets). */
export const PUBLIC_NO_SECRET = 'A public client has no secret';

/**
 * `POST /admin/projects/<projectId>/client/<clientId>/secret {gracePeriod?}` (docs/auth.md#client-secrets):
 * a new secret for a client application of that project; the previous ones stop working after
 * `gracePeriod` seconds (default 0: at once).
 */
export function clientSecretRoute(env: FeatureEnv): AppRoute {
  return {
    method: 'POST',
    url: '/admin/projects/:projectId/client/:clientId/secret',
    auth: true,
    async handler(req) {
      const { projectId, clientId } = req.params;
      req.ctx.repo.scope.checkAdminister(projectId);
      // Another project's client does not exist here (the project rule: storage/raw-resources.ts).
      const client = await readRawInProject<ClientApplication>(env.db, 'ClientApplication', clientId, projectId);
      if (!client) throw notFound();
      if ((client as { public?: boolean }).public === true) throw badRequest(PUBLIC_NO_SECRET);
      const body = req.body as { gracePeriod?: unknown } | undefined;
      const grace = body && typeof body === 'object' ? (body.gracePeriod ?? 0) : 0;
      if (typeof grace !== 'number' || !Number.isInteger(grace) || grace < 0) {
        throw badRequest('gracePeriod must be a non-negative integer (seconds)', 'gracePeriod');
      }
      const issued = await env.db.transaction(async (tx) => {
        // Earlier secrets end after the grace period (or sooner, when they expire sooner).
        await tx.query(
          `UPDATE auth_client_secret SET expires_at = LEAST(COALESCE(expires_at, 'infinity'), now() + make_interval(secs => $2))
           WHERE client_id = $1`,
          [clientId, grace],
        );
        await tx.query('DELETE FROM auth_client_secret WHERE client_id = $1 AND expires_at <= now()', [clientId]);
        return issueSecret(tx, clientId, env.config.clientSecretLifetime);
      });
      return { status: 200, body: { ...client, ...issued }, contentType: FHIR_JSON };
    },
  };
}

/** Stores a new secret's hash; returns the secret (shown once) and its expiry, if any. */
async function issueSecret(db: Queryable, clientId: string, lifetime: number): Promise<{ secret: string; secretExpiresAt?: string }> {
  const secret = randomSecret();
  const row = (
    await db.query<{ expires_at: Date | string | null }>(
      `INSERT INTO auth_client_secret (client_id, secret_hash, expires_at)
       VALUES ($1, $2, CASE WHEN $3::int > 0 THEN now() + make_interval(secs => $3::int) END) RETURNING expires_at`,
      [clientId, hashSecret(secret), lifetime],
    )
  ).rows[0];
  return row?.expires_at ? { secret, secretExpiresAt: new Date(row.expires_at).toISOString() } : { secret };
}
