import pino, { type Logger } from 'pino';
import type { Config } from './config.js';
import { ANONYMOUS, SYSTEM_AUTH, type AuthInfo } from './core/auth.js';
import type { AppRoute } from './core/app-route.js';
import type { Database } from './core/database.js';
import type { FeatureEnv } from './core/feature.js';
import type { OperationRegistry } from './core/operation.js';
import type { ResourceHook, ResourceRepository, SystemRepository } from './core/repository.js';
import { buildHttpServer, type HttpServer } from './http/server.js';
import { createFhirRouter } from './rest/router.js';
import { openDatabase } from './storage/open-database.js';
import { countStatements, countingRequested } from './storage/statement-count.js';
import { Repository, ROWS_CHANNEL, type ResourceRow } from './storage/repository.js';
import { subscribeChanges } from './storage/change-feed.js';
import { RowCache } from './storage/row-cache.js';
import { SEARCH_CHANNEL, SearchCache } from './storage/search/search-cache.js';
import { ResourceHooks } from './storage/resource-hooks.js';
import { createSearchIndex } from './storage/search/sql-search-index.js';
import { searchCapabilities } from './storage/search/capabilities.js';
import { reindexIfOutdated } from './storage/search/reindex.js';
import { useStoredSearchParameters } from './storage/search/stored-parameters.js';
import { authHooks } from './auth/resource-hooks.js';
import { installAuth } from './auth/install.js';
import { installOperations } from './operations/install.js';
import { terminologyHooks } from './terminology/hooks.js';
import { installTerminology } from './terminology/install.js';
import { FhirPathEvaluator } from './fhir/fhirpath-evaluator.js';
import { createResourceValidator } from './fhir/validation/bindings.js';
import { installRest } from './rest/install.js';
import { createProfileValidator } from './profiles/profile-validator.js';
import { installAdmin } from './admin/install.js';
import { installEmail } from './email/install.js';
import { installExport } from './export/install.js';
import { installProfiles } from './profiles/install.js';
import { snapshotGenerator } from './profiles/snapshot-generator.js';
import { createBinaryFeature } from './binary/install.js';
import { installSubscriptions, subscriptionHooks, SubscriptionRegistry } from './subscriptions/install.js';

export interface App {
  config: Config;
  log: Logger;
  db: Database;
  /** The system's repository (no project; tests and the CLI use it). */
  system: SystemRepository;
  /** A repository scoped to a caller. */
  repository(auth: AuthInfo): ResourceRepository;
  /** Every registered operation (the role-matrix test walks them). */
  operations: OperationRegistry;
  /** Every non-FHIR route, as declared by the features. */
  routes: readonly AppRoute[];
  /** The HTTP server (Fastify, known only to src/http; tests use its `inject`). */
  http: HttpServer;
  /** Starts listening; resolves with the bound address. */
  listen(): Promise<string>;
  /** Stops accepting requests, lets in-flight ones finish, stops jobs, closes the database. */
  close(): Promise<void>;
}

/**
 * Wires the application, in an order the types enforce: every write hook exists before the
 * repository does (so no write can miss one); the operations registry exists before the
 * features that register operations; the HTTP server needs the bearer authenticator that only
 * the auth feature returns — there is no moment with a placeholder.
 */
export interface AppOptions {
  log?: Logger;
  db?: Database;
  /** false: no e-mail outbox sender in this process (`lattice import`/`admin`: not a server node). Default true. */
  emailSender?: boolean;
  /** Write hooks beyond the features' own (tests use one that fails on purpose). */
  extraHooks?: ResourceHook[];
}

