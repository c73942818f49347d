import { resourceTypes } from './definitions.js';

/**
 * The SMART App Launch scope grammar (docs/auth.md#scopes), written once: what the token endpoint
 * grants (auth/granted-scopes.ts) and what each request is allowed (storage/access-rights.ts)
 * read scopes with the same parser.
 */

/** Identity, launch-context and refresh scopes Lattice knows (besides resource scopes). */
export const SPECIAL_SCOPES = ['openid', 'fhirUser', 'profile', 'launch', 'launch/patient', 'launch/encounter', 'offline_access', 'online_access'] as const;

/** SMART v2 permission letters, in the order the syntax requires them. */
export const PERMISSIONS = 'cruds';
const V1_PERMISSIONS: Record<string, string> = { read: 'rs', write: 'cud', '*': 'cruds' };

/** A SMART resource scope: `patient/Observation.read`, `user/*.cruds`, `patient/Observation.rs?category=laboratory`. */
export interface ResourceScope {
  raw: string;
  context: 'patient' | 'user' | 'system';
  /** A resource type or `*`. */
  type: string;
  /** Permission letters, a subset of `cruds` in that order. */
  permissions: string;
  /** The v2 search criteria after `?`, if any. */
  query?: string;
}

const RESOURCE_SCOPE = /^(patient|user|system)\/(\*|[A-Z][A-Za-z]{0,63})\.(read|write|\*|c?r?u?d?s?)(\?[^\s]+)?$/;

/** Parses a SMART v1 or v2 resource scope; undefined when the text is not one. */
export function parseResourceScope(raw: string): ResourceScope | undefined {
  const m = RESOURCE_SCOPE.exec(raw);
  if (!m) return undefined;
  const [, context, type, perms, query] = m;
  if (perms === '') return undefined;
  const v1 = V1_PERMISSIONS[perms];
  // Search criteria belong to the v2 syntax only (SMART App Launch 2, "finer-grained scopes").
  if (v1 && query) return undefined;
  if (type !== '*' && !resourceTypes().has(type)) return undefined;
  return { raw, context: context as ResourceScope['context'], type, permissions: v1 ?? perms, query: query?.slice(1) };
}
