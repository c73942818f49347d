import type { Bundle, Resource } from '@medplum/fhirtypes';
import { isResourceType } from '../fhir/definitions.js';
import { baseName, elementInfo, keepElements, subset } from '../fhir/elements.js';
import { inCompartment, type CompartmentType } from '../fhir/compartments.js';
import { badRequest } from '../fhir/outcome.js';
import type { SearchQuery } from '../core/repository.js';
import type { RequestContext } from '../core/context.js';
import { bundle, fullUrl, pageLinks } from './bundle.js';
import { FORMAT_PARAMETERS, type FhirRequest, type FhirResult } from '../core/fhir-request.js';

/**
 * GET [base]/Type?… and POST [base]/Type/_search (form body, same parameters): Bundle
 * `searchset` with `total`, entries with `fullUrl` and `search.mode`, and paging links that
 * repeat the request's parameters. `_summary` and `_elements` shape the matched resources.
 */
export async function searchInteraction(req: FhirRequest, type: string): Promise<FhirResult> {
  const params = [...req.query, ...formParams(req.body)];
  return { status: 200, body: await searchBundle(req.ctx, { resourceType: type, params }, `${req.ctx.fhirBaseUrl}/${type}`) };
}

/**
 * GET [base]?_type=A,B&… (docs/rest.md#system-search): one searchset over the listed types, with
 * the parameters they have in common. Without `_type` → 400 (a search of every type is not offered).
 */
export async function systemSearchInteraction(req: FhirRequest): Promise<FhirResult> {
  const types = [...new Set(req.query.filter(([k]) => k === '_type').flatMap(([, v]) => v.split(',').map((t) => t.trim()).filter(Boolean)))];
  if (types.length === 0) throw badRequest('A system search needs _type: GET [base]?_type=<Type>,<Type>&… (a search of every resource type is not supported)', '_type');
  for (const t of types) if (!isResourceType(t)) throw badRequest(`Invalid value '${t}' for _type: not a resource type`, '_type');
  const params = req.query.filter(([k]) => k !== '_type');
  return { status: 200, body: await searchBundle(req.ctx, { resourceType: '*', types, params }, req.ctx.fhirBaseUrl, req.query) };
}

/**
 * GET [base]/<Compartment>/<id>/<Type> and [base]/<Compartment>/<id>/* for the five R4
 * compartments (docs/rest.md#compartment-search): the search of `<Type>` (or of every type of
 * the compartment, optionally narrowed by `_type`) restricted to the compartment. The
 * compartment's resource must be visible to the caller (404/410 as for read) and `<Type>` a type
 * of the compartment.
 */
export async function compartmentSearchInteraction(req: FhirRequest, compartmentType: CompartmentType, id: string, type: string): Promise<FhirResult> {
  await req.ctx.repo.read(compartmentType, id);
  let params = req.query;
  const compartment: SearchQuery['compartment'] = { resourceType: compartmentType, id };
  if (type === '*') {
    const wanted = params.filter(([k]) => k === '_type').flatMap(([, v]) => v.split(',').map((t) => t.trim()).filter(Boolean));
    if (wanted.length > 0) compartment.types = checkedCompartmentTypes(wanted, compartmentType);
    params = params.filter(([k]) => k !== '_type');
  } else if (!inCompartment(compartmentType, type)) {
    throw badRequest(`Resource type ${type} is not in the ${compartmentType} compartment`);
  }
  const url = `${req.ctx.fhirBaseUrl}/${compartmentType}/${id}/${type}`;
  return { status: 200, body: await searchBundle(req.ctx, { resourceType: type, params, compartment }, url, req.query) };
}

/** `_type` values of a compartment search: resource types of the compartment, else 400. */
export function checkedCompartmentTypes(types: string[], compartment: CompartmentType = 'Patient'): string[] {
  for (const t of types) {
    if (!isResourceType(t)) throw badRequest(`Invalid value '${t}' for _type: not a resource type`);
    if (!inCompartment(compartment, t)) throw badRequest(`Resource type ${t} is not in the ${compartment} compartment`);
  }
  return types;
}

