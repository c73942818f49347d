-- Login attempts are claimed before the password is checked (src/auth/login-throttle.ts): each
-- attempt writes its rows first, tagged with the attempt's id, and counts them with the others;
-- a success removes them. So parallel attempts cannot all slip past the limit.
ALTER TABLE auth_login_failure ADD COLUMN attempt text;
CREATE INDEX auth_login_failure_attempt ON auth_login_failure (attempt);
