import { availableParallelism } from 'node:os';
/**
 * Bounds on the work one search may ask for (docs/rest.md#limits), checked by the search
 * (storage/search/query/limits.ts) before any SQL is built: a search's cost grows with its parameters, their values and its chains, and one
 * request must not hold the database for everyone else.
 */
export interface SearchLimits {
  /** Filter parameters (result parameters such as `_count` not counted). */
  maxParameters: number;
  /** Comma-separated values of one parameter. */
  maxValues: number;
  /** Links of one chained parameter (`subject:Patient.organization.name` has 2). */
  maxChain: number;
  /** `_include`/`_revinclude` parameters of one search. */
  maxIncludes: number;
  /** Resources `_include`/`_revinclude` may add to one page (all directives and iterations). */
  maxIncluded: number;
  /** Distinct stored codes a terminology modifier (`:below`, `:above`, `:in`, `:not-in`) may test. */
  maxCodes: number;
  /** Nesting of `_has` (`_has:A:p:_has:B:q:…` has 2). */
  maxHasDepth: number;
  /** Comparisons of one `_filter` expression. */
  maxFilterTerms: number;
  /** Nesting of parentheses (and `not(…)`) in one `_filter` expression. */
  maxFilterDepth: number;
  /**
   * Matches a search without `_total` counts for its total (docs/rest.md#search): up to this
   * many the total is exact; beyond, the searchset has none (`_total=accurate` counts them all).
   */
  maxCounted: number;
}

export const SEARCH_LIMIT_DEFAULTS: SearchLimits = {
  maxParameters: 30,
  maxValues: 100,
  maxChain: 3,
  maxIncludes: 10,
  maxIncluded: 1000,
  maxCodes: 10_000,
  maxHasDepth: 2,
  maxFilterTerms: 20,
  maxFilterDepth: 10,
  maxCounted: 1000,
};

/**
 * The most links of a chain, levels of `_has` and levels of `_filter` nesting any search
 * expression may have whatever the configuration: the code that reads and translates them
 * recurses once per level, so past this a crafted value would overflow the stack. Search
 * parameters are checked against the (lower) configured bounds first; expressions that reach
 * the search another way (access-policy and SMART-scope criteria) against this. The settings
 * `LATTICE_SEARCH_MAX_CHAIN`, `LATTICE_SEARCH_MAX_HAS_DEPTH` and `LATTICE_SEARCH_MAX_FILTER_DEPTH`
 * may not exceed it.
 */
export const SEARCH_NESTING_CEILING = 64;

/**
 * Typed configuration, read once from the environment. Every variable is documented in the
 * README (README.md#configuration); defaults are for a developer's machine.
 */
