/**
 * The environment variables a Lattice process reads (README "Configuration" has the full
 * meanings and defaults), grouped for `lattice --help`. test/cli-help.test.ts checks that every
 * variable src/config.ts reads is listed.
 */
export const ENVIRONMENT: Array<[group: string, variables: Array<[name: string, meaning: string]>]> = [
  [
    'server',
    [
      ['PORT', 'HTTP port (8080)'],
      ['HOST', 'listen address (127.0.0.1; 0.0.0.0 to expose)'],
      ['LATTICE_PUBLIC_URL', 'public base URL used in links and e-mails (http://localhost:<PORT>)'],
      ['LATTICE_TRUSTED_PROXIES', 'proxy addresses/CIDRs whose X-Forwarded-For names the client'],
      ['LATTICE_BODY_LIMIT', 'largest request body in bytes (16 MiB)'],
      ['LATTICE_WORKERS', 'server processes sharing the port (PostgreSQL: one per core; PGlite: 1, only 1)'],
      ['LOG_LEVEL', 'pino log level (info)'],
    ],
  ],
  [
    'database',
    [
      ['LATTICE_DATA_DIR', 'embedded PGlite data folder (./data; memory:// keeps data in memory)'],
      ['DATABASE_URL', 'PostgreSQL connection string; when set, PGlite is not used'],
      ['LATTICE_DB_STATEMENT_TIMEOUT', 'ms one request may use the database (30000)'],
      ['LATTICE_DB_ACQUIRE_TIMEOUT', 'ms a request waits for a connection or its turn (10000)'],
      ['LATTICE_DB_POOL_SIZE', 'PostgreSQL connections per process (10)'],
      ['LATTICE_READ_CACHE', 'off: read every resource from the database (on)'],
      ['LATTICE_SEARCH_CACHE', 'off: run every search; a number: MB of searches kept while nothing is written (on: 64)'],
    ],
  ],
  [
    'accounts and tokens',
    [
      ['LATTICE_ADMIN_EMAIL', 'super admin created on first start (admin@example.com)'],
      ['LATTICE_ADMIN_PASSWORD', 'its password (generated and printed once when unset)'],
      ['LATTICE_PASSWORD_COST', 'scrypt cost of new password hashes (15)'],
      ['LATTICE_TOKEN_LIFETIME', 'access-token lifetime in seconds (3600)'],
      ['LATTICE_CLIENT_SECRET_LIFETIME', 'client secret lifetime in seconds (0 = never expires)'],
    ],
  ],
  [
    'e-mail',
    [
      ['SMTP_URL', 'smtp://user:pass@host:port (unset: e-mails are written to standard error)'],
      ['LATTICE_EMAIL_FROM', 'From: of invite e-mails'],
      ['LATTICE_EMAIL_POLL_MS', 'how often the outbox sender looks for due messages (5000)'],
      ['LATTICE_EMAIL_RETRY_MS', 'first retry delay after a failed delivery (10000)'],
      ['LATTICE_EMAIL_RETRY_MAX_MS', 'longest retry delay (900000)'],
      ['LATTICE_EMAIL_MAX_ATTEMPTS', 'delivery attempts before a message is given up (12)'],
    ],
  ],
  [
    'Binary and bulk export',
    [
      ['LATTICE_BINARY_LIMIT', 'most bytes of one Binary content upload (1 GiB)'],
      ['LATTICE_BINARY_URL_LIFETIME', 'seconds a signed content URL stays valid (3600)'],
      ['LATTICE_BINARY_STAGE_IDLE', 'seconds an idle upload is kept before it is abandoned (600)'],
      ['LATTICE_EXPORT_MAX_JOBS', 'Bulk Data exports one caller may have queued or running (2)'],
      ['LATTICE_EXPORT_EXPIRY', 'seconds a finished export is kept (86400)'],
      ['LATTICE_EXPORT_PAGE', 'resources an export reads per page (1000)'],
      ['LATTICE_EXPORT_LEASE_MS', "how long a node's claim on an export job lasts"],
      ['LATTICE_EXPORT_POLL_MS', 'how often an idle node looks for export jobs'],
      ['LATTICE_EXPORT_MAX_ATTEMPTS', 'claims of one export job before it is given up (5)'],
    ],
  ],
  [
    'subscriptions',
    [
      ['LATTICE_SUBSCRIPTION_ALLOW_PRIVATE', 'true: rest-hooks may call loopback/private addresses (false)'],
      ['LATTICE_SUBSCRIPTION_POLL_MS', 'how often a node looks for due notifications (5000)'],
      ['LATTICE_SUBSCRIPTION_RETRY_MS', 'first retry delay after a failed rest-hook delivery (10000)'],
      ['LATTICE_SUBSCRIPTION_RETRY_MAX_MS', 'longest retry delay (900000)'],
      ['LATTICE_SUBSCRIPTION_MAX_ATTEMPTS', 'attempts before a Subscription is set to error (10)'],
      ['LATTICE_SUBSCRIPTION_TIMEOUT_MS', 'time one rest-hook delivery may take (10000)'],
    ],
  ],
  [
    'REST bounds',
    [
      ['LATTICE_BUNDLE_MAX_ENTRIES', 'most entries of a batch/transaction Bundle (10000)'],
      ['LATTICE_BUNDLE_ENTRY_MS', 'transaction time per entry on top of the statement timeout (30)'],
      ['LATTICE_PROFILE_MAX_ELEMENTS', 'elements one StructureDefinition snapshot may have, bases included (50000)'],
      ['LATTICE_PROFILE_MAX_WORK', 'element visits x checks of one profile validation (200000)'],
      ['LATTICE_PROFILE_MAX_INVARIANTS', 'FHIRPath invariant evaluations of one validation (20000)'],
      ['LATTICE_PROFILE_MAX_EXPRESSION', 'longest invariant expression evaluated, in characters (4000)'],
      ['LATTICE_FHIRPATH_TIMEOUT', 'ms one caller-written FHIRPath expression (PATCH path, held profile invariant) may run, in its own thread (1000)'],
      ['LATTICE_SEARCH_MAX_PARAMETERS', 'filter parameters of one search (30)'],
      ['LATTICE_SEARCH_MAX_VALUES', 'comma-separated values of one parameter (100)'],
      ['LATTICE_SEARCH_MAX_CHAIN', 'links of one chain (3)'],
      ['LATTICE_SEARCH_MAX_CODES', 'stored codes a terminology modifier may test (10000)'],
      ['LATTICE_SEARCH_MAX_HAS_DEPTH', 'nesting of _has (2)'],
      ['LATTICE_SEARCH_MAX_FILTER_TERMS', 'comparisons of one _filter (20)'],
      ['LATTICE_SEARCH_MAX_FILTER_DEPTH', 'nesting of parentheses in one _filter'],
      ['LATTICE_SEARCH_MAX_COUNTED', 'matches counted for a total without _total (1000)'],
      ['LATTICE_SEARCH_MAX_INCLUDES', '_include/_revinclude parameters of one search (10)'],
      ['LATTICE_SEARCH_MAX_INCLUDED', 'resources includes may add to one page (1000)'],
    ],
  ],
  [
    'terminology',
    [
      ['LATTICE_BASE_TERMINOLOGY', 'background | lazy: how the R4 base CodeSystems/ValueSets are written'],
      ['LATTICE_TX_CACHE_MB', 'memory budget of the terminology indexes in MB (1024)'],
      ['LATTICE_TX_PRELOAD', 'code-system canonicals indexed right after start (persisted: those with a persisted index; none)'],
      ['LATTICE_TX_INDEX_DIR', 'folder of the file copies of persisted terminology indexes (off: none)'],
      ['LATTICE_TX_STAGED_IMPORT_ABOVE', 'concepts above which an import is staged (20000)'],
      ['LATTICE_TX_MAX_FILTERS', 'filters of one value set compose (50)'],
      ['LATTICE_TX_MAX_CODINGS', 'codings of one codeableConcept in $validate-code (10000)'],
      ['LATTICE_TX_MAX_VALUESETS', 'value sets one evaluation reaches (1000)'],
      ['LATTICE_TX_MAX_INCLUDES', 'include/exclude entries one evaluation reaches (5000)'],
      ['LATTICE_TX_MAX_INLINE_CONCEPTS', 'concepts of an inline tx-resource CodeSystem (25000)'],
      ['LATTICE_TX_ECL_MAX_STEPS', 'steps of one ECL evaluation (20000000)'],
      ['LATTICE_TX_MAX_UCUM_CHARACTERS', 'characters of the UCUM expressions of one request (20000)'],
    ],
  ],
  [
    'lattice import',
    [
      ['LATTICE_IMPORT_BATCH', 'resources per transaction of a clinical import (1000)'],
      ['LATTICE_IMPORT_WORKERS', 'threads preparing a clinical import\'s batches; 0: none (the cores but one, at most 4)'],
      ['LATTICE_TX_IMPORT_MAX_LINE', 'longest line of an RF2/LOINC release file in bytes (1000000)'],
      ['LATTICE_TOKEN', 'bearer token of --url imports (instead of --token)'],
      ['LATTICE_CLIENT_ID', 'client id of --url imports (instead of --client-id)'],
      ['LATTICE_CLIENT_SECRET', 'client secret of --url imports (instead of --client-secret)'],
    ],
  ],
];

/** The variables as help text: one line each under its group. */
export function environmentText(): string {
  const width = Math.max(...ENVIRONMENT.flatMap(([, vars]) => vars.map(([name]) => name.length)));
  return ENVIRONMENT.map(([group, vars]) => `  ${group}:\n${vars.map(([name, meaning]) => `    ${name.padEnd(width)}  ${meaning}`).join('\n')}`).join('\n');
}
