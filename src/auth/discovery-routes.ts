import type { AppRoute } from '../core/app-route.js';
import type { AuthState } from './auth-state.js';
import { SIGNING_ALG } from './keys.js';

const GRANT_TYPES = ['authorization_code', 'refresh_token', 'client_credentials'];

/**
 * `/.well-known/jwks.json`, `/.well-known/smart-configuration` (also below the FHIR base),
 * `/.well-known/openid-configuration` (public).
 */
export function discoveryRoutes(state: AuthState): AppRoute[] {
  return [
    {
      method: 'GET',
      url: '/.well-known/jwks.json',
      auth: false,
      handler: async () => ({ status: 200, body: state.keys.jwks(), headers: { 'Cache-Control': 'public, max-age=300' } }),
    },
    { method: 'GET', url: '/.well-known/smart-configuration', auth: false, handler: async () => ({ status: 200, body: smart(state) }) },
    // SMART App Launch discovery is relative to the FHIR base (fhirclient, fhir-kit-client).
    { method: 'GET', url: '/fhir/R4/.well-known/smart-configuration', auth: false, handler: async () => ({ status: 200, body: smart(state) }) },
    { method: 'GET', url: '/.well-known/openid-configuration', auth: false, handler: async () => ({ status: 200, body: openid(state) }) },
  ];
}

function endpoints(state: AuthState) {
  const base = state.env.config.publicUrl;
  return {
    issuer: base,
    authorization_endpoint: `${base}/oauth2/authorize`,
    token_endpoint: `${base}/oauth2/token`,
    jwks_uri: `${base}/.well-known/jwks.json`,
    grant_types_supported: GRANT_TYPES,
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
    response_types_supported: ['code'],
    scopes_supported: ['openid', 'profile', 'offline_access'],
  };
}

function smart(state: AuthState) {
  return {
    ...endpoints(state),
    capabilities: ['client-confidential-symmetric', 'client-public', 'permission-offline', 'context-standalone-patient'],
  };
}

function openid(state: AuthState) {
  return {
    ...endpoints(state),
    subject_types_supported: ['public'],
    id_token_signing_alg_values_supported: [SIGNING_ALG],
    claims_supported: ['iss', 'sub', 'exp', 'iat', 'project', 'membership', 'profile', 'login_id', 'client_id', 'scope'],
  };
}
