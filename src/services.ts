import type { Logger } from 'pino';
import type { Config } from './config.js';
import type { AuthInfo } from './context.js';
import type { Database } from './storage/database.js';
import type { Repository } from './storage/repository.js';
import type { ResourceHooks } from './storage/resource-hooks.js';
import type { Operation } from './operations/operation.js';
import type { FhirRequest, FhirResult } from './rest/types.js';

/** Answers operation invocations (`$code` routes); implemented by `src/operations/`. */
export interface OperationDispatcher {
  /** Handles `[base]/$code`, `[base]/Type/$code` or `[base]/Type/id/$code`. */
  dispatch(req: FhirRequest, target: { code: string; resourceType?: string; id?: string }): Promise<FhirResult>;
  /** Entries for the CapabilityStatement: operations per resource type (`'*'` = system level). */
  capabilities(): Array<{ name: string; definition: string; resourceTypes: string[]; system: boolean }>;
}

/** The operations registry: registering an operation adds its routes, definition and metadata entry. */
export interface OperationRegistry extends OperationDispatcher {
  register(operation: Operation): void;
  /** Resolves once every registered definition is stored (readable at `OperationDefinition/<id>`). */
  published(): Promise<void>;
}

/** Turns request headers into the caller's identity; throws FhirError 401 when it cannot. */
export interface Authenticator {
  authenticate(headers: Record<string, string | undefined>): Promise<AuthInfo>;
}

/** The wired application: what `app.ts` builds and request handlers may use. */
export interface Services {
  config: Config;
  log: Logger;
  db: Database;
  hooks: ResourceHooks;
  /** A repository scoped to a caller. */
  repository(auth: AuthInfo): Repository;
  /** Set by `src/operations/install.ts`. */
  operations?: OperationRegistry;
  /** Replaced by `src/auth/install.ts`. */
  authenticator: Authenticator;
  /** Background jobs and resources to stop on shutdown, in reverse order of registration. */
  onClose(fn: () => Promise<void> | void): void;
}

/**
 * A feature's wiring: registers hooks, operations, routes and background jobs on the
 * services. Features are installed in order by `app.ts`.
 */
export type Feature = (services: Services, routes: import('./http/app-route.js').AppRoute[]) => Promise<void>;
