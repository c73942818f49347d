import type { AccessPolicy } from '@medplum/fhirtypes';
import type { AuthInfo } from '../core/auth.js';
import type { AccessGrant, Interaction } from '../core/scope.js';
import { parseResourceScope } from '../fhir/smart-scopes.js';

/**
 * The caller's access rights beyond tenancy, as layers of grants (core/scope.ts `AccessGrant`):
 * its token's SMART scopes (docs/auth.md#scopes) and its membership's access policy — or, for a
 * member whose profile is a Patient and who has no policy, that Patient's compartment
 * (docs/auth.md#access-policies). A row must pass every layer: the effective rights are the
 * intersection. No layer at all = the membership's full rights (today's roles).
 */
export function accessLayersOf(auth: AuthInfo): AccessGrant[][] {
  const layers: AccessGrant[][] = [];
  const scopes = smartScopeGrants(auth.scopes ?? [], auth.patient);
  if (scopes) layers.push([...scopes, ...fhirUserGrant(auth)]);
  if (auth.accessPolicy) layers.push(policyGrants(auth.accessPolicy, auth));
  else {
    const own = patientProfileId(auth.profile);
    if (own) layers.push([{ resourceType: '*', interactions: ALL, compartment: own }]);
  }
  return layers;
}

const ALL: ReadonlySet<Interaction> = new Set(['c', 'r', 'u', 'd', 's']);
const READ: ReadonlySet<Interaction> = new Set(['r', 's']);

/** `Patient/<id>` → id. */
export function patientProfileId(profile: string | undefined): string | undefined {
  const m = /^Patient\/([A-Za-z0-9\-.]{1,64})$/.exec(profile ?? '');
  return m?.[1];
}

/**
 * The grants of a token's SMART resource scopes (parsed by fhir/smart-scopes.ts, the grammar the
 * token endpoint grants with); undefined when it has none (only `openid`, `launch/patient`, … or
 * no scope claim: the membership's rights stand). A `patient/` scope confines to the compartment
 * of the launch patient; without one it grants nothing. An unrecognised resource scope grants
 * nothing (it is still a resource scope: the token is restricted).
 */
export function smartScopeGrants(scopes: readonly string[], patient: string | undefined): AccessGrant[] | undefined {
  let any = false;
  const grants: AccessGrant[] = [];
  for (const scope of scopes) {
    if (!/^(patient|user|system)\//.test(scope)) continue;
    any = true;
    const parsed = parseResourceScope(scope);
    if (!parsed) continue;
    const grant: AccessGrant = { resourceType: parsed.type, interactions: new Set(parsed.permissions.split('') as Interaction[]) };
    if (parsed.context === 'patient') {
      if (!patient) continue;
      grant.compartment = patient;
    }
    if (parsed.query !== undefined) {
      if (parsed.type === '*') continue; // criteria are a search of one type
      grant.criteria = [...new URLSearchParams(parsed.query)];
    }
    grants.push(grant);
  }
  return any ? grants : undefined;
}

/**
 * The `fhirUser` scope is the permission to read the signed-in user's own resource (SMART App
 * Launch: "retrieve information about the current logged-in user"), so an app granted it reads
 * the profile its `fhirUser` claim names whatever its resource scopes (docs/auth.md#scopes) —
 * read only, that one resource; the membership's access policy still applies.
 */
function fhirUserGrant(auth: AuthInfo): AccessGrant[] {
  const m = /^([A-Za-z]+)\/([A-Za-z0-9\-.]{1,64})$/.exec(auth.profile ?? '');
  if (!m || !auth.userId || !auth.scopes?.includes('fhirUser')) return [];
  return [{ resourceType: m[1], interactions: new Set<Interaction>(['r']), criteria: [['_id', m[2]]] }];
}

/** Medplum's `AccessPolicy.resource.interaction` codes. */
const POLICY_INTERACTIONS: Record<string, Interaction> = {
  create: 'c',
  read: 'r',
  vread: 'r',
  history: 'r',
  update: 'u',
  delete: 'd',
  search: 's',
};

/**
 * The grants of an access policy (Medplum's AccessPolicy): one per `resource` entry —
 * `readonly` → read and search only, `interaction` → those, else all; `criteria`
 * (`Type?param=value…`, with `%patient` and `%profile`) → rows must match that search; the
 * policy's `compartment` (`Patient/<id>` or `%patient`) → rows must be in that compartment.
 * An entry whose criteria name another type, or whose variables cannot be filled, grants nothing.
 */
export function policyGrants(policy: AccessPolicy, auth: AuthInfo): AccessGrant[] {
  const patient = auth.patient ?? patientProfileId(auth.profile);
  const fill = (text: string): string | undefined => {
    let missing = false;
    const out = text.replace(/%(patient|profile)(\.id)?/g, (_all, name: string, idOnly: string | undefined) => {
      const reference = name === 'patient' ? (patient ? `Patient/${patient}` : undefined) : auth.profile;
      if (!reference) missing = true;
      return idOnly ? (reference ?? '').split('/')[1] ?? '' : (reference ?? '');
    });
    return missing ? undefined : out;
  };
  let compartment: string | undefined;
  const compartmentRef = policy.compartment?.reference;
  if (compartmentRef !== undefined) {
    const filled = fill(compartmentRef);
    const id = filled && /^Patient\//.test(filled) ? patientProfileId(filled) : undefined;
    if (!id) return []; // a compartment that cannot be named: nothing is in it
    compartment = id;
  }
  const grants: AccessGrant[] = [];
  for (const entry of policy.resource ?? []) {
    const resourceType = entry.resourceType;
    if (!resourceType) continue;
    let interactions: ReadonlySet<Interaction> = ALL;
    if (entry.interaction && entry.interaction.length > 0) {
      interactions = new Set(entry.interaction.map((i) => POLICY_INTERACTIONS[i]).filter((i): i is Interaction => i !== undefined));
    }
    if (entry.readonly) interactions = new Set([...interactions].filter((i) => READ.has(i)));
    const grant: AccessGrant = { resourceType, interactions };
    if (compartment) grant.compartment = compartment;
    if (entry.criteria) {
      const filled = fill(entry.criteria);
      const q = filled?.indexOf('?') ?? -1;
      if (!filled || q < 0 || filled.slice(0, q) !== resourceType || resourceType === '*') continue;
      grant.criteria = [...new URLSearchParams(filled.slice(q + 1))];
    }
    grants.push(grant);
  }
  return grants;
}
