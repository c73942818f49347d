import type { Queryable } from '../core/database.js';
import type { WatchEntry } from './registry.js';
import type { ChannelType, WriteInteraction } from './spec.js';

/** Change-feed channel that wakes every node's sender once a write with notifications commits. */
export const OUTBOX_CHANNEL = 'lattice_subscription_outbox';

/** A row of `subscription` as the write hook keeps it. */
export interface SubscriptionRow {
  id: string;
  projectId: string;
  resourceType: string;
  criteria: string;
  interactions: WriteInteraction[];
  channel: ChannelType;
  active: boolean;
  /** The writer's claims (author.ts); undefined keeps the stored author (a write by the server itself). */
  author?: object;
}

/** Inside the Subscription's write: its row, replaced. */
export async function saveSubscription(tx: Queryable, row: SubscriptionRow): Promise<void> {
  await tx.query(
    `INSERT INTO subscription (id, project_id, resource_type, criteria, interactions, channel_type, active, author, next_attempt_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, now())
     ON CONFLICT (id) DO UPDATE SET project_id = $2, resource_type = $3, criteria = $4, interactions = $5, channel_type = $6,
       active = $7, author = coalesce($8::jsonb, subscription.author), next_attempt_at = now()`,
    [row.id, row.projectId, row.resourceType, row.criteria, row.interactions, row.channel, row.active, row.author ? JSON.stringify(row.author) : null],
  );
  // Notifications of a Subscription that is no longer active are not delivered.
  if (!row.active) await tx.query(`UPDATE subscription_notification SET state = 'failed', last_error = 'Subscription is not active' WHERE subscription_id = $1 AND state = 'pending'`, [row.id]);
}

/** Active Subscriptions of a project on a type other than `id` (the bound on matching work per write). */
export async function countActive(tx: Queryable, projectId: string, resourceType: string, id: string): Promise<number> {
  const res = await tx.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM subscription WHERE project_id = $1 AND resource_type = $2 AND active AND id <> $3',
    [projectId, resourceType, id],
  );
  return res.rows[0]?.n ?? 0;
}

/** Inside the Subscription's delete: its row and its notifications go. */
export async function dropSubscription(tx: Queryable, id: string): Promise<void> {
  await tx.query('DELETE FROM subscription WHERE id = $1', [id]);
}

/** The active Subscriptions of a project watching a type (inside the write: what it commits against). */
export async function activeSubscriptions(
  tx: Queryable,
  projectId: string,
  resourceType: string,
): Promise<Array<{ id: string; criteria: string; interactions: WriteInteraction[]; channel: ChannelType }>> {
  const res = await tx.query<{ id: string; criteria: string; interactions: WriteInteraction[]; channel_type: ChannelType }>(
    'SELECT id, criteria, interactions, channel_type FROM subscription WHERE project_id = $1 AND resource_type = $2 AND active ORDER BY id',
    [projectId, resourceType],
  );
  return res.rows.map((r) => ({ id: r.id, criteria: r.criteria, interactions: r.interactions, channel: r.channel_type }));
}

/** Inside the write: one pending notification per subscription in `ids`. */
export async function enqueue(tx: Queryable, ids: string[], resourceType: string, id: string, versionId: number, interaction: WriteInteraction): Promise<void> {
  await tx.query(
    `INSERT INTO subscription_notification (subscription_id, resource_type, resource_id, version_id, interaction)
     SELECT s, $2, $3, $4, $5 FROM unnest($1::text[]) WITH ORDINALITY AS u(s, n) ORDER BY n`,
    [ids, resourceType, id, versionId, interaction],
  );
}

/** Every active Subscription, for the registry (start, and after the listening connection came back). */
export async function loadWatchEntries(q: Queryable): Promise<WatchEntry[]> {
  const res = await q.query<{ id: string; project_id: string; resource_type: string }>('SELECT id, project_id, resource_type FROM subscription WHERE active');
  return res.rows.map((r) => ({ id: r.id, active: true, projectId: r.project_id, resourceType: r.resource_type }));
}

/** A subscription claimed for delivery. */
export interface Claimed {
  id: string;
  projectId: string;
  author: Record<string, unknown> | null;
}

/**
 * Claims up to `limit` subscriptions that have pending notifications and are due, for
 * `leaseMs`: rows another node is claiming are skipped (FOR UPDATE SKIP LOCKED), a leased one
 * is not due until its lease ends. One subscription's notifications are thus delivered by one
 * node at a time, in order.
 */
export async function claimSubscriptions(q: Queryable, limit: number, leaseMs: number, lease: string): Promise<Claimed[]> {
  const res = await q.query<{ id: string; project_id: string; author: Record<string, unknown> | null }>(
    `UPDATE subscription SET locked_until = now() + $2::int * interval '1 millisecond', lease = $3
     WHERE id IN (
       SELECT s.id FROM subscription s
       WHERE s.active AND s.next_attempt_at <= now() AND (s.locked_until IS NULL OR s.locked_until <= now())
         AND EXISTS (SELECT 1 FROM subscription_notification n WHERE n.subscription_id = s.id AND n.state = 'pending')
       ORDER BY s.next_attempt_at LIMIT $1
       FOR UPDATE SKIP LOCKED)
     RETURNING id, project_id, author`,
    [limit, leaseMs, lease],
  );
  return res.rows.map((r) => ({ id: r.id, projectId: r.project_id, author: r.author }));
}

