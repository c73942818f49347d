import { createHash, randomBytes } from 'node:crypto';

/**
 * An access token for the benchmark's super admin, obtained over HTTP like any client would:
 * `/auth/login` with a PKCE challenge, then the `authorization_code` grant.
 */
export async function benchToken(baseUrl: string, email = 'admin@example.com', password = 'admin-password-123'): Promise<string> {
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  const login = await fetch(`${baseUrl}/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password, codeChallenge: challenge, codeChallengeMethod: 'S256' }),
  });
  const { code } = (await login.json()) as { code?: string };
  if (!login.ok || !code) throw new Error(`login failed: ${login.status}`);
  const token = await fetch(`${baseUrl}/oauth2/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'authorization_code', code, code_verifier: verifier }),
  });
  const { access_token } = (await token.json()) as { access_token?: string };
  if (!token.ok || !access_token) throw new Error(`token exchange failed: ${token.status}`);
  return access_token;
}
