import type { AuthInfo, Authenticator } from '../core/auth.js';
import { unauthorized } from '../fhir/outcome.js';
import type { AccessState } from './access-state.js';
import type { AccessTokens } from './access-token.js';

/**
 * The bearer-token authenticator the HTTP server is built with: `Authorization:
 * Bearer <JWT>` → AuthInfo, else 401 `Unauthorized` with `WWW-Authenticate: Bearer`.
 */
export function bearerAuthenticator(tokens: AccessTokens, access: AccessState): Authenticator {
  return {
    async authenticate(headers, since): Promise<AuthInfo> {
      const m = /^Bearer\s+(\S+)\s*$/i.exec(headers.authorization ?? '');
      if (!m) throw unauthorized();
      const auth = await tokens.verify(m[1]);
      // A valid signature is not enough: the membership may be gone or demoted, the login revoked.
      const authorized = auth && (await access.authorize(auth, since));
      if (!authorized) throw unauthorized();
      return authorized;
    },
  };
}
