-- Transactional e-mail outbox: a message is written in the transaction that decides to send
-- it (so a rolled-back invite sends nothing) and delivered later by src/email/sender.ts.
-- A sender claims due rows with FOR UPDATE SKIP LOCKED and leases them (`locked_until`), so
-- several API nodes never deliver the same message at the same time. Bodies are cleared once
-- a message is sent or given up (they may carry set-password links).
CREATE TABLE email_outbox (
  id text PRIMARY KEY,
  recipient text NOT NULL,
  subject text NOT NULL,
  text_body text NOT NULL,
  html_body text,
  created_at timestamptz NOT NULL DEFAULT now(),
  attempts integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz NOT NULL DEFAULT now(),
  locked_until timestamptz,
  sent_at timestamptz,
  failed_at timestamptz,
  last_error text
);
CREATE INDEX email_outbox_due ON email_outbox (next_attempt_at) WHERE sent_at IS NULL AND failed_at IS NULL;
