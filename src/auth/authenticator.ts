import type { AuthInfo, Authenticator } from '../core/auth.js';
import { unauthorized } from '../fhir/outcome.js';
import type { AccessState } from './access-state.js';
import type { AccessTokens } from './access-token.js';

/**
 * The bearer-token authenticator the HTTP server is built with: `Authorization:
 * Bearer <JWT>` → AuthInfo, else 401 `Unauthorized` with `WWW-Authenticate: Bearer`.
 */
export function bearerAuthenticator(tokens: AccessTokens, access: AccessState): Authenticator {
  /**
   * The last `Authorization` header verified on each connection, with what its token stands for
   * until it expires: the next request on the connection with the same header (a client sends
   * its token again and again) is not parsed and looked up again. Only the token's verification
   * is skipped — its expiry is checked here, and the membership, login and policy checks
   * (`access.authorize`) run for every request.
   */
  const lastOn = new WeakMap<object, { header: string; auth: AuthInfo; expiresAt: number }>();
  return {
    async authenticate(headers, since, connection): Promise<AuthInfo> {
      const header = headers.authorization ?? '';
      const last = connection === undefined ? undefined : lastOn.get(connection);
      let auth: AuthInfo | undefined;
      if (last !== undefined && last.header === header && last.expiresAt > Date.now()) auth = last.auth;
      else {
        const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
        if (!m) throw unauthorized();
        const verified = await tokens.verified(m[1]);
        if (verified && connection !== undefined) lastOn.set(connection, { header, auth: verified.auth, expiresAt: verified.expiresAt });
        auth = verified?.auth;
      }
      // A valid signature is not enough: the membership may be gone or demoted, the login revoked.
      const authorized = auth && (await access.authorize(auth, since));
      if (!authorized) throw unauthorized();
      return authorized;
    },
  };
}
