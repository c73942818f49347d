import { isResourceType } from '../fhir/definitions.js';
import { isCompartmentType } from '../fhir/compartments.js';
import { FhirError, issue, methodNotAllowed, notFound } from '../fhir/outcome.js';

/** What a FHIR path names, before the method is considered. */
export type RouteTarget =
  | { kind: 'interaction'; allowed: string[] }
  | { kind: 'operation' }
  | { kind: 'unknown-type'; type: string }
  | { kind: 'nothing' };

/**
 * A FHIR request line classified once (docs/rest.md): the HTTP adapter's 405 check and the
 * router's dispatch both read it, and a Bundle entry gets one the same way.
 */
export interface FhirRoute {
  /** The method as requested (405 answers name it). */
  requested: string;
  /** The method to answer: HEAD is answered as GET (the HTTP adapter sends no body). */
  method: string;
  /** The path's segments below the FHIR base (`$` already decoded). */
  segments: string[];
  target: RouteTarget;
}

/** Classifies `method path` (path below the FHIR base). */
export function fhirRoute(method: string, path: string): FhirRoute {
  const segments = path.split('/').filter((s) => s.length > 0);
  return { requested: method, method: method === 'HEAD' ? 'GET' : method, segments, target: classify(segments) };
}

/**
 * Methods the route's path answers (HEAD wherever GET is), or undefined when the path names
 * nothing (404) or an operation (the operation decides which methods it accepts).
 */
export function allowedMethods(route: FhirRoute): string[] | undefined {
  return route.target.kind === 'interaction' ? route.target.allowed : undefined;
}

/** Throws 405 (with `Allow`) when the path answers other methods only. */
export function checkMethod(route: FhirRoute): void {
  const allowed = allowedMethods(route);
  if (allowed && !allowed.includes(route.requested)) throw methodNotAllowed(route.requested, allowed);
}

/** Throws 404 for a path that names nothing, 405 for a method the path does not support. */
export function checkRoute(route: FhirRoute): void {
  const { target } = route;
  if (target.kind === 'nothing') throw notFound();
  if (target.kind === 'unknown-type') throw new FhirError(404, [{ ...issue('not-found', 'Not found'), diagnostics: `Unknown resource type: ${target.type}` }]);
  checkMethod(route);
}

function classify(segments: string[]): RouteTarget {
  const [first, second, third] = segments;
  const interaction = (...allowed: string[]): RouteTarget => ({ kind: 'interaction', allowed });
  if (first === undefined) return interaction('GET', 'HEAD', 'POST'); // system search; batch / transaction
  if (first === 'metadata' || first === '_history') return segments.length === 1 ? interaction('GET', 'HEAD') : { kind: 'nothing' };
  if (first.startsWith('$')) return segments.length === 1 ? { kind: 'operation' } : { kind: 'nothing' };
  if (!isResourceType(first)) return { kind: 'unknown-type', type: first };
  switch (segments.length) {
    case 1:
      return interaction('GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH');
    case 2:
      if (second.startsWith('$')) return { kind: 'operation' };
      if (second === '_search') return interaction('GET', 'HEAD', 'POST');
      if (second === '_history') return interaction('GET', 'HEAD');
      return interaction('GET', 'HEAD', 'PUT', 'DELETE', 'PATCH');
    case 3:
      if (third.startsWith('$')) return { kind: 'operation' };
      if (third === '_history') return interaction('GET', 'HEAD');
      // Compartment search (docs/rest.md#compartment-search): <Compartment>/<id>/<Type> and <Compartment>/<id>/*.
      if (isCompartmentType(first) && (third === '*' || isResourceType(third))) return interaction('GET', 'HEAD');
      return { kind: 'nothing' };
    case 4:
      return third === '_history' ? interaction('GET', 'HEAD') : { kind: 'nothing' };
    default:
      return { kind: 'nothing' };
  }
}
