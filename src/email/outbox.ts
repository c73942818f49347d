import { randomUUID } from 'node:crypto';
import type { Queryable } from '../core/database.js';
import { announceCommit } from '../storage/change-feed.js';

/** Change-feed channel that wakes every node's sender once an enqueuing transaction commits. */
export const OUTBOX_CHANNEL = 'lattice_email_outbox';

/** A message as written by the feature that decides to send it. */
export interface EmailMessage {
  to: string;
  subject: string;
  text: string;
  html?: string;
}

/** A message claimed for delivery. */
export interface OutboxMessage extends EmailMessage {
  id: string;
  /** Delivery attempts including the current one. */
  attempts: number;
}

/**
 * Writes a message to the outbox inside the caller's transaction: it exists (and will be
 * delivered) exactly when that transaction commits. Its announcement (storage/change-feed.ts) is
 * heard at commit too, so senders wake right after the commit, on every API node.
 */
export async function enqueueEmail(tx: Queryable, message: EmailMessage): Promise<string> {
  const id = randomUUID();
  await tx.query('INSERT INTO email_outbox (id, recipient, subject, text_body, html_body) VALUES ($1, $2, $3, $4, $5)', [
    id,
    message.to,
    message.subject,
    message.text,
    message.html ?? null,
  ]);
  await announceCommit(tx, OUTBOX_CHANNEL, id);
  return id;
}

/**
 * Claims up to `limit` due messages for `leaseMs`: rows locked by another node's claim are
 * skipped (FOR UPDATE SKIP LOCKED) and a leased row is not due again until the lease ends,
 * so two nodes never deliver the same message concurrently. One statement = one short
 * transaction; no transaction stays open while talking to the mail server.
 */
export async function claimDue(q: Queryable, limit: number, leaseMs: number): Promise<OutboxMessage[]> {
  const res = await q.query<{
    id: string;
    recipient: string;
    subject: string;
    text_body: string;
    html_body: string | null;
    attempts: number;
  }>(
    `UPDATE email_outbox SET attempts = attempts + 1, locked_until = now() + $2::int * interval '1 millisecond'
     WHERE id IN (
       SELECT id FROM email_outbox
       WHERE sent_at IS NULL AND failed_at IS NULL AND next_attempt_at <= now()
         AND (locked_until IS NULL OR locked_until <= now())
       ORDER BY next_attempt_at, id LIMIT $1
       FOR UPDATE SKIP LOCKED)
     RETURNING id, recipient, subject, text_body, html_body, attempts`,
    [limit, leaseMs],
  );
  return res.rows.map((r) => ({
    id: r.id,
    to: r.recipient,
    subject: r.subject,
    text: r.text_body,
    html: r.html_body ?? undefined,
    attempts: r.attempts,
  }));
}

/** Marks a message delivered and drops its body (it may hold a set-password link). */
export async function markSent(q: Queryable, id: string): Promise<void> {
  await q.query(
    `UPDATE email_outbox SET sent_at = now(), locked_until = NULL, last_error = NULL, text_body = '', html_body = NULL
     WHERE id = $1`,
    [id],
  );
}

/**
 * Records a failed attempt: due again after `retryInMs`, or given up (`failed_at`, body
 * dropped) when `giveUp` is set.
 */
export async function markFailed(q: Queryable, id: string, error: string, retryInMs: number, giveUp: boolean): Promise<void> {
  await q.query(
    `UPDATE email_outbox SET locked_until = NULL, last_error = $2,
       next_attempt_at = now() + $3::int * interval '1 millisecond',
       failed_at = CASE WHEN $4::boolean THEN now() END,
       text_body = CASE WHEN $4::boolean THEN '' ELSE text_body END,
       html_body = CASE WHEN $4::boolean THEN NULL ELSE html_body END
     WHERE id = $1`,
    [id, error.slice(0, 1000), Math.round(retryInMs), giveUp],
  );
}

/** Milliseconds until the next pending message is due (undefined when none is pending). */
export async function nextDueInMs(q: Queryable): Promise<number | undefined> {
  const res = await q.query<{ ms: number | string | null }>(
    `SELECT extract(epoch FROM min(greatest(next_attempt_at, coalesce(locked_until, next_attempt_at))) - now()) * 1000 AS ms
     FROM email_outbox WHERE sent_at IS NULL AND failed_at IS NULL`,
  );
  const ms = res.rows[0]?.ms;
  return ms === null || ms === undefined ? undefined : Math.max(0, Number(ms));
}
