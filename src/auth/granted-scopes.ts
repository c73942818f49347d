import { PERMISSIONS, parseResourceScope, type ResourceScope, type SPECIAL_SCOPES } from '../fhir/smart-scopes.js';

/**
 * What a token is granted (docs/auth.md#granted-scopes): the requested scopes the caller may
 * have. Scopes of unknown syntax, scopes the client application is not registered for, and
 * scopes the grant or the membership cannot carry are left out; the token's `scope` claim and
 * the token response's `scope` say what remains. Enforcing a granted scope on each request is
 * src/storage/scope.ts's job, not this module's.
 */

/** What the issuer knows about the grant being made. */
export interface GrantInput {
  grantType: 'authorization_code' | 'refresh_token' | 'client_credentials';
  /** The requested scope (space-separated); undefined or empty = the default. */
  requested?: string;
  /** `ClientApplication.scope` of the client the token is issued to, when it has one. */
  clientScope?: string;
  /** On refresh: the scope granted before (a refresh may narrow it, never widen it). */
  previous?: string;
  memberType: 'User' | 'ClientApplication';
  /** The launch context's patient id, when there is one. */
  patient?: string;
  encounter?: string;
  /** True when an EHR launch (`launch=<id>`) was bound to the login. */
  launched?: boolean;
}

/** The granted scope (possibly empty), or an OAuth `invalid_scope` description. */
export type GrantResult = { scope: string } | { error: string };

/** Default scope of a user login that asks for none (what MedplumClient sends). */
const DEFAULT_USER_SCOPE = 'openid';

/**
 * Decides the granted scope (docs/auth.md#granted-scopes). Nothing requested → the client's
 * registered scope when it has one, else `openid` for people and nothing for client
 * credentials. The result is an error only when something was asked for and nothing of it can
 * be granted, or when resource scopes were asked for and none of them can be: a token must
 * never stand for more than was asked (a token without resource scopes acts with its
 * membership's rights).
 */
export function grantScopes(input: GrantInput): GrantResult {
  const explicit = splitScopes(input.requested);
  let requested = explicit.length > 0 ? explicit : splitScopes(input.previous ?? input.clientScope);
  if (requested.length === 0) {
    return { scope: input.grantType === 'client_credentials' ? '' : DEFAULT_USER_SCOPE };
  }
  if (input.previous !== undefined) requested = intersect(requested, splitScopes(input.previous));
  if (input.clientScope !== undefined) requested = intersect(requested, splitScopes(input.clientScope));
  const granted = requested.filter((s) => allowedFor(s, input));
  const askedResources = explicit.length > 0 ? explicit.some((s) => parseResourceScope(s)) : requested.some((s) => parseResourceScope(s));
  if (granted.length === 0) return { error: 'None of the requested scopes can be granted' };
  if (askedResources && !granted.some((s) => parseResourceScope(s))) {
    return { error: 'None of the requested resource scopes can be granted' };
  }
  return { scope: granted.join(' ') };
}

/** True when `scope` is among the granted scope string. */
export function hasScope(scope: string | undefined, wanted: string): boolean {
  return splitScopes(scope).includes(wanted);
}

/** True when the requested scope asks for a patient context (`launch/patient` or a `patient/` scope). */
export function wantsPatient(scope: string | undefined): boolean {
  return splitScopes(scope).some((s) => s === 'launch/patient' || s.startsWith('patient/'));
}

function splitScopes(scope: string | undefined): string[] {
  return [...new Set((scope ?? '').split(/\s+/).filter(Boolean))];
}

/** Whether this grant and membership can carry one scope (known syntax only). */
function allowedFor(scope: string, input: GrantInput): boolean {
  const resource = parseResourceScope(scope);
  const person = input.memberType === 'User' && input.grantType !== 'client_credentials';
  if (resource) {
    if (resource.context === 'system') return input.grantType === 'client_credentials';
    if (resource.context === 'user') return person;
    return input.patient !== undefined;
  }
  switch (scope as (typeof SPECIAL_SCOPES)[number]) {
    case 'openid':
    case 'fhirUser':
    case 'profile':
    case 'offline_access':
    case 'online_access':
      return person;
    case 'launch':
      return person && input.launched === true;
    case 'launch/patient':
      return person && input.patient !== undefined;
    case 'launch/encounter':
      return person && input.encounter !== undefined;
    default:
      return false;
  }
}

/**
 * The requested scopes narrowed to what an allowed list covers: a special scope must be listed
 * as such; a resource scope becomes its intersection with each allowed resource scope (so
 * `patient/*.read` under an allowance of `patient/Observation.rs` is granted as the latter).
 */
function intersect(requested: string[], allowed: string[]): string[] {
  const allowedResources = allowed.map(parseResourceScope).filter((s): s is ResourceScope => s !== undefined);
  const out: string[] = [];
  for (const scope of requested) {
    const resource = parseResourceScope(scope);
    if (!resource) {
      if (allowed.includes(scope)) out.push(scope);
      continue;
    }
    for (const limit of allowedResources) {
      const both = intersectResource(resource, limit);
      if (both && !out.includes(both)) out.push(both);
    }
  }
  return out;
}

function intersectResource(a: ResourceScope, b: ResourceScope): string | undefined {
  if (a.context !== b.context) return undefined;
  const type = a.type === '*' ? b.type : b.type === '*' || b.type === a.type ? a.type : undefined;
  if (!type) return undefined;
  const permissions = [...PERMISSIONS].filter((p) => a.permissions.includes(p) && b.permissions.includes(p)).join('');
  if (!permissions) return undefined;
  if (a.query && b.query && a.query !== b.query) return undefined;
  const query = a.query ?? b.query;
  const same = (s: ResourceScope) => s.type === type && s.permissions === permissions && s.query === query;
  if (same(a)) return a.raw;
  if (same(b)) return b.raw;
  return `${a.context}/${type}.${permissions}${query ? `?${query}` : ''}`;
}
