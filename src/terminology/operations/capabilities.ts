import type { OperationDefinition, TerminologyCapabilities, TerminologyCapabilitiesCodeSystem } from '@medplum/fhirtypes';
import type { RequestContext } from '../../core/context.js';
import { baseCodeSystems } from '../store/base-terminology.js';
import { builtinCodeSystems } from '../providers/builtin.js';
import { termContext } from '../engine/request-context.js';
import { visibleCodeSystems } from '../engine/resolve.js';
import type { TerminologyEnv } from '../types.js';
import { newestFirst } from '../versions.js';
import { Generations } from './generations.js';
import { heardStamp } from './answer-cache.js';

/** `$expand` inputs that choose the value set rather than shape its expansion. */
const NOT_EXPANSION_PARAMETERS = new Set(['url', 'valueSet', 'valueSetVersion', 'context', 'contextDirection']);

/** The server's identity, as the CapabilityStatement states it. */
export interface Software {
  name: string;
  version: string;
  releaseDate?: string;
}

/**
 * Statements as last built, by what decides them for a caller (its project, super-admin rights,
 * the base URL), each with the terminology stamp it was built under. Built for every request the
 * statement cost 30–45 ms (119 KB: every code system the caller can use, ~1,000 of them the R4
 * base) on an endpoint that needs no token; it is built again only after a terminology change
 * heard on any node (the stamp moves), never while changes are not heard.
 */
const kept = new Generations<{ stamp: number; body: TerminologyCapabilities }>(32);

/** {@link terminologyCapabilities}, kept while no terminology change is heard (see `kept`). */
export async function keptTerminologyCapabilities(
  env: TerminologyEnv,
  ctx: RequestContext,
  software: Software,
  definitions: OperationDefinition[],
): Promise<TerminologyCapabilities> {
  const stamp = await heardStamp(env, ctx.since);
  if (stamp === undefined) return terminologyCapabilities(env, ctx, software, definitions);
  const key = `${ctx.auth.projectId ?? ''}\u0000${ctx.auth.superAdmin ? 1 : 0}\u0000${ctx.fhirBaseUrl}`;
  const found = kept.get(key);
  if (found?.stamp === stamp) return found.body;
  const body = await terminologyCapabilities(env, ctx, software, definitions);
  kept.set(key, { stamp, body });
  return body;
}

/**
 * The TerminologyCapabilities statement (`GET [base]/metadata?mode=terminology`,
 * docs/terminology.md#terminologycapabilities), built from what really answers: the code
 * systems the caller can use (stored ones it sees, the base R4 ones and those built in), the inputs of the
 * registered `$expand`, and whether `$validate-code`, `$translate` and `$closure` are registered.
 */
export async function terminologyCapabilities(
  env: TerminologyEnv,
  ctx: RequestContext,
  software: Software,
  definitions: OperationDefinition[],
): Promise<TerminologyCapabilities> {
  const tc = await termContext(env, ctx, {});
  const systems = [...(await visibleCodeSystems(tc)), ...baseCodeSystems(), ...builtinCodeSystems()].filter((cs) => cs.content !== 'supplement');
  const byUrl = new Map<string, Set<string>>();
  for (const cs of systems) {
    const versions = byUrl.get(cs.url) ?? new Set<string>();
    if (cs.version !== undefined) versions.add(cs.version);
    byUrl.set(cs.url, versions);
  }
  const codeSystem: TerminologyCapabilitiesCodeSystem[] = [...byUrl]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([uri, versions]) => {
      const ordered = newestFirst([...versions].map((version) => ({ version, lastUpdated: '' }))).map((v) => v.version);
      return ordered.length > 0 ? { uri, version: ordered.map((code, i) => (i === 0 ? { code, isDefault: true } : { code })) } : { uri };
    });
  const operation = (resource: string, code: string) =>
    definitions.find((d) => d.code === code && (d.resource ?? []).includes(resource as never));
  const expand = operation('ValueSet', 'expand');
  return {
    resourceType: 'TerminologyCapabilities',
    url: `${ctx.fhirBaseUrl}/metadata?mode=terminology`,
    version: software.version,
    name: software.name,
    title: `${software.name} terminology capabilities`,
    status: 'active',
    date: new Date().toISOString(),
    kind: 'instance',
    software,
    implementation: { description: `${software.name} FHIR R4 terminology server`, url: ctx.fhirBaseUrl },
    lockedDate: false,
    codeSystem,
    ...(expand
      ? {
          expansion: {
            hierarchical: false,
            paging: true,
            incomplete: false,
            parameter: (expand.parameter ?? [])
              .filter((p) => p.use === 'in' && !NOT_EXPANSION_PARAMETERS.has(p.name))
              .map((p) => ({ name: p.name, ...(p.documentation ? { documentation: p.documentation } : {}) })),
          },
        }
      : {}),
    ...(operation('ValueSet', 'validate-code') ? { validateCode: { translations: false } } : {}),
    ...(operation('ConceptMap', 'translate') ? { translation: { needsMap: true } } : {}),
    closure: { translation: false },
  };
}
