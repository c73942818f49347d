import type { AppRoute } from '../core/app-route.js';
import type { AuthInfo, Authenticator } from '../core/auth.js';
import type { ResourceRepository } from '../core/repository.js';
import type { FeatureEnv } from '../core/feature.js';
import { AccessState } from './access-state.js';
import { AccessTokens } from './access-token.js';
import type { AuthState } from './auth-state.js';
import { bearerAuthenticator } from './authenticator.js';
import { bootstrapSuperAdmin } from './bootstrap.js';
import { clientRoute, clientSecretRoute } from './client-route.js';
import { discoveryRoutes } from './discovery-routes.js';
import { launchRoutes } from './launch-routes.js';
import { KeyStore } from './keys.js';
import { loginRoutes } from './login-routes.js';
import { LoginThrottle } from './login-throttle.js';
import { authorizeRoute } from './authorize-page.js';
import { tokenRoute } from './token-route.js';

/** What the auth feature provides to the application. */
export interface AuthFeature {
  /** The bearer-token authenticator: the only one the HTTP server can be built with. */
  authenticator: Authenticator;
  /** Login, token, discovery, authorize and client-application routes. */
  routes: AppRoute[];
  /**
   * Checks stored claims as a request's token is checked (membership, demotion, profile, login)
   * and adds the membership's access policy: background work done on a caller's behalf
   * (Subscription notifications) uses it. Undefined: no longer allowed.
   */
  authorize: (auth: AuthInfo) => Promise<AuthInfo | undefined>;
}

/**
 * Wires authentication: the signing keys (made on first start), the super admin (first
 * start), the bearer authenticator and the login, token, discovery and client routes. The
 * account write hooks are part of the repository from the start (`authHooks`, app.ts).
 */
export async function installAuth(env: FeatureEnv, repository: (auth: AuthInfo) => ResourceRepository): Promise<AuthFeature> {
  const keys = await KeyStore.open(env.db);
  const tokens = new AccessTokens(
    keys,
    () => env.config.publicUrl,
    () => env.config.accessTokenLifetime,
  );
  const access = new AccessState(env.db);
  const state: AuthState = { env, keys, tokens, throttle: new LoginThrottle(env.db), repository, access };
  await bootstrapSuperAdmin(env);
  await access.start();
  env.onClose(() => access.stop());
  return {
    authenticator: bearerAuthenticator(tokens, access),
    authorize: (auth) => access.authorize(auth),
    routes: [...loginRoutes(state), tokenRoute(state), authorizeRoute(state), ...discoveryRoutes(state), ...launchRoutes(state), clientRoute(env), clientSecretRoute(env)],
  };
}
