import type { ClientApplication, OperationOutcomeIssue } from '@medplum/fhirtypes';
import { isObject } from '../fhir/json.js';
import { FhirError, issue } from '../fhir/outcome.js';

/**
 * The body of `POST /admin/projects/<projectId>/client` (docs/auth.md#client-applications):
 * `name`, and optionally `description`, `redirectUri`/`redirectUris`, `scope` (the scopes the
 * client may be granted, space-separated: stored as `ClientApplication.scope`, applied by the
 * token endpoint) and `public` (a PKCE-only client without a secret). Every problem goes into
 * one 400 OperationOutcome, each issue with its `expression`.
 */

/** The ClientApplication content a valid body asks for (without id, meta or secret). */
export type ClientFields = Pick<ClientApplication, 'name' | 'description' | 'redirectUri' | 'redirectUris'> & {
  /** Space-separated scopes the client may be granted (Lattice's element, docs/auth.md#client-applications). */
  scope?: string;
  /** True for a public client: no secret, authorization code with PKCE only. */
  public?: boolean;
};

/** Identity and launch scopes a client may be granted besides resource scopes. */
const NAMED_SCOPES = new Set(['openid', 'fhirUser', 'profile', 'email', 'offline_access', 'online_access', 'launch', 'launch/patient', 'launch/encounter']);
/** SMART v1 (`.read`, `.write`, `.*`) and v2 (`.cruds` in order, each at most once) resource scopes, with v2 query. */
const RESOURCE_SCOPE = /^(patient|user|system)\/(\*|[A-Z][A-Za-z]+)\.(read|write|\*|c?r?u?d?s?)(\?[\x21\x23-\x5B\x5D-\x7E]+)?$/;

export function parseClientRequest(body: unknown): ClientFields {
  const b = isObject(body) ? body : {};
  const issues: OperationOutcomeIssue[] = [];
  const name = typeof b.name === 'string' ? b.name.trim() : '';
  if (name === '') issues.push(issue('invalid', 'Missing name', 'name'));
  const fields: ClientFields = { name };

  if (b.description !== undefined) {
    if (typeof b.description === 'string') fields.description = b.description;
    else issues.push(issue('invalid', 'description must be a string', 'description'));
  }
  if (b.redirectUri !== undefined) {
    if (isRedirectUri(b.redirectUri)) fields.redirectUri = b.redirectUri;
    else issues.push(issue('invalid', `Invalid redirect URI: ${shown(b.redirectUri)}`, 'redirectUri'));
  }
  if (b.redirectUris !== undefined) {
    if (!Array.isArray(b.redirectUris)) issues.push(issue('invalid', 'redirectUris must be an array of URIs', 'redirectUris'));
    else {
      b.redirectUris.forEach((uri, i) => {
        if (!isRedirectUri(uri)) issues.push(issue('invalid', `Invalid redirect URI: ${shown(uri)}`, `redirectUris[${i}]`));
      });
      fields.redirectUris = [...new Set(b.redirectUris as string[])];
    }
  }
  if (b.scope !== undefined) {
    const scopes = typeof b.scope === 'string' ? b.scope.split(/\s+/).filter(Boolean) : undefined;
    if (!scopes) issues.push(issue('invalid', 'scope must be a string of space-separated scopes', 'scope'));
    else {
      for (const scope of scopes) if (!isScope(scope)) issues.push(issue('invalid', `Invalid scope: ${scope}`, 'scope'));
      if (scopes.length > 0) fields.scope = [...new Set(scopes)].join(' ');
    }
  }
  if (b.public !== undefined) {
    if (typeof b.public === 'boolean') fields.public = b.public;
    else issues.push(issue('invalid', 'public must be a boolean', 'public'));
  }
  if (issues.length > 0) throw new FhirError(400, issues);
  return fields;
}

/**
 * A redirect URI as OAuth 2.0 wants it: absolute, no fragment; `https`, `http` (e.g. loopback
 * for development) or a private-use scheme of a native app (`com.example.app:/callback`).
 */
function isRedirectUri(value: unknown): value is string {
  if (typeof value !== 'string' || value.length > 2048 || /\s/.test(value)) return false;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return false;
  }
  if (url.hash !== '' || value.includes('#')) return false;
  if (url.protocol === 'http:' || url.protocol === 'https:') return url.hostname !== '';
  return !['javascript:', 'data:', 'file:', 'blob:', 'about:'].includes(url.protocol);
}

/** A value as the error text shows it (strings as they are, anything else as JSON). */
function shown(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value) ?? String(value);
}

function isScope(scope: string): boolean {
  if (NAMED_SCOPES.has(scope)) return true;
  const m = RESOURCE_SCOPE.exec(scope);
  return m !== null && m[3] !== ''; // `.` with no permission letter is not a scope
}
