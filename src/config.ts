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
  /** scrypt cost (log2 N) of new password hashes (docs/auth.md#passwords-and-secrets). */
  passwordCost: number;
  /** How long one request may use the database (docs/errors.md#database-limits); 0 = no limit. */
  database: { statementTimeoutMs: number; acquireTimeoutMs: number; poolSize: number };
  /** Bounds on one search (docs/rest.md#limits). */
  searchLimits: {
    maxParameters: number;
    maxValues: number;
    maxChain: number;
    maxIncludes: number;
    maxIncluded: number;
    maxCodes: number;
    maxHasDepth: number;
    maxFilterTerms: number;
    maxCounted: number;
  };
  /** Lifetime of a client application secret in seconds; 0 = it never expires (docs/auth.md#client-secrets). */
  clientSecretLifetime: number;
  /** Access-token lifetime in seconds. */
  accessTokenLifetime: number;
  /** Resources per batch of a clinical bulk load (`lattice import`, `LATTICE_IMPORT_BATCH`). */
  importBatch: number;
  /** Most entries a batch/transaction Bundle may have (default 10000). */
  bundleMaxEntries: number;
  /** Time a transaction Bundle gets per entry beyond the transaction limit (ms, `LATTICE_BUNDLE_ENTRY_MS`). */
  bundleEntryMs: number;
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
  /** `LATTICE_READ_CACHE` (default on; `off`): current resource rows kept in memory (storage/row-cache.ts). */
  readCache: boolean;
  /** `lattice import`: a CodeSystem with more concepts is indexed staged (docs/terminology.md#atomic-imports). */
  txStagedImportAbove: number;
  /** Bounds on one terminology request (docs/terminology.md#limits). */
  terminologyLimits: { maxFilters: number; maxCodings: number; maxValueSets: number; maxIncludes: number; maxInlineConcepts: number };
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
    txPreload: (env.LATTICE_TX_PRELOAD ?? '').split(',').map((s) => s.trim()).filter(Boolean),
    txStagedImportAbove: intOf(env.LATTICE_TX_STAGED_IMPORT_ABOVE, 20_000, 'LATTICE_TX_STAGED_IMPORT_ABOVE'),
    terminologyLimits: {
      maxFilters: intOf(env.LATTICE_TX_MAX_FILTERS, 50, 'LATTICE_TX_MAX_FILTERS'),
      maxCodings: intOf(env.LATTICE_TX_MAX_CODINGS, 10_000, 'LATTICE_TX_MAX_CODINGS'),
      maxValueSets: intOf(env.LATTICE_TX_MAX_VALUESETS, 1_000, 'LATTICE_TX_MAX_VALUESETS'),
      maxIncludes: intOf(env.LATTICE_TX_MAX_INCLUDES, 5_000, 'LATTICE_TX_MAX_INCLUDES'),
      maxInlineConcepts: intOf(env.LATTICE_TX_MAX_INLINE_CONCEPTS, 25_000, 'LATTICE_TX_MAX_INLINE_CONCEPTS'),
    },
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
    passwordCost: passwordCostOf(env.LATTICE_PASSWORD_COST),
    searchLimits: {
      maxParameters: intOf(env.LATTICE_SEARCH_MAX_PARAMETERS, 30, 'LATTICE_SEARCH_MAX_PARAMETERS'),
      maxValues: intOf(env.LATTICE_SEARCH_MAX_VALUES, 100, 'LATTICE_SEARCH_MAX_VALUES'),
      maxChain: intOf(env.LATTICE_SEARCH_MAX_CHAIN, 3, 'LATTICE_SEARCH_MAX_CHAIN'),
      maxIncludes: intOf(env.LATTICE_SEARCH_MAX_INCLUDES, 10, 'LATTICE_SEARCH_MAX_INCLUDES'),
      maxIncluded: intOf(env.LATTICE_SEARCH_MAX_INCLUDED, 1000, 'LATTICE_SEARCH_MAX_INCLUDED'),
      maxCodes: intOf(env.LATTICE_SEARCH_MAX_CODES, 10_000, 'LATTICE_SEARCH_MAX_CODES'),
      maxHasDepth: intOf(env.LATTICE_SEARCH_MAX_HAS_DEPTH, 2, 'LATTICE_SEARCH_MAX_HAS_DEPTH'),
      maxFilterTerms: intOf(env.LATTICE_SEARCH_MAX_FILTER_TERMS, 20, 'LATTICE_SEARCH_MAX_FILTER_TERMS'),
      maxCounted: intOf(env.LATTICE_SEARCH_MAX_COUNTED, 1000, 'LATTICE_SEARCH_MAX_COUNTED'),
    },
    clientSecretLifetime: intOf(env.LATTICE_CLIENT_SECRET_LIFETIME, 0, 'LATTICE_CLIENT_SECRET_LIFETIME'),
    accessTokenLifetime: intOf(env.LATTICE_TOKEN_LIFETIME, 3600, 'LATTICE_TOKEN_LIFETIME'),
    bundleMaxEntries: intOf(env.LATTICE_BUNDLE_MAX_ENTRIES, 10_000, 'LATTICE_BUNDLE_MAX_ENTRIES'),
    bundleEntryMs: intOf(env.LATTICE_BUNDLE_ENTRY_MS, 30, 'LATTICE_BUNDLE_ENTRY_MS'),
    importBatch: intOf(env.LATTICE_IMPORT_BATCH, 1000, 'LATTICE_IMPORT_BATCH') || 1000,
    email: {
      from: env.LATTICE_EMAIL_FROM || undefined,
      pollMs: intOf(env.LATTICE_EMAIL_POLL_MS, 5_000, 'LATTICE_EMAIL_POLL_MS'),
      retryBaseMs: intOf(env.LATTICE_EMAIL_RETRY_MS, 10_000, 'LATTICE_EMAIL_RETRY_MS'),
      retryMaxMs: intOf(env.LATTICE_EMAIL_RETRY_MAX_MS, 15 * 60_000, 'LATTICE_EMAIL_RETRY_MAX_MS'),
      maxAttempts: intOf(env.LATTICE_EMAIL_MAX_ATTEMPTS, 12, 'LATTICE_EMAIL_MAX_ATTEMPTS'),
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

function intOf(value: string | undefined, fallback: number, name: string): number {
  if (value === undefined || value === '') return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a non-negative integer, got '${value}'`);
  return n;
}
