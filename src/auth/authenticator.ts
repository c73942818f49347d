import type { AuthInfo } from '../context.js';
import { unauthorized } from '../fhir/outcome.js';
import type { Authenticator } from '../services.js';
import type { AccessTokens } from './access-token.js';

/**
 * The bearer-token authenticator installed as `services.authenticator`: `Authorization:
 * Bearer <JWT>` → AuthInfo, else 401 `Unauthorized` with `WWW-Authenticate: Bearer`.
 */
export function bearerAuthenticator(tokens: AccessTokens): Authenticator {
  return {
    async authenticate(headers): Promise<AuthInfo> {
      const m = /^Bearer\s+(\S+)\s*$/i.exec(headers.authorization ?? '');
      if (!m) throw unauthorized();
      const auth = await tokens.verify(m[1]);
      if (!auth) throw unauthorized();
      return auth;
    },
  };
}
