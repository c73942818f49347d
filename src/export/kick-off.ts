import type { Group, Reference } from '@medplum/fhirtypes';
import type { RequestContext } from '../core/context.js';
import type { FhirRequest, FhirResult } from '../core/fhir-request.js';
import type { OperationTarget, OperationValues } from '../core/operation.js';
import { compartmentMemberTypes } from '../fhir/compartments.js';
import { isResourceType, resourceTypes } from '../fhir/definitions.js';
import { FhirError, badRequest, forbidden, informational } from '../fhir/outcome.js';
import { parseResourceScope } from '../fhir/smart-scopes.js';
import { ACCOUNT_TYPES } from '../storage/scope.js';
import { DECLARED_INPUTS } from './definitions.js';
import { OUTPUT_FORMATS, type ExportPlan } from './plan.js';

/** What a kick-off asked for, before the job is written (kick-off.ts → job-store.ts). */
export interface KickOff {
  plan: ExportPlan;
  requestUrl: string;
}

interface ExportInput {
  _outputFormat?: string;
  _since?: string;
  _type?: string[];
  _typeFilter?: string[];
  _elements?: string[];
  includeAssociatedData?: string[];
  patient?: Reference[];
}

/** Inputs declared (the IG's) that Lattice does not act on: refused unless `Prefer: handling=lenient`. */
const UNSUPPORTED_INPUTS = ['includeAssociatedData'];

/**
 * Reads and checks a kick-off request (docs/export.md#kick-off): `Prefer: respond-async`, the
 * parameters, and the caller's right to this level; returns what the job will export. Every
 * refusal is a 4xx OperationOutcome naming what is wrong; nothing is written before it passes.
 */
export async function readKickOff(req: FhirRequest, input: ExportInput & OperationValues, target: OperationTarget): Promise<KickOff> {
  const prefer = preferences(req.headers.prefer);
  if (!prefer.has('respond-async')) throw badRequest('$export runs asynchronously: send the header Prefer: respond-async');
  const lenient = prefer.get('handling') === 'lenient';
  const { ctx } = req;
  const unknown = [...unknownInputs(req), ...UNSUPPORTED_INPUTS.filter((name) => input[name] !== undefined)];
  if (unknown.length > 0 && !lenient) {
    throw badRequest(`Unsupported $export parameter${unknown.length > 1 ? 's' : ''}: ${unknown.join(', ')} (send Prefer: handling=lenient to have them ignored)`);
  }
  if (input._outputFormat !== undefined && !OUTPUT_FORMATS.includes(input._outputFormat)) {
    throw badRequest(`Unsupported _outputFormat '${input._outputFormat}': supported are ${OUTPUT_FORMATS.join(', ')}`, '_outputFormat');
  }
  const level: ExportPlan['level'] = target.level === 'system' ? 'system' : target.resourceType === 'Group' ? 'group' : 'patient';
  if (level === 'system') checkSystemExport(ctx);
  const types = exportedTypes(ctx, level, commaList(input._type), lenient);
  const plan: ExportPlan = { level, types, typeFilters: typeFilters(input._typeFilter ?? [], types, lenient) };
  if (input._since !== undefined) plan.since = instantOf(input._since);
  const elements = elementsOf(commaList(input._elements));
  if (elements) plan.elements = elements;
  if (level !== 'system') plan.patients = await patientsOf(ctx, target, input.patient);
  // The `_typeFilter` searches are checked once now (unknown parameters, bad values: 400), by
  // the same search engine the job will run them with.
  for (const [type, filters] of Object.entries(plan.typeFilters)) {
    await ctx.repo.exportPage({ resourceType: type, count: 1, asOf: new Date().toISOString(), filters });
  }
  const query = new URLSearchParams(req.query).toString();
  return { plan, requestUrl: `${ctx.fhirBaseUrl}${req.path}${query ? `?${query}` : ''}` };
}

/** The 202 of an accepted kick-off: the status URL in `Content-Location`. */
export function accepted(statusUrl: string): FhirResult {
  return { status: 202, headers: { 'Content-Location': statusUrl }, body: informational(`Export started; poll ${statusUrl} for its status`) };
}

/** `Prefer` preferences: `respond-async`, `handling=lenient` (RFC 7240; names lower-cased). */
function preferences(header: string | undefined): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of (header ?? '').split(/[,;]/)) {
    const [name, value] = part.split('=').map((s) => s.trim().replace(/^"|"$/g, ''));
    if (name) out.set(name.toLowerCase(), (value ?? '').toLowerCase());
  }
  return out;
}

/** Parameter names of the request the definitions do not declare (the query, or the Parameters body). */
function unknownInputs(req: FhirRequest): string[] {
  const body = req.body as { parameter?: Array<{ name?: unknown }> } | undefined;
  const names = [...req.query.map(([name]) => name), ...(Array.isArray(body?.parameter) ? body.parameter.map((p) => String(p.name)) : [])];
  return [...new Set(names.filter((name) => !DECLARED_INPUTS.has(name)))];
}

/**
 * A system export needs a project admin (or super admin), or a token with a `system/` scope
 * that reads (docs/export.md#access); what the scopes allow still narrows the types.
 */
