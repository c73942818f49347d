import type { Feature } from '../services.js';
import { AccessTokens } from './access-token.js';
import type { AuthState } from './auth-state.js';
import { bearerAuthenticator } from './authenticator.js';
import { bootstrapSuperAdmin } from './bootstrap.js';
import { clientRoute } from './client-route.js';
import { discoveryRoutes } from './discovery-routes.js';
import { KeyStore } from './keys.js';
import { loginRoutes } from './login-routes.js';
import { LoginThrottle } from './login-throttle.js';
import { authorizeRoute } from './authorize-page.js';
import { registerAuthHooks } from './resource-hooks.js';
import { tokenRoute } from './token-route.js';

/**
 * Wires authentication: repository hooks for the account resources, the signing keys (made
 * on first start), the super admin (first start), the bearer authenticator and the login,
 * token, discovery and client routes.
 */
export const installAuth: Feature = async (services, routes) => {
  registerAuthHooks(services.hooks);
  const keys = await KeyStore.open(services.db);
  const tokens = new AccessTokens(
    keys,
    () => services.config.publicUrl,
    () => services.config.accessTokenLifetime,
  );
  const state: AuthState = { services, keys, tokens, throttle: new LoginThrottle(services.db) };
  await bootstrapSuperAdmin(services);
  services.authenticator = bearerAuthenticator(tokens);
  routes.push(...loginRoutes(state), tokenRoute(state), authorizeRoute(state), ...discoveryRoutes(state), clientRoute(services));
};
