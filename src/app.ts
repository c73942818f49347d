import type { FastifyInstance } from 'fastify';
import pino, { type Logger } from 'pino';
import type { Config } from './config.js';
import type { AuthInfo } from './context.js';
import type { AppRoute } from './http/app-route.js';
import { buildHttpServer } from './http/server.js';
import type { Authenticator, Services } from './services.js';
import type { Database } from './storage/database.js';
import { openDatabase } from './storage/open-database.js';
import { Repository, type ResourceRow } from './storage/repository.js';
import { RowCache } from './storage/row-cache.js';
import { ResourceHooks } from './storage/resource-hooks.js';
import { createSearchIndex } from './storage/search/sql-search-index.js';
import { installAuth } from './auth/install.js';
import { installOperations } from './operations/install.js';
import { installTerminology } from './terminology/install.js';
import { installAdmin } from './admin/install.js';
import { installEmail } from './email/install.js';

/** Features in installation order (operations before the terminology that registers some). */
const FEATURES = [installAuth, installOperations, installTerminology, installEmail, installAdmin];

export interface App {
  services: Services;
  http: FastifyInstance;
  /** Starts listening; resolves with the bound address. */
  listen(): Promise<string>;
  /** Stops accepting requests, lets in-flight ones finish, stops jobs, closes the database. */
  close(): Promise<void>;
}

/**
 * Wires the application: database → repository → features (terminology, operations, auth,
 * admin) → HTTP. Features plug in through `ResourceHooks`, `Services` and `AppRoute`s.
 */
export async function createApp(config: Config, options: { log?: Logger; db?: Database } = {}): Promise<App> {
  const log = options.log ?? pino({ level: config.logLevel });
  const db = options.db ?? (await openDatabase(config));
  const hooks = new ResourceHooks();
  const searchIndex = createSearchIndex();
  // Only an embedded PGlite is guaranteed to see every write in this process (see row-cache.ts).
  const rowCache = db.driver === 'pglite' ? new RowCache<ResourceRow>() : undefined;
  const closers: Array<() => Promise<void> | void> = [];
  const routes: AppRoute[] = [];

  const services: Services = {
    config,
    log,
    db,
    hooks,
    repository: (auth: AuthInfo) => new Repository(db, auth, hooks, searchIndex, rowCache),
    authenticator: openAuthenticator,
    onClose: (fn) => closers.push(fn),
  };

  try {
    for (const install of FEATURES) await install(services, routes);
    await services.operations?.published();
  } catch (err) {
    for (const fn of closers.reverse()) await fn();
    if (!options.db) await db.close();
    throw err;
  }
  const http = buildHttpServer(services, routes);
  let closed = false;
  return {
    services,
    http,
    async listen() {
      return http.listen({ port: config.port, host: config.host });
    },
    async close() {
      if (closed) return;
      closed = true;
      await http.close();
      for (const fn of closers.reverse()) await fn();
      await db.close();
    },
  };
}

/** Until `installAuth` replaces it: every caller is the system (no authentication). */
const openAuthenticator: Authenticator = {
  async authenticate() {
    return { superAdmin: true, projectAdmin: true };
  },
};