export async function createApp(config: Config, options: AppOptions = {}): Promise<App> {
  const log = options.log ?? pino({ level: config.logLevel });
  const opened = options.db ?? (await openDatabase(config));
  const db = countingRequested() ? countStatements(opened) : opened;
  const closers: Array<() => Promise<void> | void> = [];
  const closeAll = async () => {
    for (const fn of closers.reverse()) await fn();
    closers.length = 0;
  };

  // Binary content joins every Binary write (and signs attachment URLs on the way out).
  const binary = createBinaryFeature(config, db);
  // Subscriptions watch writes of the types their criteria name (src/subscriptions); the
  // registry of watched types is loaded when the feature is installed below.
  const subscriptions = new SubscriptionRegistry();
  const watchHooks = subscriptionHooks({
    registry: subscriptions,
    allowPrivate: config.subscriptions.allowPrivate,
    // Called at write time only, once `repository` exists.
    repository: (auth, tx) => (tx ? repository(auth).inTransaction(tx) : repository(auth)),
  });
  const hooks = new ResourceHooks([...authHooks(), ...terminologyHooks(), ...watchHooks, ...binary.hooks, ...(options.extraHooks ?? [])]);
  // Answers of searches asked again while nothing was written (search-cache.ts): every change to
  // a table a search reads is announced by a trigger, on both drivers, whoever wrote it.
  const searchCache = config.searchCacheMb > 0 ? new SearchCache(db.driver === 'pg', config.searchCacheMb * 1024 * 1024) : undefined;
  if (searchCache) {
    const unsubscribe = await subscribeChanges(db, SEARCH_CHANNEL, (payload) => (payload === '-' || payload === '*' ? searchCache.listening(payload === '*') : searchCache.clear()));
    searchCache.listening(true);
    closers.push(() => {
      searchCache.listening(false);
      unsubscribe();
    });
  }
  const searchIndex = createSearchIndex(config.searchLimits, searchCache);
  // PGlite sees every write in this process; on PostgreSQL every node hears every write through
  // the change feed (row-cache.ts). `LATTICE_READ_CACHE=off` reads the database every time.
  const rowCache = config.readCache ? new RowCache<ResourceRow>(db.driver === 'pg') : undefined;
  if (rowCache?.shared) {
    const unsubscribe = await subscribeChanges(db, ROWS_CHANNEL, (key) =>
      key === '-' || key === '*' ? rowCache.listening(key === '*') : rowCache.invalidate(key),
    );
    rowCache.listening(true);
    closers.push(() => {
      rowCache.listening(false);
      unsubscribe();
    });
  }
  // FHIRPath written by callers (PATCH paths, held profiles' invariants, access policies' write
  // constraints): in its own thread, with a time limit (docs/errors.md#fhirpath-evaluation).
  const fhirpath = new FhirPathEvaluator(config.fhirpathTimeoutMs);
  closers.push(() => fhirpath.close());
  const repository = (auth: AuthInfo, since?: number) => new Repository(db, auth, hooks, searchIndex, rowCache, false, since, fhirpath);
  const system = repository(SYSTEM_AUTH);
  const listening: Array<() => void> = [];
  const env: FeatureEnv = { config, log, db, system, onClose: (fn) => closers.push(fn), onListening: (fn) => listening.push(fn) };

  let http: HttpServer;
  let operations: OperationRegistry;
  let routes: AppRoute[];
  try {
    const auth = await installAuth(env, repository);
    const registry = installOperations(env);
    // Required bindings are checked against the shared terminologies (docs/rest.md#validation).
    const terminology = installTerminology(env, registry, repository(ANONYMOUS));
    const validator = createResourceValidator(terminology.bindings);
    // Profiles (src/profiles): `$validate` and a project's rule for writes (docs/rest.md#validate).
    const profiles = createProfileValidator({
      bindings: terminology.bindings,
      limits: config.profileLimits,
      system,
      // Held profiles without a snapshot get one from their differential (src/profiles/snapshot).
      generate: snapshotGenerator(config.profileMaxElements),
      fhirpath,
    });
    searchIndex.useTerminology(terminology.search);
    // SearchParameters of loaded implementation guides, before anything is indexed or searched.
    await useStoredSearchParameters(system, db, log);
    // Resources indexed by an older version get this version's rows, in the background once the
    // server listens (until then the database serves the start).
    let stopping = false;
    let reindexing: Promise<unknown> | undefined;
    listening.push(() => {
      if (stopping) return;
      reindexing = reindexIfOutdated(db, searchIndex, log, () => stopping).catch((err: unknown) =>
        log.error({ err }, 'search index: re-indexing stopped; it resumes at the next start'),
      );
    });
    closers.push(async () => {
      stopping = true;
      await reindexing;
    });
    installRest(registry, validator, profiles);
    installProfiles(env, registry);
    if (options.emailSender !== false) await installEmail(env);
    const adminRoutes = installAdmin(env);
    const exportRoutes = await installExport(env, registry, (caller) => repository(caller));
    const binaryRoutes = await binary.install(env);
    const subscriptionFeature = await installSubscriptions(env, registry, {
      registry: subscriptions,
      repository,
      authenticator: auth.authenticator,
      authorize: auth.authorize,
    });
    await registry.published();
    operations = registry;
    routes = [...auth.routes, ...adminRoutes, ...terminology.routes, ...exportRoutes, ...binaryRoutes];
    http = buildHttpServer({
      config,
      log,
      db,
      authenticator: auth.authenticator,
      repository,
      fhir: createFhirRouter(registry, {
        bundleMaxEntries: config.bundleMaxEntries,
        // A transaction Bundle: the transaction limit plus a share per entry (docs/rest.md#batch-and-transaction).
        bundleTimeoutMs: (entries) => (config.database.statementTimeoutMs > 0 ? config.database.statementTimeoutMs + entries * config.bundleEntryMs : undefined),
        terminologyCapabilities: terminology.capabilities,
        validator,
        profiles,
        fhirpath,
        search: searchCapabilities(),
        // FHIR JSON `data` is bounded like a JSON request body (docs/rest.md#binary).
        binary: { store: binary.store, jsonDataLimit: config.bodyLimit },
        subscriptions: { channels: subscriptionFeature.channels, websocketPath: subscriptionFeature.websocketPath },
      }),
      routes,
      sockets: subscriptionFeature.sockets,
    });
  } catch (err) {
    await closeAll();
    if (!options.db) await db.close();
    throw err;
  }
  let closed = false;
  return {
    config,
    log,
    db,
    system,
    repository,
    operations,
    routes,
    http,
    async listen() {
      const address = await http.listen({ port: config.port, host: config.host });
      for (const fn of listening.splice(0)) fn();
      return address;
    },
    async close() {
      if (closed) return;
      closed = true;
      await http.close();
      await closeAll();
      await db.close();
    },
  };
}
