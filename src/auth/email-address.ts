/**
 * The one normalisation of e-mail addresses (docs/invite.md#e-mail): trimmed and lower-cased,
 * as stored on User resources, looked up at login, throttled and claimed per project.
 * Undefined for anything that is not a non-empty string.
 */
export function normalizeEmail(email: unknown): string | undefined {
  if (typeof email !== 'string') return undefined;
  const normalized = email.trim().toLowerCase();
  return normalized === '' ? undefined : normalized;
}
