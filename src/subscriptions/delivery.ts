import { createHmac } from 'node:crypto';
import type { Resource, Subscription } from '@medplum/fhirtypes';
import type { AuthInfo } from '../core/auth.js';
import type { ResourceRepository } from '../core/repository.js';
import { FhirError } from '../fhir/outcome.js';
import type { RestHookRequest } from './rest-hook.js';
import type { SubscriptionSpec, WriteInteraction } from './spec.js';

/** Re-checks stored author claims (membership, policy) as a request's token is checked; undefined = no longer allowed. */
export type Authorize = (claims: AuthInfo) => Promise<AuthInfo | undefined>;

/** Medplum's signature header: the HMAC-SHA256 of the body with the subscription-secret, hex. */
export const SIGNATURE_HEADER = 'X-Signature';
/** Medplum's header on a delete's notification: `Type/id` of the deleted resource. */
export const DELETED_HEADER = 'X-Medplum-Deleted-Resource';

/**
 * The version a notification is about, read as the Subscription's author at delivery time
 * (docs/rest.md#subscriptions): the written version, or for a delete the last version before
 * it. Undefined when the author may not read it now (another project is impossible: criteria
 * match only the Subscription's own project) — the notification is then skipped, not sent.
 */
export async function readForAuthor(
  repo: ResourceRepository,
  n: { resourceType: string; resourceId: string; versionId: number; interaction: WriteInteraction },
): Promise<Resource | undefined> {
  const version = n.interaction === 'delete' ? n.versionId - 1 : n.versionId;
  try {
    return await repo.readVersion(n.resourceType, n.resourceId, String(version));
  } catch (err) {
    if (err instanceof FhirError && err.status < 500) return undefined;
    throw err;
  }
}

/** The rest-hook POST of one notification: the Subscription's headers, the body its `payload` asks for, the signature. */
export function restHookRequest(spec: SubscriptionSpec, resource: Resource, interaction: WriteInteraction): RestHookRequest {
  const body = spec.withResource ? JSON.stringify(resource) : '';
  const headers: Record<string, string> = {};
  for (const [name, value] of spec.headers) headers[name] = value;
  if (spec.withResource) headers['Content-Type'] = 'application/fhir+json';
  if (spec.secret) headers[SIGNATURE_HEADER] = createHmac('sha256', spec.secret).update(body).digest('hex');
  if (interaction === 'delete') headers[DELETED_HEADER] = `${resource.resourceType}/${resource.id}`;
  return { endpoint: spec.endpoint as string, headers, body };
}

/** The Subscription as it is stored once delivery gave up: `error`, with what went wrong. */
export function inError(subscription: Subscription, error: string): Subscription {
  return { ...subscription, status: 'error', error: error.slice(0, 1000) };
}
