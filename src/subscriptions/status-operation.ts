import type { OperationDefinition, Subscription } from '@medplum/fhirtypes';
import type { Queryable } from '../core/database.js';
import type { Operation, OperationHandler } from '../core/operation.js';
import { badRequest } from '../fhir/outcome.js';
import { recentNotifications } from './store.js';

/** Most notifications one `$status` answer lists. */
export const MAX_STATUS_COUNT = 100;

const DEFINITION: OperationDefinition = {
  resourceType: 'OperationDefinition',
  id: 'Subscription-status',
  name: 'SubscriptionStatus',
  title: 'Recent notifications of a Subscription',
  status: 'active',
  kind: 'operation',
  code: 'status',
  description:
    "A Subscription's status and its most recent notifications (newest first): the written resource, the interaction, " +
    'the delivery state (pending, sent, skipped, failed), the attempts and the last error. Lattice-defined (docs/rest.md#subscriptions).',
  resource: ['Subscription'],
  system: false,
  type: false,
  instance: true,
  affectsState: false,
  parameter: [
    { name: '_count', use: 'in', min: 0, max: '1', type: 'integer', documentation: `Notifications to list (default 20, at most ${MAX_STATUS_COUNT}).` },
    { name: 'status', use: 'out', min: 1, max: '1', type: 'code' },
    { name: 'error', use: 'out', min: 0, max: '1', type: 'string' },
    {
      name: 'notification',
      use: 'out',
      min: 0,
      max: '*',
      part: [
        { name: 'sequence', use: 'out', min: 1, max: '1', type: 'string' },
        { name: 'focus', use: 'out', min: 1, max: '1', type: 'Reference' },
        { name: 'interaction', use: 'out', min: 1, max: '1', type: 'code' },
        { name: 'created', use: 'out', min: 1, max: '1', type: 'instant' },
        { name: 'state', use: 'out', min: 1, max: '1', type: 'code' },
        { name: 'attempts', use: 'out', min: 1, max: '1', type: 'integer' },
        { name: 'sent', use: 'out', min: 0, max: '1', type: 'instant' },
        { name: 'error', use: 'out', min: 0, max: '1', type: 'string' },
      ],
    },
  ],
};

/** `GET [base]/Subscription/<id>/$status` (docs/rest.md#subscriptions): for a caller who may read the Subscription. */
export function statusOperation(db: Queryable): Operation {
  const handler: OperationHandler = async (ctx, input: { _count?: number }, target) => {
    const count = input._count ?? 20;
    if (count < 0 || count > MAX_STATUS_COUNT) throw badRequest(`_count must be between 0 and ${MAX_STATUS_COUNT}`, '_count');
    const subscription = await ctx.repo.read<Subscription>('Subscription', target.id as string);
    const notifications = await recentNotifications(db, subscription.id as string, count);
    return {
      status: subscription.status,
      error: subscription.error,
      notification: notifications.map((n) => ({
        sequence: n.seq,
        focus: { reference: `${n.resourceType}/${n.resourceId}/_history/${n.versionId}` },
        interaction: n.interaction,
        created: n.createdAt,
        state: n.state,
        attempts: n.attempts,
        sent: n.sentAt,
        error: n.error,
      })),
    };
  };
  return { definition: structuredClone(DEFINITION), handler };
}
