import type { AuthInfo } from '../core/auth.js';
import type { FeatureEnv } from '../core/feature.js';
import type { ResourceRepository } from '../core/repository.js';
import type { AccessState } from './access-state.js';
import type { AccessTokens } from './access-token.js';
import type { KeyStore } from './keys.js';
import type { LoginThrottle } from './login-throttle.js';

/** What the auth routes share: the feature environment plus the feature's key store, tokens and throttle. */
export interface AuthState {
  env: FeatureEnv;
  keys: KeyStore;
  tokens: AccessTokens;
  throttle: LoginThrottle;
  /** What every token is checked against (membership, access policy): also the patient picker's caller. */
  access: AccessState;
  /** A repository scoped to a caller (the launch patient choice lists what the member sees). */
  repository(auth: AuthInfo): ResourceRepository;
}

/** Seconds a login may take to pick a profile (between /auth/login and /auth/profile). */
export const LOGIN_LIFETIME_SECONDS = 60 * 60;
/** Seconds an authorization code stays redeemable (single use). */
export const CODE_LIFETIME_SECONDS = 120;
/** Seconds a refresh token stays usable (each use rotates it). */
export const REFRESH_TOKEN_LIFETIME_SECONDS = 30 * 24 * 60 * 60;