/** A notification waiting for delivery. */
export interface PendingNotification {
  seq: string;
  resourceType: string;
  resourceId: string;
  versionId: number;
  interaction: WriteInteraction;
  attempts: number;
}

/** The oldest pending notifications of a subscription, in order. */
export async function pendingNotifications(q: Queryable, subscriptionId: string, limit: number): Promise<PendingNotification[]> {
  const res = await q.query<{ id: string; resource_type: string; resource_id: string; version_id: number; interaction: WriteInteraction; attempts: number }>(
    `SELECT seq::text AS id, resource_type, resource_id, version_id, interaction, attempts FROM subscription_notification
     WHERE subscription_id = $1 AND state = 'pending' ORDER BY seq LIMIT $2`,
    [subscriptionId, limit],
  );
  return res.rows.map((r) => ({ seq: r.id, resourceType: r.resource_type, resourceId: r.resource_id, versionId: r.version_id, interaction: r.interaction, attempts: r.attempts }));
}

/** Records the outcome of one attempt: `sent`, `skipped` or `failed` are final; `pending` is retried. */
export async function recordAttempt(q: Queryable, seq: string, state: 'sent' | 'skipped' | 'failed' | 'pending', error?: string): Promise<void> {
  await q.query(
    `UPDATE subscription_notification SET attempts = attempts + 1, state = $2, last_error = $3,
       sent_at = CASE WHEN $2 = 'sent' THEN now() END
     WHERE seq = $1::bigint`,
    [seq, state, error?.slice(0, 1000) ?? null],
  );
}

/** Ends a claim: the subscription is due again after `delayMs` (0: at once, when more is pending). */
export async function releaseSubscription(q: Queryable, id: string, lease: string, delayMs: number): Promise<void> {
  await q.query(
    `UPDATE subscription SET locked_until = NULL, lease = NULL, next_attempt_at = now() + $3::int * interval '1 millisecond'
     WHERE id = $1 AND lease = $2`,
    [id, lease, Math.round(delayMs)],
  );
}

/** Milliseconds until the next subscription with pending notifications is due (undefined when none). */
export async function nextDueInMs(q: Queryable): Promise<number | undefined> {
  const res = await q.query<{ ms: number | string | null }>(
    `SELECT extract(epoch FROM min(greatest(s.next_attempt_at, coalesce(s.locked_until, s.next_attempt_at))) - now()) * 1000 AS ms
     FROM subscription s WHERE s.active AND EXISTS (SELECT 1 FROM subscription_notification n WHERE n.subscription_id = s.id AND n.state = 'pending')`,
  );
  const ms = res.rows[0]?.ms;
  return ms === null || ms === undefined ? undefined : Math.max(0, Number(ms));
}

/** Drops finished notifications older than `keepMs`. */
export async function pruneNotifications(q: Queryable, keepMs: number): Promise<void> {
  await q.query(`DELETE FROM subscription_notification WHERE state <> 'pending' AND created_at < now() - $1::bigint * interval '1 millisecond'`, [keepMs]);
}

/** A notification as `$status` shows it. */
export interface NotificationRecord {
  seq: string;
  resourceType: string;
  resourceId: string;
  versionId: number;
  interaction: string;
  createdAt: string;
  state: string;
  attempts: number;
  sentAt?: string;
  error?: string;
}

/** The most recent notifications of a subscription, newest first. */
export async function recentNotifications(q: Queryable, subscriptionId: string, limit: number): Promise<NotificationRecord[]> {
  const res = await q.query<{
    id: string; resource_type: string; resource_id: string; version_id: number; interaction: string;
    created_at: Date | string; state: string; attempts: number; sent_at: Date | string | null; last_error: string | null;
  }>(
    `SELECT seq::text AS id, resource_type, resource_id, version_id, interaction, created_at, state, attempts, sent_at, last_error
     FROM subscription_notification WHERE subscription_id = $1 ORDER BY seq DESC LIMIT $2`,
    [subscriptionId, limit],
  );
  const iso = (v: Date | string) => new Date(v).toISOString();
  return res.rows.map((r) => ({
    seq: r.id,
    resourceType: r.resource_type,
    resourceId: r.resource_id,
    versionId: r.version_id,
    interaction: r.interaction,
    createdAt: iso(r.created_at),
    state: r.state,
    attempts: r.attempts,
    ...(r.sent_at ? { sentAt: iso(r.sent_at) } : {}),
    ...(r.last_error ? { error: r.last_error } : {}),
  }));
}

/** The stored author claims of a subscription (undefined when it has none or is gone). */
export async function subscriptionAuthor(q: Queryable, id: string): Promise<Record<string, unknown> | undefined> {
  const res = await q.query<{ author: Record<string, unknown> | null }>('SELECT author FROM subscription WHERE id = $1 AND active', [id]);
  return res.rows[0]?.author ?? undefined;
}