function checkSystemExport(ctx: RequestContext): void {
  const { auth } = ctx;
  const systemRead = (auth.scopes ?? []).some((scope) => {
    const parsed = scope.startsWith('system/') ? parseResourceScope(scope) : undefined;
    return parsed !== undefined && /[rs]/.test(parsed.permissions);
  });
  if (!systemRead && !auth.projectAdmin && !auth.superAdmin) {
    throw forbidden('A system-level $export needs a system/ read scope (e.g. system/*.rs) or a project admin');
  }
}

/**
 * The types to export: `_type`, or every type of the level — all types but the account
 * resources (system), the Patient compartment's (Patient, Group) — narrowed to those the
 * caller may search. A named type the caller may not search is 403; one outside the
 * level is 400 (dropped under lenient handling).
 */
function exportedTypes(ctx: RequestContext, level: ExportPlan['level'], requested: string[], lenient: boolean): string[] {
  const candidates = level === 'system' ? [...resourceTypes()].filter((t) => !ACCOUNT_TYPES.includes(t)) : compartmentMemberTypes('Patient');
  const mayRead = (type: string) => {
    try {
      ctx.repo.scope.checkAccess(type, 's');
      return true;
    } catch (err) {
      if (err instanceof FhirError) return false;
      throw err;
    }
  };
  if (requested.length === 0) return candidates.filter(mayRead).sort();
  const types: string[] = [];
  for (const type of new Set(requested)) {
    if (!isResourceType(type)) throw badRequest(`Unknown resource type in _type: ${type}`, '_type');
    if (!candidates.includes(type)) {
      if (lenient) continue;
      throw badRequest(level === 'system' ? `_type ${type} cannot be exported` : `_type ${type} is not in the Patient compartment`, '_type');
    }
    if (!mayRead(type)) throw forbidden(`Your access does not allow searching ${type}`);
    types.push(type);
  }
  return types;
}

/** `_typeFilter=Type?query`: the searches by type; a filter of a type not exported is 400 (ignored under lenient handling). */
function typeFilters(values: string[], types: string[], lenient: boolean): ExportPlan['typeFilters'] {
  const out: ExportPlan['typeFilters'] = {};
  for (const value of values) {
    const at = value.indexOf('?');
    const type = at < 0 ? value : value.slice(0, at);
    if (at < 0 || !isResourceType(type)) throw badRequest(`Invalid _typeFilter '${value}': expected ResourceType?search`, '_typeFilter');
    if (!types.includes(type)) {
      if (lenient) continue;
      throw badRequest(`_typeFilter ${type} names a type that is not exported`, '_typeFilter');
    }
    (out[type] ??= []).push([...new URLSearchParams(value.slice(at + 1))]);
  }
  return out;
}

/** `_elements=a,Type.b`: elements by type (`*` for plain names). */
function elementsOf(values: string[]): ExportPlan['elements'] {
  if (values.length === 0) return undefined;
  const out: Record<string, string[]> = {};
  for (const value of values) {
    const m = /^(?:([A-Z][A-Za-z]+)\.)?([a-z][A-Za-z0-9]*)$/.exec(value);
    if (!m || (m[1] !== undefined && !isResourceType(m[1]))) throw badRequest(`Invalid _elements value '${value}': expected element or ResourceType.element`, '_elements');
    (out[m[1] ?? '*'] ??= []).push(m[2]);
  }
  return out;
}

/**
 * The Patients of a Patient or Group export: the `patient` references when given (of the
 * group, for a Group export), else every Patient (`any`) or the group's Patient members
 * (Group.member.entity, inactive members left out; other kinds of members and nested groups
 * are not followed). The Group is read as the caller sees it (404 when it cannot).
 */
async function patientsOf(ctx: RequestContext, target: OperationTarget, given: Reference[] | undefined): Promise<string[] | 'any'> {
  const named = given?.map((ref) => patientId(ref.reference) ?? invalidPatient(ref.reference));
  if (target.resourceType !== 'Group') return named ? [...new Set(named)] : 'any';
  const group = await ctx.repo.read<Group>('Group', target.id as string);
  const members = new Set((group.member ?? []).filter((m) => m.inactive !== true).flatMap((m) => patientId(m.entity?.reference) ?? []));
  if (!named) return [...members];
  const outside = named.filter((id) => !members.has(id));
  if (outside.length > 0) throw badRequest(`patient Patient/${outside[0]} is not a member of Group/${group.id}`, 'patient');
  return [...new Set(named)];
}

function patientId(reference: string | undefined): string | undefined {
  return /(?:^|\/)Patient\/([A-Za-z0-9\-.]{1,64})$/.exec(reference ?? '')?.[1];
}

function invalidPatient(reference: string | undefined): never {
  throw badRequest(`patient must reference a Patient (Patient/<id>), got '${reference ?? ''}'`, 'patient');
}

function commaList(values: string[] | undefined): string[] {
  return (values ?? []).flatMap((v) => v.split(',').map((t) => t.trim()).filter(Boolean));
}

function instantOf(value: string): string {
  const ms = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.test(value) ? Date.parse(value) : NaN;
  if (Number.isNaN(ms)) throw badRequest(`Invalid _since '${value}': expected an instant such as 2024-01-01T00:00:00Z`, '_since');
  return new Date(ms).toISOString();
}