export interface Config {
  port: number;
  host: string;
  /** PGlite data folder; `memory://` keeps everything in memory (tests). */
  dataDir: string;
  /** PostgreSQL connection string; when set PGlite is not used. */
  databaseUrl: string | undefined;
  /** Public base URL (no trailing slash) used in links, Location headers and e-mails. */
  publicUrl: string;
  /** As given; stored normalised (auth/email-address.ts). */
  adminEmail: string;
  adminPassword: string | undefined;
  smtpUrl: string | undefined;
  logLevel: string;
  /**
   * Proxies whose `X-Forwarded-For` is believed (addresses, CIDR ranges, or `loopback`,
   * `linklocal`, `uniquelocal`); empty = none, the client address is the connection's peer
   * (docs/auth.md#throttling).
   */
  trustedProxies: string[];
  /** Maximum request body in bytes (default 16 MiB). */
  bodyLimit: number;
  /** Binary content (docs/rest.md#binary). */
  binary: {
    /** Most bytes of one Binary's content (`LATTICE_BINARY_LIMIT`, default 1 GiB). */
    limit: number;
    /** Lifetime of a signed content URL in seconds (`LATTICE_BINARY_URL_LIFETIME`, default 3600). */
    urlLifetime: number;
    /** An upload that stores no chunk for this many seconds is abandoned and swept (`LATTICE_BINARY_STAGE_IDLE`, default 600). */
    stageIdle: number;
  };
  /** scrypt cost (log2 N) of new password hashes (docs/auth.md#passwords-and-secrets). */
  passwordCost: number;
  /**
   * How long one request may use the database (docs/errors.md#database-limits); 0 = no limit.
   * `autoAnalyze` (PGlite; default on): statistics kept current in the background (storage/pglite-analyze.ts).
   */
  database: { statementTimeoutMs: number; acquireTimeoutMs: number; poolSize: number; autoAnalyze?: boolean };
  /** Bounds on one search (docs/rest.md#limits). */
  searchLimits: SearchLimits;
  /** Lifetime of a client application secret in seconds; 0 = it never expires (docs/auth.md#client-secrets). */
  clientSecretLifetime: number;
  /** Access-token lifetime in seconds. */
  accessTokenLifetime: number;
  /** Resources per batch of a clinical bulk load (`lattice import`, `LATTICE_IMPORT_BATCH`). */
  importBatch: number;
  /**
   * Worker threads that prepare a clinical bulk load's batches (`LATTICE_IMPORT_WORKERS`; 0: in the
   * import's own thread). Default: the cores but one (the database uses one), at most 4.
   */
  importWorkers: number;
  /** Most entries a batch/transaction Bundle may have (default 10000). */
  bundleMaxEntries: number;
  /** Time a transaction Bundle gets per entry beyond the transaction limit (ms, `LATTICE_BUNDLE_ENTRY_MS`). */
  bundleEntryMs: number;
  /** Elements one snapshot generation may create, its base definitions' included (`LATTICE_PROFILE_MAX_ELEMENTS`, docs/profiles.md#bounds). */
  profileMaxElements: number;
  /** Bounds on validating one resource against its profiles (docs/errors.md#bounds-and-timeouts). */
  profileLimits: {
    /** Element visits × checks of one validation (`LATTICE_PROFILE_MAX_WORK`). */
    maxWork: number;
    /** FHIRPath invariant evaluations of one validation (`LATTICE_PROFILE_MAX_INVARIANTS`). */
    maxInvariants: number;
    /** Longest FHIRPath invariant expression evaluated, in characters (`LATTICE_PROFILE_MAX_EXPRESSION`). */
    maxExpressionLength: number;
  };
  /** How long one FHIRPath expression a caller wrote (a PATCH path, a held profile's invariant) may run, in ms (`LATTICE_FHIRPATH_TIMEOUT`; docs/errors.md#fhirpath-evaluation). */
  fhirpathTimeoutMs: number;
  /**
   * How the base R4 terminologies reach the database: `background` (all written once per
   * database by a background job) or `lazy` (each written when a request first resolves it).
   * Default: `lazy` for an in-memory database, else `background`.
   */
  baseTerminology: 'background' | 'lazy';
  /** Memory budget of the in-memory terminology indexes, in MB (docs/terminology.md#in-memory-index). */
  txCacheMb: number;
  /** Code-system canonicals whose in-memory index is built at start, in the background. */
  txPreload: string[];
  /**
   * `LATTICE_TX_INDEX_DIR`: folder of the file copies of persisted terminology indexes
   * (docs/terminology.md#persisted-indexes); `off`: none. Unset: `<data folder>-tx-index` on
   * PGlite, a folder per database under the system's temporary folder on PostgreSQL.
   */
  txIndexDir: string | undefined;
  /** `LATTICE_WORKERS`: server processes of `lattice serve`; 0 = the default (src/cluster/worker-count.ts). */
  workers: number;
  /** `LATTICE_READ_CACHE` (default on; `off`): current resource rows kept in memory (storage/row-cache.ts). */
  readCache: boolean;
  /**
   * `LATTICE_SEARCH_CACHE`: `on` (the default, 64 MB), `off`, or a budget in MB: answers of searches
   * asked again while nothing was written, kept in memory (docs/rest.md#search-answer-cache). 0 = off.
   */
  searchCacheMb: number;
  /** `lattice import`: a CodeSystem with more concepts is indexed staged (docs/terminology.md#atomic-imports). */
  txStagedImportAbove: number;
  /** Bounds on one terminology request (docs/terminology.md#limits). */
  terminologyLimits: {
    maxFilters: number;
    maxCodings: number;
    maxValueSets: number;
    maxIncludes: number;
    maxInlineConcepts: number;
    /** Steps of one ECL evaluation (concepts, edges, descriptions × search terms visited). */
    maxEclSteps: number;
    /** Characters of the distinct UCUM expressions one request has checked, all together. */
    maxUcumCharacters: number;
  };
  /** `lattice import` (RF2, LOINC): the longest line of a release file, in characters. */
  txImportMaxLine: number;
  /** Bulk Data export jobs (docs/export.md#settings). */
  bulkExport: {
    /** Export jobs one caller may have queued or running at a time; past it 429. */
    maxJobsPerCaller: number;
    /** Seconds a finished export's manifest and files stay available. */
    expirySeconds: number;
    /** Resources read per page (one statement, one short transaction to store it). */
    pageSize: number;
    /** How long a node's claim on a job lasts without a page or heartbeat (ms): a dead node's job is taken over after it. */
    leaseMs: number;
    /** At the latest, how often an idle runner looks for jobs (a kick-off wakes it, a lease running out or files expiring too). */
    pollMs: number;
    /** Claims of one job (a node died while running it) before it is failed. */
    maxAttempts: number;
  };
  /** Outbox e-mail sender. */
  email: {
    /** `From:` of every message (default `Lattice <no-reply@<public host>>`). */
    from: string | undefined;
    /** How often a sender looks for due messages when nothing wakes it (ms). */
    pollMs: number;
    /** First retry delay after a failed delivery (ms), doubled per attempt up to `retryMaxMs`. */
    retryBaseMs: number;
    retryMaxMs: number;
    /** Attempts before a message is given up. */
    maxAttempts: number;
  };
  /** Subscription notifications (src/subscriptions, docs/rest.md#subscriptions). */
  subscriptions: {
    /** Endpoints on loopback, private or link-local addresses are allowed (development, tests). */
    allowPrivate: boolean;
    /** How often a node looks for due notifications when nothing wakes it (ms). */
    pollMs: number;
    /** First retry delay after a failed delivery (ms), doubled per attempt up to `retryMaxMs`. */
    retryBaseMs: number;
    retryMaxMs: number;
    /** Attempts of one notification before the Subscription is set to `error`. */
    maxAttempts: number;
    /** Time one delivery (connect, send, answer) may take (ms). */
    timeoutMs: number;
  };
}

