-- Subscriptions (src/subscriptions, docs/rest.md#subscriptions). `subscription` mirrors what
-- delivery needs of each Subscription resource (written by its write hook, in the same
-- transaction) plus the author the notifications are read as, and the per-subscription
-- delivery lease: a node claims a subscription with pending notifications (FOR UPDATE SKIP
-- LOCKED, then `locked_until`), so its notifications go out in order and from one node.
CREATE TABLE subscription (
  id text PRIMARY KEY,
  project_id text NOT NULL,
  resource_type text NOT NULL,
  criteria text NOT NULL,
  interactions text[] NOT NULL,
  channel_type text NOT NULL,
  active boolean NOT NULL,
  author jsonb,
  next_attempt_at timestamptz NOT NULL DEFAULT now(),
  locked_until timestamptz,
  lease text
);
CREATE INDEX subscription_watch ON subscription (project_id, resource_type) WHERE active;

-- The outbox: one row per matching write and rest-hook subscription, inserted in the write's
-- transaction (a rolled-back write notifies nothing). `seq` orders one subscription's
-- notifications; state: pending, sent, skipped (its author may not read the resource), failed.
CREATE TABLE subscription_notification (
  seq bigserial PRIMARY KEY,
  subscription_id text NOT NULL REFERENCES subscription (id) ON DELETE CASCADE,
  resource_type text NOT NULL,
  resource_id text NOT NULL,
  version_id integer NOT NULL,
  interaction text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  attempts integer NOT NULL DEFAULT 0,
  state text NOT NULL DEFAULT 'pending',
  sent_at timestamptz,
  last_error text
);
CREATE INDEX subscription_notification_by_subscription ON subscription_notification (subscription_id, seq);
CREATE INDEX subscription_notification_pending ON subscription_notification (subscription_id, seq) WHERE state = 'pending';
