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
    userinfo_endpoint: `${base}/oauth2/userinfo`,
    // What grantScopes (granted-scopes.ts) can grant; resource scopes follow the SMART v1/v2 syntax.
    scopes_supported: [
      'openid',
      'fhirUser',
      'profile',
      'launch',
      'launch/patient',
      'launch/encounter',
      'offline_access',
      'online_access',
      'patient/*.read',
      'patient/*.rs',
      'user/*.read',
      'user/*.cruds',
      'system/*.read',
      'system/*.cruds',
    ],
  };
}

/**
 * SMART capabilities (SMART App Launch 2, conformance): only what works — see
 * docs/auth.md#discovery for what each one stands for here.
 */
const CAPABILITIES = [
  'launch-standalone',
  'launch-ehr',
  'client-public',
  'client-confidential-symmetric',
  'sso-openid-connect',
  'context-standalone-patient',
  'context-ehr-patient',
  'context-ehr-encounter',
  'permission-offline',
  'permission-patient',
  'permission-user',
  'permission-v1',
  'permission-v2',
];

function smart(state: AuthState) {
  return { ...endpoints(state), capabilities: CAPABILITIES };
}

function openid(state: AuthState) {
  return {
    ...endpoints(state),
    subject_types_supported: ['public'],
    id_token_signing_alg_values_supported: [SIGNING_ALG],
    claims_supported: ['iss', 'sub', 'aud', 'exp', 'iat', 'nonce', 'fhirUser', 'name', 'given_name', 'family_name', 'email'],
  };
}