/** Builds the configuration from an environment (defaults to `process.env`). */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const port = intOf(env.PORT, 8080, 'PORT');
  const dataDir = env.LATTICE_DATA_DIR || './data';
  const databaseUrl = env.DATABASE_URL || undefined;
  const baseTerminology = env.LATTICE_BASE_TERMINOLOGY || (!databaseUrl && dataDir.startsWith('memory://') ? 'lazy' : 'background');
  if (baseTerminology !== 'lazy' && baseTerminology !== 'background') {
    throw new Error(`LATTICE_BASE_TERMINOLOGY must be 'background' or 'lazy', got '${baseTerminology}'`);
  }
  return {
    port,
    host: env.HOST || '127.0.0.1',
    dataDir,
    databaseUrl,
    baseTerminology,
    txCacheMb: intOf(env.LATTICE_TX_CACHE_MB, 1024, 'LATTICE_TX_CACHE_MB'),
    readCache: (env.LATTICE_READ_CACHE ?? 'on') !== 'off',
    searchCacheMb: searchCacheOf(env.LATTICE_SEARCH_CACHE),
    workers: intOf(env.LATTICE_WORKERS, 0, 'LATTICE_WORKERS'),
    txPreload: (env.LATTICE_TX_PRELOAD ?? '').split(',').map((s) => s.trim()).filter(Boolean),
    txIndexDir: env.LATTICE_TX_INDEX_DIR || undefined,
    txStagedImportAbove: intOf(env.LATTICE_TX_STAGED_IMPORT_ABOVE, 20_000, 'LATTICE_TX_STAGED_IMPORT_ABOVE'),
    terminologyLimits: {
      maxFilters: intOf(env.LATTICE_TX_MAX_FILTERS, 50, 'LATTICE_TX_MAX_FILTERS'),
      maxCodings: intOf(env.LATTICE_TX_MAX_CODINGS, 10_000, 'LATTICE_TX_MAX_CODINGS'),
      maxValueSets: intOf(env.LATTICE_TX_MAX_VALUESETS, 1_000, 'LATTICE_TX_MAX_VALUESETS'),
      maxIncludes: intOf(env.LATTICE_TX_MAX_INCLUDES, 5_000, 'LATTICE_TX_MAX_INCLUDES'),
      maxInlineConcepts: intOf(env.LATTICE_TX_MAX_INLINE_CONCEPTS, 25_000, 'LATTICE_TX_MAX_INLINE_CONCEPTS'),
      maxEclSteps: intOf(env.LATTICE_TX_ECL_MAX_STEPS, 20_000_000, 'LATTICE_TX_ECL_MAX_STEPS'),
      maxUcumCharacters: intOf(env.LATTICE_TX_MAX_UCUM_CHARACTERS, 20_000, 'LATTICE_TX_MAX_UCUM_CHARACTERS'),
    },
    txImportMaxLine: intOf(env.LATTICE_TX_IMPORT_MAX_LINE, 1_000_000, 'LATTICE_TX_IMPORT_MAX_LINE'),
    publicUrl: (env.LATTICE_PUBLIC_URL || `http://localhost:${port}`).replace(/\/+$/, ''),
    adminEmail: env.LATTICE_ADMIN_EMAIL?.trim() || 'admin@example.com',
    adminPassword: env.LATTICE_ADMIN_PASSWORD || undefined,
    smtpUrl: env.SMTP_URL || undefined,
    logLevel: env.LOG_LEVEL || 'info',
    database: {
      statementTimeoutMs: intOf(env.LATTICE_DB_STATEMENT_TIMEOUT, 30_000, 'LATTICE_DB_STATEMENT_TIMEOUT'),
      acquireTimeoutMs: intOf(env.LATTICE_DB_ACQUIRE_TIMEOUT, 10_000, 'LATTICE_DB_ACQUIRE_TIMEOUT'),
      poolSize: intOf(env.LATTICE_DB_POOL_SIZE, 10, 'LATTICE_DB_POOL_SIZE') || 10,
    },
    trustedProxies: (env.LATTICE_TRUSTED_PROXIES ?? '')
      .split(',')
      .map((p) => p.trim())
      .filter(Boolean),
    bodyLimit: intOf(env.LATTICE_BODY_LIMIT, 16 * 1024 * 1024, 'LATTICE_BODY_LIMIT'),
    binary: {
      limit: intOf(env.LATTICE_BINARY_LIMIT, 1024 * 1024 * 1024, 'LATTICE_BINARY_LIMIT'),
      urlLifetime: intOf(env.LATTICE_BINARY_URL_LIFETIME, 3600, 'LATTICE_BINARY_URL_LIFETIME') || 3600,
      stageIdle: intOf(env.LATTICE_BINARY_STAGE_IDLE, 600, 'LATTICE_BINARY_STAGE_IDLE') || 600,
    },
    passwordCost: passwordCostOf(env.LATTICE_PASSWORD_COST),
    searchLimits: {
      maxParameters: intOf(env.LATTICE_SEARCH_MAX_PARAMETERS, SEARCH_LIMIT_DEFAULTS.maxParameters, 'LATTICE_SEARCH_MAX_PARAMETERS'),
      maxValues: intOf(env.LATTICE_SEARCH_MAX_VALUES, SEARCH_LIMIT_DEFAULTS.maxValues, 'LATTICE_SEARCH_MAX_VALUES'),
      maxChain: nestingOf(env.LATTICE_SEARCH_MAX_CHAIN, SEARCH_LIMIT_DEFAULTS.maxChain, 'LATTICE_SEARCH_MAX_CHAIN'),
      maxIncludes: intOf(env.LATTICE_SEARCH_MAX_INCLUDES, SEARCH_LIMIT_DEFAULTS.maxIncludes, 'LATTICE_SEARCH_MAX_INCLUDES'),
      maxIncluded: intOf(env.LATTICE_SEARCH_MAX_INCLUDED, SEARCH_LIMIT_DEFAULTS.maxIncluded, 'LATTICE_SEARCH_MAX_INCLUDED'),
      maxCodes: intOf(env.LATTICE_SEARCH_MAX_CODES, SEARCH_LIMIT_DEFAULTS.maxCodes, 'LATTICE_SEARCH_MAX_CODES'),
      maxHasDepth: nestingOf(env.LATTICE_SEARCH_MAX_HAS_DEPTH, SEARCH_LIMIT_DEFAULTS.maxHasDepth, 'LATTICE_SEARCH_MAX_HAS_DEPTH'),
      maxFilterTerms: intOf(env.LATTICE_SEARCH_MAX_FILTER_TERMS, SEARCH_LIMIT_DEFAULTS.maxFilterTerms, 'LATTICE_SEARCH_MAX_FILTER_TERMS'),
      maxFilterDepth: nestingOf(env.LATTICE_SEARCH_MAX_FILTER_DEPTH, SEARCH_LIMIT_DEFAULTS.maxFilterDepth, 'LATTICE_SEARCH_MAX_FILTER_DEPTH'),
      maxCounted: intOf(env.LATTICE_SEARCH_MAX_COUNTED, SEARCH_LIMIT_DEFAULTS.maxCounted, 'LATTICE_SEARCH_MAX_COUNTED'),
    },
    clientSecretLifetime: intOf(env.LATTICE_CLIENT_SECRET_LIFETIME, 0, 'LATTICE_CLIENT_SECRET_LIFETIME'),
    accessTokenLifetime: intOf(env.LATTICE_TOKEN_LIFETIME, 3600, 'LATTICE_TOKEN_LIFETIME'),
    bundleMaxEntries: intOf(env.LATTICE_BUNDLE_MAX_ENTRIES, 10_000, 'LATTICE_BUNDLE_MAX_ENTRIES'),
    bundleEntryMs: intOf(env.LATTICE_BUNDLE_ENTRY_MS, 30, 'LATTICE_BUNDLE_ENTRY_MS'),
    profileMaxElements: intOf(env.LATTICE_PROFILE_MAX_ELEMENTS, 50_000, 'LATTICE_PROFILE_MAX_ELEMENTS') || 50_000,
    profileLimits: {
      maxWork: intOf(env.LATTICE_PROFILE_MAX_WORK, 200_000, 'LATTICE_PROFILE_MAX_WORK') || 200_000,
      maxInvariants: intOf(env.LATTICE_PROFILE_MAX_INVARIANTS, 20_000, 'LATTICE_PROFILE_MAX_INVARIANTS') || 20_000,
      maxExpressionLength: intOf(env.LATTICE_PROFILE_MAX_EXPRESSION, 4_000, 'LATTICE_PROFILE_MAX_EXPRESSION') || 4_000,
    },
    fhirpathTimeoutMs: positiveIntOf(env.LATTICE_FHIRPATH_TIMEOUT, 1000, 'LATTICE_FHIRPATH_TIMEOUT'),
    importBatch: intOf(env.LATTICE_IMPORT_BATCH, 1000, 'LATTICE_IMPORT_BATCH') || 1000,
    importWorkers: intOf(env.LATTICE_IMPORT_WORKERS, Math.max(1, Math.min(4, availableParallelism() - 1)), 'LATTICE_IMPORT_WORKERS'),
    bulkExport: {
      maxJobsPerCaller: intOf(env.LATTICE_EXPORT_MAX_JOBS, 2, 'LATTICE_EXPORT_MAX_JOBS') || 1,
      expirySeconds: intOf(env.LATTICE_EXPORT_EXPIRY, 86_400, 'LATTICE_EXPORT_EXPIRY'),
      pageSize: intOf(env.LATTICE_EXPORT_PAGE, 1000, 'LATTICE_EXPORT_PAGE') || 1000,
      leaseMs: intOf(env.LATTICE_EXPORT_LEASE_MS, 30_000, 'LATTICE_EXPORT_LEASE_MS') || 30_000,
      pollMs: intOf(env.LATTICE_EXPORT_POLL_MS, 30_000, 'LATTICE_EXPORT_POLL_MS') || 30_000,
      maxAttempts: intOf(env.LATTICE_EXPORT_MAX_ATTEMPTS, 5, 'LATTICE_EXPORT_MAX_ATTEMPTS') || 5,
    },
    email: {
      from: env.LATTICE_EMAIL_FROM || undefined,
      pollMs: intOf(env.LATTICE_EMAIL_POLL_MS, 5_000, 'LATTICE_EMAIL_POLL_MS'),
      retryBaseMs: intOf(env.LATTICE_EMAIL_RETRY_MS, 10_000, 'LATTICE_EMAIL_RETRY_MS'),
      retryMaxMs: intOf(env.LATTICE_EMAIL_RETRY_MAX_MS, 15 * 60_000, 'LATTICE_EMAIL_RETRY_MAX_MS'),
      maxAttempts: intOf(env.LATTICE_EMAIL_MAX_ATTEMPTS, 12, 'LATTICE_EMAIL_MAX_ATTEMPTS'),
    },
    subscriptions: {
      allowPrivate: booleanOf(env.LATTICE_SUBSCRIPTION_ALLOW_PRIVATE, 'LATTICE_SUBSCRIPTION_ALLOW_PRIVATE'),
      pollMs: intOf(env.LATTICE_SUBSCRIPTION_POLL_MS, 5_000, 'LATTICE_SUBSCRIPTION_POLL_MS') || 5_000,
      retryBaseMs: intOf(env.LATTICE_SUBSCRIPTION_RETRY_MS, 10_000, 'LATTICE_SUBSCRIPTION_RETRY_MS'),
      retryMaxMs: intOf(env.LATTICE_SUBSCRIPTION_RETRY_MAX_MS, 15 * 60_000, 'LATTICE_SUBSCRIPTION_RETRY_MAX_MS'),
      maxAttempts: intOf(env.LATTICE_SUBSCRIPTION_MAX_ATTEMPTS, 10, 'LATTICE_SUBSCRIPTION_MAX_ATTEMPTS') || 1,
      timeoutMs: intOf(env.LATTICE_SUBSCRIPTION_TIMEOUT_MS, 10_000, 'LATTICE_SUBSCRIPTION_TIMEOUT_MS') || 10_000,
    },
  };
}