/** Runs `query` and answers the searchset Bundle, with paging links under `url` repeating `linkParams`. */
export async function searchBundle(ctx: RequestContext, query: SearchQuery, url: string, linkParams = query.params): Promise<Bundle> {
  const { params } = query;
  // A searchset carries its exact total (docs/rest.md#search): a last page knows it from its own
  // rows, another page counts up to LATTICE_SEARCH_MAX_COUNTED matches (all with `_total=accurate`);
  // `_total=estimate` asks the planner, `_total=none` counts nothing.
  const asked = [...params].reverse().find(([k]) => k === '_total')?.[1];
  const result = await ctx.repo.search(query);
  const base = ctx.fhirBaseUrl;
  const shape = shaper(params);
  return bundle(
    'searchset',
    result.resources.map((resource: Resource, i) => {
      const mode = result.modes?.[i] ?? 'match';
      return { fullUrl: fullUrl(base, resource), resource: mode === 'match' ? shape(resource) : resource, search: { mode } };
    }),
    asked === 'none' || result.totalKind === 'lower' ? undefined : result.total,
    pageLinks(url, linkParams, result),
  );
}

/**
 * `_summary` and `_elements` on read and vread (docs/rest.md#read): the same shaping as a
 * search's matches. Values are checked as a search checks them; `_summary=count` has no meaning
 * for one resource (400).
 */
export function readShaper(query: Array<[string, string]>): (resource: Resource) => Resource {
  for (const [name, value] of query) {
    if (name === '_summary' && !['true', 'false', 'text', 'data'].includes(value)) throw badRequest(`Invalid value '${value}' for _summary`);
    if (name === '_elements') {
      for (const element of value.split(',').map((e) => e.trim()).filter(Boolean)) {
        if (!/^[A-Za-z][A-Za-z0-9]*(\[x\])?$/.test(element)) throw badRequest(`Invalid value '${value}' for _elements`);
      }
    }
  }
  return shaper(query);
}

/**
 * The output shaping the request asks for: `_summary=true|text|data` (from the
 * StructureDefinition's summary and mandatory elements) or `_elements=a,b` (those top-level
 * elements). Shaped resources are tagged SUBSETTED. `_summary` wins when both are given.
 */
function shaper(params: Array<[string, string]>): (resource: Resource) => Resource {
  if (!params.some(([k]) => k === '_summary' || k === '_elements')) return unshaped; // most requests: nothing to work out
  const last = (name: string): string | undefined => [...params].reverse().find(([k]) => k === name)?.[1];
  const summary = last('_summary');
  const elements = last('_elements');
  const info = (r: Resource) => elementInfo(r.resourceType);
  const name = (r: Resource, key: string) => baseName(r.resourceType, key);
  if (summary === 'true') return (r) => subset(r, (key) => info(r).summary.has(name(r, key)));
  if (summary === 'text') return (r) => subset(r, (key) => key === 'text' || info(r).mandatory.has(name(r, key)));
  if (summary === 'data') return (r) => subset(r, (key) => key !== 'text');
  const wanted = new Set((elements ?? '').split(',').map((e) => e.trim().replace(/\[x\]$/, '')).filter(Boolean));
  if (wanted.size > 0 && summary !== 'false') {
    return (r) => keepElements(r, wanted);
  }
  return unshaped;
}

const unshaped = (r: Resource): Resource => r;

/** Fields of a form-encoded `_search` body as query pairs (the format parameters left out, as from the URL). */
function formParams(body: unknown): Array<[string, string]> {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return [];
  return Object.entries(body as Record<string, unknown>).flatMap(([k, v]) =>
    FORMAT_PARAMETERS.has(k) ? [] : (Array.isArray(v) ? v : [v]).map((x) => [k, String(x)] as [string, string]),
  );
}
