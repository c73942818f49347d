import type { OperationOutcomeIssue } from '@medplum/fhirtypes';
import { isObject } from '../json.js';
import { issue } from '../outcome.js';
import { isResourceType } from './structure-definitions.js';

type Json = Record<string, unknown>;

const WITH_REQUEST = new Set(['batch', 'transaction', 'history']);
const WITH_RESPONSE = new Set(['batch-response', 'transaction-response', 'history']);
/** `[base]/Type/id` (optionally `/_history/v`) at the end of a RESTful fullUrl. */
const RESTFUL = /\/([A-Z][A-Za-z]+)\/([A-Za-z0-9\-.]{1,64})(?:\/_history\/[^/]+)?$/;
const ABSOLUTE = /^[A-Za-z][A-Za-z0-9+.-]*:/;

/**
 * The rules of an R4 Bundle (bundle.html) beyond its element definitions: the invariants
 * bdl-1 … bdl-12 and the reference validator's fullUrl checks (absolute, agreeing with the
 * resource's type and id). `expr` is the Bundle's own path (`Bundle`, `Bundle.entry[0].resource`).
 * The Bundle is structurally valid (validate-resource.ts ran first).
 */
export function bundleIssues(bundle: Json, expr: string): OperationOutcomeIssue[] {
  const out: OperationOutcomeIssue[] = [];
  const type = typeof bundle.type === 'string' ? bundle.type : undefined;
  const entries = Array.isArray(bundle.entry) ? bundle.entry.filter(isObject) : [];
  if (bundle.total !== undefined && type !== 'searchset' && type !== 'history') {
    out.push(invariant('bdl-1', 'total only when a search or history', `${expr}.total`));
  }
  if (type === 'document') {
    const id = isObject(bundle.identifier) ? bundle.identifier : undefined;
    if (id?.system === undefined || id.value === undefined) {
      out.push(invariant('bdl-9', 'A document must have an identifier with a system and a value', `${expr}.identifier`));
    }
    if (typeof bundle.timestamp !== 'string') out.push(invariant('bdl-10', 'A document must have a date (timestamp)', `${expr}.timestamp`));
    if (resourceTypeOf(entries[0]) !== 'Composition') {
      out.push(invariant('bdl-11', 'A document must have a Composition as the first resource', `${expr}.entry[0]`));
    }
  }
  if (type === 'message' && resourceTypeOf(entries[0]) !== 'MessageHeader') {
    out.push(invariant('bdl-12', 'A message must have a MessageHeader as the first resource', `${expr}.entry[0]`));
  }
  const seen = new Map<string, number>();
  entries.forEach((entry, i) => {
    const at = `${expr}.entry[${i}]`;
    if (entry.search !== undefined && type !== 'searchset') out.push(invariant('bdl-2', 'entry.search only when a search', `${at}.search`));
    if (type !== undefined && (entry.request !== undefined) !== WITH_REQUEST.has(type)) {
      out.push(
        entry.request === undefined
          ? invariant('bdl-3', `entry.request is mandatory in a ${type} Bundle`, `${at}.request`)
          : invariant('bdl-3', `entry.request is not allowed in a ${type} Bundle`, `${at}.request`),
      );
    }
    if (type !== undefined && (entry.response !== undefined) !== WITH_RESPONSE.has(type)) {
      out.push(
        entry.response === undefined
          ? invariant('bdl-4', `entry.response is mandatory in a ${type} Bundle`, `${at}.response`)
          : invariant('bdl-4', `entry.response is not allowed in a ${type} Bundle`, `${at}.response`),
      );
    }
    if (entry.resource === undefined && entry.request === undefined && entry.response === undefined) {
      out.push(invariant('bdl-5', 'An entry must contain a resource unless there is a request or response', at));
    }
    if (typeof entry.fullUrl !== 'string') return;
    out.push(...fullUrlIssues(entry.fullUrl, entry.resource, `${at}.fullUrl`));
    // bdl-7: the same fullUrl twice only for different versions (any repeat in a history Bundle).
    if (type === 'history') return;
    const resource = isObject(entry.resource) ? entry.resource : undefined;
    const version = isObject(resource?.meta) ? resource.meta.versionId : undefined;
    const key = `${entry.fullUrl}|${typeof version === 'string' ? version : ''}`;
    const first = seen.get(key);
    if (first !== undefined) {
      out.push(invariant('bdl-7', `Duplicate fullUrl '${entry.fullUrl}' (also entry[${first}]): fullUrls must be unique unless the versions differ`, `${at}.fullUrl`));
    } else seen.set(key, i);
  });
  return out;
}

/** bdl-8 and the reference validator's checks of one fullUrl against its entry's resource. */
function fullUrlIssues(fullUrl: string, resource: unknown, at: string): OperationOutcomeIssue[] {
  if (fullUrl.includes('/_history/')) return [invariant('bdl-8', `fullUrl cannot be a version specific reference ('${fullUrl}')`, at)];
  if (!ABSOLUTE.test(fullUrl)) return [issue('value', `fullUrl must be an absolute URL or a URN, not the relative reference '${fullUrl}'`, at)];
  const rest = RESTFUL.exec(fullUrl);
  if (!rest || !isObject(resource) || !isResourceType(rest[1])) return [];
  const [, type, id] = rest;
  if (typeof resource.resourceType === 'string' && resource.resourceType !== type) {
    return [issue('invalid', `fullUrl '${fullUrl}' names type ${type} but the resource is a ${resource.resourceType}`, at)];
  }
  if (typeof resource.id === 'string' && resource.id !== id) {
    return [issue('invalid', `fullUrl '${fullUrl}' does not match the resource id '${resource.id}'`, at)];
  }
  return [];
}

function resourceTypeOf(entry: Json | undefined): unknown {
  return isObject(entry?.resource) ? entry.resource.resourceType : undefined;
}

function invariant(key: string, text: string, expression: string): OperationOutcomeIssue {
  return issue('invariant', `${key}: ${text}`, expression);
}
