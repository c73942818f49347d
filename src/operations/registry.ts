import type { OperationDefinition } from '@medplum/fhirtypes';
import { resourceTypes } from '../fhir/definitions.js';
import { notFound } from '../fhir/outcome.js';
import type { FhirRequest, FhirResult } from '../core/fhir-request.js';
import { invokeOperation } from './invoke.js';
import type { Operation, OperationCall, OperationCapability, OperationRegistry, OperationTarget } from '../core/operation.js';
import type { DefinitionPublisher } from './publish.js';

/** `Resource` in `OperationDefinition.resource` means every resource type. */
const ANY_TYPE = '*';

interface Registered {
  operation: Operation;
  /** Resource types answered at type or instance level (`*` = all). */
  types: string[];
}

/**
 * The operations registry: `register()` derives an operation's routes (system / type /
 * instance, for each type in `resource`), its CapabilityStatement entry and its published
 * definition from the OperationDefinition; `dispatch()` resolves a `$code` request to it.
 */
export class OperationsRegistry implements OperationRegistry {
  private readonly routes = new Map<string, Operation>();
  private readonly registered: Registered[] = [];
  private readonly ids = new Set<string>();

  constructor(
    private readonly publisher: DefinitionPublisher,
    /** FHIR base URL, for the canonical of definitions that have none. */
    private readonly fhirBaseUrl: () => string,
  ) {}

  /**
   * Adds an operation. The definition served (and used for routing and parsing) is the given one
   * with `id` and `url` filled in when missing and `instance: true` when `alsoInstance` is set, so
   * what `[base]/OperationDefinition/<id>` shows is exactly what is answered. Throws on a
   * malformed definition or a route or id that is already taken (a programming error).
   */
  register(operation: Operation): void {
    const definition = servedDefinition(operation, this.fhirBaseUrl());
    const id = definition.id as string;
    if (this.ids.has(id)) throw new Error(`OperationDefinition ${id} is already registered`);
    const op: Operation = { ...operation, definition };
    const types = ((definition.resource ?? []) as string[]).map((t) => (t === 'Resource' || t === 'DomainResource' ? ANY_TYPE : t));
    const keys: string[] = [];
    if (definition.system) keys.push(routeKey('system', undefined, definition.code));
    for (const type of types) {
      if (definition.type) keys.push(routeKey('type', type, definition.code));
      if (definition.instance) keys.push(routeKey('instance', type, definition.code));
    }
    if (keys.length === 0) throw new Error(`OperationDefinition ${id} is available at no level`);
    const taken = keys.find((k) => this.routes.has(k));
    if (taken) throw new Error(`OperationDefinition ${id}: route ${taken} is already registered`);
    for (const key of keys) this.routes.set(key, op);
    this.ids.add(id);
    this.registered.push({ operation: op, types: definition.type || definition.instance ? types : [] });
    this.publisher.publish(definition);
  }

  /** Resolves `[base]/$code`, `[base]/Type/$code`, `[base]/Type/id/$code` and invokes the operation. */
  /** Not `async`: the operation's own promise is answered, not one more around it (a refusal is still a rejection). */
  dispatch(req: FhirRequest, target: OperationCall): Promise<FhirResult> {
    const level: OperationTarget['level'] = target.id !== undefined ? 'instance' : target.resourceType ? 'type' : 'system';
    const op =
      this.routes.get(routeKey(level, target.resourceType, target.code)) ??
      (level === 'system' ? undefined : this.routes.get(routeKey(level, ANY_TYPE, target.code)));
    // An operation registered elsewhere but not at this level/type is as unknown as any other.
    if (!op) return Promise.reject(notFound(`Operation $${target.code} not found`));
    const resolved: OperationTarget = { level };
    if (target.resourceType !== undefined) resolved.resourceType = target.resourceType;
    if (target.id !== undefined) resolved.id = target.id;
    return invokeOperation(req, op, resolved);
  }

  /** One CapabilityStatement entry per registered operation. */
  capabilities(): OperationCapability[] {
    return this.registered.map(({ operation: { definition }, types }) => ({
      name: definition.code,
      definition: definition.url as string,
      resourceTypes: types.includes(ANY_TYPE) ? [...resourceTypes()] : types,
      system: definition.system === true,
    }));
  }

  /** The served definitions of every registered operation, in registration order. */
  definitions(): OperationDefinition[] {
    return this.registered.map((r) => r.operation.definition);
  }

  /**
   * Resolves when every definition registered so far is stored, i.e. readable at
   * `[base]/OperationDefinition/<id>`; rejects when one could not be stored.
   */
  published(): Promise<void> {
    return this.publisher.settled();
  }
}

function routeKey(level: OperationTarget['level'], type: string | undefined, code: string): string {
  return `${level} ${type ?? ''} ${code}`;
}

/** A checked copy of the definition with the server-side fill-ins (see `register`). */
function servedDefinition(operation: Operation, fhirBaseUrl: string): OperationDefinition {
  const source = operation.definition;
  if (source?.resourceType !== 'OperationDefinition') throw new Error('Operation.definition must be an OperationDefinition');
  if (!source.code || !/^[A-Za-z0-9_\-.]+$/.test(source.code)) throw new Error(`OperationDefinition has an invalid code: ${source.code}`);
  const definition = structuredClone(source);
  const resources = definition.resource ?? [];
  definition.id ??= resources.length === 1 ? `${resources[0]}-${definition.code}` : definition.code;
  if (!/^[A-Za-z0-9\-.]{1,64}$/.test(definition.id)) throw new Error(`OperationDefinition has an invalid id: ${definition.id}`);
  definition.url ??= `${fhirBaseUrl}/OperationDefinition/${definition.id}`;
  if (operation.alsoInstance && resources.length > 0) definition.instance = true;
  for (const p of definition.parameter ?? []) checkParameter(definition.id, p);
  return definition;
}

function checkParameter(id: string, p: NonNullable<OperationDefinition['parameter']>[number]): void {
  if (!p.name || (p.use !== 'in' && p.use !== 'out') || !(p.max === '*' || /^\d+$/.test(p.max ?? ''))) {
    throw new Error(`OperationDefinition ${id}: malformed parameter ${JSON.stringify(p.name)}`);
  }
  for (const part of p.part ?? []) checkParameter(id, part);
}
