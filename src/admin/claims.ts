import type { ProjectMembership, Resource, User } from '@medplum/fhirtypes';
import { normalizeEmail as normalizeLoginEmail, splitReference } from '../auth/accounts.js';
import { FhirError, issue } from '../fhir/outcome.js';
import type { Queryable } from '../storage/database.js';
import type { ResourceHook } from '../storage/resource-hooks.js';

/** Contract texts (behavior.md §6) of the conflicts a claim can report. */
export const ALREADY_MEMBER = 'User is already a member of this project';
export const EXTERNAL_ID_EXISTS = 'External ID already exists in this project';

/**
 * A uniqueness claim was lost to another write (committed, or in flight and then committed).
 * It is a 409 on its own; the invite retries its whole transaction on it, because after the
 * winner committed, a fresh attempt sees the winner's rows and answers precisely.
 */
export class ClaimConflict extends FhirError {
  constructor(text: string) {
    super(409, [issue('conflict', text)]);
  }
}

/** The id of a `Type/<id>` reference, or undefined (also when it is of another type). */
export function referenceId(reference: string | undefined, type: string): string | undefined {
  const parts = splitReference(reference);
  return parts && parts[0] === type ? parts[1] : undefined;
}

/**
 * Keeps `membership_claim` in step with every ProjectMembership write (and with the e-mail of
 * a member's User), in the write's transaction; a lost claim throws ClaimConflict and the
 * whole write rolls back.
 */
export function claimsHook(): ResourceHook {
  return {
    types: ['User', 'ProjectMembership'],
    async afterWrite(tx, resource) {
      if (resource.resourceType === 'User') await followUserEmail(tx, resource);
      else if (resource.resourceType === 'ProjectMembership') await claimMembership(tx, resource);
    },
    async afterDelete(tx, previous: Resource) {
      if (previous.resourceType === 'ProjectMembership') {
        await tx.query('DELETE FROM membership_claim WHERE membership_id = $1', [previous.id]);
      }
    },
  };
}

/** A changed e-mail moves the user's membership claims along (and may collide there). */
async function followUserEmail(tx: Queryable, user: User): Promise<void> {
  try {
    await tx.query('UPDATE membership_claim SET email = $2 WHERE user_ref = $1 AND email IS DISTINCT FROM $2', [
      `User/${user.id}`,
      normalizeEmail(user.email) ?? null,
    ]);
  } catch (err) {
    if ((err as { code?: string }).code === '23505') throw new ClaimConflict(ALREADY_MEMBER);
    throw err;
  }
}

async function claimMembership(tx: Queryable, membership: ProjectMembership): Promise<void> {
  await tx.query('DELETE FROM membership_claim WHERE membership_id = $1', [membership.id]);
  const projectId = referenceId(membership.project?.reference, 'Project');
  const userRef = membership.user?.reference;
  if (!projectId || !userRef) return;
  const userId = referenceId(userRef, 'User');
  const email = userId ? await userEmail(tx, userId) : undefined;
  const externalId = membership.externalId || null;
  const won = await tx.query(
    `INSERT INTO membership_claim (membership_id, project_id, user_ref, email, external_id)
     VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING RETURNING membership_id`,
    [membership.id, projectId, userRef, email ?? null, externalId],
  );
  if (won.rows.length > 0) return;
  // Lost: name the conflict. Same user or same e-mail → already a member; else the external id.
  const rival = await tx.query(
    `SELECT 1 FROM membership_claim WHERE project_id = $1 AND membership_id <> $4
       AND (user_ref = $2 OR email = $3)`,
    [projectId, userRef, email ?? null, membership.id],
  );
  throw new ClaimConflict(rival.rows.length > 0 || !externalId ? ALREADY_MEMBER : EXTERNAL_ID_EXISTS);
}

async function userEmail(tx: Queryable, userId: string): Promise<string | undefined> {
  const res = await tx.query<{ email: string | null }>(
    `SELECT lower(trim(content::jsonb->>'email')) AS email FROM resource
     WHERE resource_type = 'User' AND id = $1 AND NOT deleted`,
    [userId],
  );
  return res.rows[0]?.email ?? undefined;
}

/** Trimmed, lower-cased e-mail (as login looks it up); undefined when empty or not a string. */
export function normalizeEmail(email: unknown): string | undefined {
  return typeof email === 'string' ? normalizeLoginEmail(email) || undefined : undefined;
}

/**
 * Claims memberships written before the hook was installed (e.g. the super admin's, created
 * at first start by the auth feature, which installs before admin). Idempotent; an anti-join.
 * Rows that would collide are left unclaimed (they predate the constraint).
 */
export async function backfillClaims(db: Queryable): Promise<void> {
  await db.query(
    `INSERT INTO membership_claim (membership_id, project_id, user_ref, email, external_id)
     SELECT m.id, split_part(c->'project'->>'reference', '/', 2), c->'user'->>'reference',
            (SELECT lower(trim(u.content::jsonb->>'email')) FROM resource u
              WHERE u.resource_type = 'User' AND NOT u.deleted
                AND 'User/' || u.id = c->'user'->>'reference'),
            nullif(c->>'externalId', '')
     FROM (SELECT id, content::jsonb AS c FROM resource WHERE resource_type = 'ProjectMembership' AND NOT deleted AND version_id > 0) m
     WHERE c->'project'->>'reference' LIKE 'Project/%' AND c->'user'->>'reference' IS NOT NULL
       AND NOT EXISTS (SELECT 1 FROM membership_claim x WHERE x.membership_id = m.id)
     ON CONFLICT DO NOTHING`,
  );
}