/** scrypt cost bounds (log2 N): 10 = 1 MiB per hash, for tests only; 15 = 32 MiB; 17 = 128 MiB. */
export const DEFAULT_PASSWORD_COST = 15;
export const MIN_PASSWORD_COST = 10;
export const MAX_PASSWORD_COST = 17;

function passwordCostOf(value: string | undefined): number {
  const cost = intOf(value, DEFAULT_PASSWORD_COST, 'LATTICE_PASSWORD_COST');
  if (cost < MIN_PASSWORD_COST || cost > MAX_PASSWORD_COST) {
    throw new Error(`LATTICE_PASSWORD_COST must be between ${MIN_PASSWORD_COST} and ${MAX_PASSWORD_COST}, got '${value}'`);
  }
  return cost;
}

/** A nesting bound of a search: at most SEARCH_NESTING_CEILING. */
function nestingOf(value: string | undefined, fallback: number, name: string): number {
  const n = intOf(value, fallback, name);
  if (n > SEARCH_NESTING_CEILING) throw new Error(`${name} must be at most ${SEARCH_NESTING_CEILING}, got '${value}'`);
  return n;
}

/** Default memory budget of the search answer cache, MB. */
export const DEFAULT_SEARCH_CACHE_MB = 64;

/** `LATTICE_SEARCH_CACHE`: `on`/unset → the default budget, `off` → 0, else a budget in MB. */
function searchCacheOf(value: string | undefined): number {
  if (value === undefined || value === '' || value === 'on') return DEFAULT_SEARCH_CACHE_MB;
  if (value === 'off') return 0;
  if (!/^\d+$/.test(value)) throw new Error(`LATTICE_SEARCH_CACHE must be 'on', 'off' or a size in MB, got '${value}'`);
  return Number(value);
}

function booleanOf(value: string | undefined, name: string): boolean {
  if (value === undefined || value === '' || value === 'false' || value === '0') return false;
  if (value === 'true' || value === '1') return true;
  throw new Error(`${name} must be 'true' or 'false', got '${value}'`);
}

/** A limit that must let something through: 0 is refused (it would stop everything). */
function positiveIntOf(value: string | undefined, fallback: number, name: string): number {
  const n = intOf(value, fallback, name);
  if (n === 0) throw new Error(`${name} must be a positive integer, got '${value}'`);
  return n;
}

function intOf(value: string | undefined, fallback: number, name: string): number {
  if (value === undefined || value === '') return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a non-negative integer, got '${value}'`);
  return n;
}
