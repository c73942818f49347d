import type { Resource, Subscription } from '@medplum/fhirtypes';
import type { AuthInfo } from '../core/auth.js';
import type { Queryable } from '../core/database.js';
import type { ResourceHook, ResourceRepository } from '../core/repository.js';
import { FhirError, badRequest, issue } from '../fhir/outcome.js';
import { announceCommit } from '../storage/change-feed.js';
import { checkEndpoint } from './address-guard.js';
import { authorClaims } from './author.js';
import { parseCriteria, type Criteria } from './criteria.js';
import { SUBSCRIPTIONS_CHANNEL, watchPayload, type SubscriptionRegistry } from './registry.js';
import { readSpec, type WriteInteraction } from './spec.js';
import { activeSubscriptions, countActive, dropSubscription, enqueue, OUTBOX_CHANNEL, saveSubscription } from './store.js';

/**
 * Most active Subscriptions of one project on one type: every write of the type runs one search
 * per Subscription in its transaction (docs/rest.md#subscriptions), so their number is bounded.
 */
export const MAX_PER_TYPE = 100;

/** Change-feed channel of websocket events: `<subscription id> <Type>/<id>/<version> <interaction>`. */
export const EVENTS_CHANNEL = 'lattice_subscription_events';

/** What the hooks need from the application (wired in app.ts before the repository exists). */
export interface SubscriptionHookDeps {
  registry: SubscriptionRegistry;
  /** Endpoints on private addresses allowed (`LATTICE_SUBSCRIPTION_ALLOW_PRIVATE`). */
  allowPrivate: boolean;
  /** A repository of `auth`; joined to `tx` when given (the write's own transaction). */
  repository(auth: AuthInfo, tx?: Queryable): ResourceRepository;
}

/**
 * The write hooks of Subscriptions (docs/rest.md#subscriptions): one checks a Subscription and
 * keeps its `subscription` row and the registry current; the other, taking part only in
 * writes of watched types, records a notification for every active Subscription of the
 * written resource's project whose criteria it matches — in the write's transaction (the
 * outbox), so a rolled-back write notifies nothing and a committed one is never lost.
 */
export function subscriptionHooks(deps: SubscriptionHookDeps): ResourceHook[] {
  const parsed = new Map<string, Criteria>();
  const criteriaOf = (text: string) => {
    let c = parsed.get(text);
    if (!c) {
      if (parsed.size > 10_000) parsed.clear();
      parsed.set(text, (c = parseCriteria(text)));
    }
    return c;
  };

  const subscriptionHook: ResourceHook = {
    types: ['Subscription'],
    async beforeWrite(resource, _previous, auth) {
      const subscription = resource as Subscription;
      const spec = readSpec(subscription);
      if (spec.endpoint && !deps.allowPrivate) await checkEndpoint(spec.endpoint);
      await checkCriteria(deps.repository(auth), spec);
      // R4: the client asks (`requested`), the server accepts what it can honour (`active`).
      if (subscription.status === 'requested' || subscription.status === 'active') {
        subscription.status = 'active';
        delete subscription.error;
      } else if (subscription.status !== 'off' && subscription.status !== 'error') {
        throw badRequest(`Subscription status '${String(subscription.status)}' is not one of requested, active, off, error`, 'Subscription.status');
      }
    },
    async afterWrite(tx, resource, _previous, auth) {
      const subscription = resource as Subscription;
      const projectId = subscription.meta?.project;
      if (!projectId) throw badRequest('A Subscription must belong to a project', 'Subscription.meta.project');
      const spec = readSpec(subscription);
      const entry = { id: subscription.id as string, active: subscription.status === 'active', projectId, resourceType: spec.resourceType };
      if (entry.active && (await countActive(tx, projectId, spec.resourceType, entry.id)) >= MAX_PER_TYPE) {
        throw new FhirError(400, [issue('too-costly', `A project may have at most ${MAX_PER_TYPE} active Subscriptions on ${spec.resourceType}`, 'Subscription.criteria')]);
      }
      await saveSubscription(tx, {
        ...entry,
        criteria: subscription.criteria,
        interactions: spec.interactions,
        channel: spec.channel,
        author: authorClaims(auth),
      });
      deps.registry.add(entry);
      await announceCommit(tx, SUBSCRIPTIONS_CHANNEL, watchPayload(entry));
    },
    async afterDelete(tx, previous) {
      await dropSubscription(tx, previous.id as string);
      const projectId = previous.meta?.project;
      if (projectId) await announceCommit(tx, SUBSCRIPTIONS_CHANNEL, watchPayload({ id: previous.id as string, active: false, projectId, resourceType: '-' }));
    },
  };

  const notify = async (tx: Queryable, resource: Resource, interaction: WriteInteraction, versionId: number) => {
    const projectId = resource.meta?.project;
    const type = resource.resourceType;
    if (!projectId || !deps.registry.watchesIn(projectId, type)) return;
    const candidates = (await activeSubscriptions(tx, projectId, type)).filter((s) => s.interactions.includes(interaction));
    if (candidates.length === 0) return;
    // Matched as the project sees its own data; what the author may read is decided at delivery.
    const repo = deps.repository({ projectId, superAdmin: false, projectAdmin: true }, tx);
    const matched: typeof candidates = [];
    for (const s of candidates) {
      const { params } = criteriaOf(s.criteria);
      if (params.length === 0 || (await matches(repo, type, resource.id as string, params))) matched.push(s);
    }
    const restHooks = matched.filter((s) => s.channel === 'rest-hook').map((s) => s.id);
    if (restHooks.length > 0) {
      await enqueue(tx, restHooks, type, resource.id as string, versionId, interaction);
      await announceCommit(tx, OUTBOX_CHANNEL, '1');
    }
    for (const s of matched.filter((m) => m.channel === 'websocket')) {
      await announceCommit(tx, EVENTS_CHANNEL, `${s.id} ${type}/${resource.id}/${versionId} ${interaction}`);
    }
  };

  const watchHook: ResourceHook = {
    watches: (type) => deps.registry.watches(type),
    async afterWrite(tx, resource, previous) {
      await notify(tx, resource, previous ? 'update' : 'create', Number(resource.meta?.versionId));
    },
    // Before the delete: the search index still holds the version that matched.
    async beforeDelete(previous, _auth, tx) {
      await notify(tx, previous, 'delete', Number(previous.meta?.versionId) + 1);
    },
  };

  return [subscriptionHook, watchHook];
}

/** Runs the criteria once as the writer: unknown parameters and malformed values are refused now, not at the first write. */
async function checkCriteria(repo: ResourceRepository, criteria: Criteria): Promise<void> {
  try {
    await repo.search({ resourceType: criteria.resourceType, params: [...criteria.params, ['_count', '1'], ['_total', 'none']] });
  } catch (err) {
    if (err instanceof FhirError && err.status === 400) {
      throw badRequest(`Invalid Subscription criteria: ${err.outcome.issue?.[0]?.details?.text ?? 'the search is not valid'}`, 'Subscription.criteria');
    }
    throw err;
  }
}

/** Does the stored resource `type/id` (as the write's transaction sees it) match the criteria? */
async function matches(repo: ResourceRepository, type: string, id: string, params: Array<[string, string]>): Promise<boolean> {
  try {
    const result = await repo.search({ resourceType: type, params: [...params, ['_id', id], ['_count', '1'], ['_total', 'none']] });
    return result.resources.length > 0;
  } catch (err) {
    // Criteria that no longer evaluate (e.g. a value set since deleted) match nothing; the write goes on.
    if (err instanceof FhirError && err.status < 500) return false;
    throw err;
  }
}
