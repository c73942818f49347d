import type { OperationOutcomeIssue, Resource } from '@medplum/fhirtypes';
import type { AuthInfo } from './auth.js';
import type { Queryable } from './database.js';
import type { Scope } from './scope.js';

/** One entry of a history Bundle. */
export interface HistoryEntry {
  resource: Resource;
  deleted: boolean;
  versionId: string;
  lastUpdated: string;
  /** The method that produced this version (POST for the first, PUT, DELETE). */
  method: 'POST' | 'PUT' | 'DELETE';
}

export interface UpdateResult {
  resource: Resource;
  /** True when the PUT created the resource. */
  created: boolean;
}

/** Search parameters that shape the answer (page, order, shape, totals, includes) instead of selecting resources. */
export const SEARCH_CONTROL_PARAMETERS: ReadonlySet<string> = new Set(['_count', '_offset', '_cursor', '_sort', '_summary', '_elements', '_total', '_include', '_revinclude']);

/** Most resources a search answers per page (a larger `_count` is lowered to it). */
export const MAX_SEARCH_COUNT = 1000;

/** One search, as the REST layer received it (repeated names allowed, modifiers in the name). */
export interface SearchQuery {
  /**
   * The type searched, or `*` = every type of `compartment` (then only `_id`, `_lastUpdated` and
   * the result parameters are accepted, and `_sort` only by those two), or, without a
   * compartment, the `types` of a system search (`GET [base]?_type=A,B`: a parameter must be
   * defined for each of them; `_sort` only by `_id`/`_lastUpdated`).
   */
  resourceType: string;
  /** The resource types of a system search (`resourceType` `*` without `compartment`). */
  types?: string[];
  /** Query pairs as given, e.g. [['name:exact','Eve'], ['_count','10']]; `_format`/`_pretty` removed. */
  params: Array<[string, string]>;
  /**
   * Only resources in this compartment (docs/rest.md#compartment-search; one of the five R4
   * compartments): the compartment's own resource, and resources that reference it through the
   * parameters the R4 CompartmentDefinition names for their type. The caller checks the compartment resource is
   * visible first. `types` narrows a `*` search.
   */
  compartment?: { resourceType: 'Patient' | 'Encounter' | 'RelatedPerson' | 'Practitioner' | 'Device'; id: string; types?: string[] };
}

export interface SearchResult {
  resources: Resource[];
  /** Total number of matches (all pages); see `totalKind`. */
  total: number;
  /**
   * How `total` was found: `exact` (absent = exact), `estimate` (the planner's, `_total=estimate`)
   * or `lower` (not counted: `_total=none`, or more matches than a search without `_total` counts —
   * at least this many, more than the page when another follows).
   */
  totalKind?: 'exact' | 'estimate' | 'lower';
  /** Page size and offset used (count is 0 for `_summary=count`). */
  count: number;
  offset: number;
  /**
   * Where the next page starts (its `_cursor`, docs/rest.md#search) when one follows and the
   * order allows keyset paging (the default order, `_lastUpdated`, `_id`); absent otherwise.
   */
  cursor?: string;
  /**
   * Search mode of each entry of `resources`, in order: `match`, or `include` for resources
   * added by `_include`/`_revinclude` (they follow the matches). Absent = all matches.
   */
  modes?: Array<'match' | 'include'>;
}

/**
 * One page of a bulk export (docs/export.md#consistency): resources of one type in `id` order
 * after `after`, each as the version that was current at `asOf` (the export's transaction time;
 * resources created after it are absent), within the caller's project (shared content is not
 * exported) and access rights.
 */
export interface ExportPageQuery {
  resourceType: string;
  /** Keyset: only ids that sort after this one (the database's order of ids). */
  after?: string;
  /** Rows read for this page (the page may hold fewer resources: see `ExportPage.last`). */
  count: number;
  /** ISO instant: the export's transaction time. */
  asOf: string;
  /** ISO instant: only versions last updated after it (`_since`). */
  since?: string;
  /**
   * `_typeFilter` searches of this type (query pairs each, no result parameters): a resource is
   * exported when it matches one of them; undefined = every resource.
   */
  filters?: Array<Array<[string, string]>>;
  /** Only resources in the Patient compartment of one of these ids; `any` = of any Patient. */
  patients?: string[] | 'any';
}

export interface ExportPage {
  /** The resources as JSON text, one per line of an NDJSON file (secrets redacted). */
  lines: string[];
  /** The id of the last row read (the next page's `after`); undefined when no row was read (the type is done). */
  last?: string;
  /** True when fewer rows than `count` were read: no page follows. */
  done: boolean;
}

/**
 * Stored resources as one caller sees them: the only way handlers read or write data. Every
 * method applies the caller's scope; resources of another project behave as if they did not
 * exist. Each change (current row, history row, search index, hooks) is one transaction.
 */
export interface ResourceRepository {
  readonly auth: AuthInfo;
  /** The tenancy rule for this caller (for modules that query their own tables). */
  readonly scope: Scope;
  /** Creates a resource with a new server-assigned id (or `options.id`). */
  create<T extends Resource>(resource: T, options?: { id?: string }): Promise<T>;
  /** The current version; 404 when absent or invisible, 410 when deleted. */
  read<T extends Resource = Resource>(resourceType: string, id: string): Promise<T>;
  /** The current version, or undefined (absent, invisible or deleted). */
  tryRead<T extends Resource = Resource>(resourceType: string, id: string): Promise<T | undefined>;
  /** One version (vread); a deleted version answers 410. */
  readVersion(resourceType: string, id: string, versionId: string): Promise<Resource>;
  /** Updates (or creates with the client's id); `ifMatch` is the expected current version id. */
  update(resource: Resource, options?: { ifMatch?: string }): Promise<UpdateResult>;
  /**
   * Deletes; an unknown or invisible id is 404; deleting a deleted resource is a no-op (false).
   * `ifMatch` is the expected current version id (412 when stale).
   */
  delete(resourceType: string, id: string, options?: { ifMatch?: string }): Promise<boolean>;
  /**
   * History of one resource (`id` given), of a type, or of everything visible (`resourceType`
   * undefined), newest first. Type and system history leave out shared content (no project: the
   * base terminologies) unless `shared` is true (docs/rest.md#history).
   */
  history(
    resourceType: string | undefined,
    id: string | undefined,
    page: { count: number; offset: number; since?: string; shared?: boolean },
  ): Promise<{ entries: HistoryEntry[]; total: number }>;
  /** Searches resources of one type within the caller's scope. */
  search(query: SearchQuery): Promise<SearchResult>;
  /** One page of a bulk export of one type (docs/export.md); 403 when the caller may not search the type. */
  exportPage(query: ExportPageQuery): Promise<ExportPage>;
  /**
   * Runs `fn` with this repository joined to ONE database transaction (same caller, same
   * scope): every read, search and write of the repository `fn` gets commits when `fn`
   * resolves and rolls back when it throws (a FHIR transaction Bundle, a conditional write).
   * Called on a repository that is already in a transaction, it joins that one.
   * On PostgreSQL `fn` may run again after a serialization failure: it must not keep state.
   * `timeoutMs` replaces the transaction's time limit (a transaction Bundle's, scaled by size).
   * `batchCreates`: creates of types no hook sees are held back and written together in one
   * statement before the transaction's next statement or its commit (docs/rest.md#cost-of-a-request):
   * reads in it still see them; a failing write fails the transaction at that point.
   */
  transaction<T>(fn: (repo: ResourceRepository) => Promise<T>, options?: { timeoutMs?: number; batchCreates?: boolean }): Promise<T>;
  /**
   * `search`, after taking a transaction-scoped lock on the normalised search (type and sorted
   * parameters): two identical conditional writes (create `If-None-Exist`, conditional
   * update/delete) run one after the other, so the second sees what the first wrote. Only
   * valid on a repository given by `transaction` (the lock lasts until it ends); elsewhere it
   * throws.
   */
  lockedSearch(query: SearchQuery): Promise<SearchResult>;
}

/**
 * The system's repository (no project, sees everything), for features that act on behalf of
 * the server (start-up, invite, loaders). It can also join a caller's open transaction, so
 * several changes commit or roll back together.
 */
export interface SystemRepository extends ResourceRepository {
  inTransaction(tx: Queryable): ResourceRepository;
  /**
   * Stores resources whose ids are not stored yet as their first version, inside `tx` (a bulk
   * load, docs/rest.md#bulk-load): one COPY per table for all of them where `tx` can COPY
   * (resource, history and index rows; storage/copy-load.ts), else one statement, or one write
   * each for types a hook mirrors. `projectId` owns them (shared when absent).
   * `prepared`: what the storage layer made ahead for some of `resources` (a bulk load's worker
   * threads prepare the next batches while the database writes: storage/bulk-prepare) — their
   * stored JSON and index rows, with `now` their meta.lastUpdated; used for types no hook sees,
   * made here for the others.
   */
  insertNew(tx: Queryable, resources: Resource[], projectId: string | undefined, prepared?: { now: string; rows: ReadonlyMap<Resource, unknown> }): Promise<void>;
  /** A clinical bulk load into this storage, in batches of one transaction each (docs/rest.md#bulk-load). */
  bulkLoad(options?: BulkLoadOptions): BulkLoad;
}

/** A refusal of a bulk load, naming where the resource came from (e.g. `line 12`). */
export class BulkLoadError extends Error {}

export interface BulkLoadOptions {
  /** Owner of the loaded resources; shared content when absent. */
  projectId?: string;
  /** Resources per batch (one transaction each); default 1000. */
  batchSize?: number;
  /** Checks a resource before it is taken (e.g. structural validation); issues refuse it. */
  validate?: (resource: Resource) => OperationOutcomeIssue[];
  /** Called after each stored batch with the number of resources stored so far. */
  progress?: (stored: number) => void;
  /**
   * Worker threads that prepare the batches (validation, index rows, COPY text: storage/bulk-prepare)
   * while the database writes: `entry` is the program's entry module, which runs a worker's loop
   * when started as one (src/main.ts); `threads` how many (`LATTICE_IMPORT_WORKERS`). Used when
   * `validate` is the structural validation (validate-resource.ts) or absent; else, or without
   * this, batches are prepared in the caller's thread.
   */
  workers?: { entry: URL | string; threads: number };
}

/**
 * What a refused or failed load says it kept: `N resources of <what> are stored`, and when the last
 * ones' flush to disk could not be confirmed, that too (a report must not claim more than it knows).
 */
export function storedNote(load: BulkLoad, what: string): string {
  const note = `${load.stored} resources of ${what} are stored`;
  if (load.unconfirmed === 0) return note;
  return `${note}; the last ${load.unconfirmed} were committed but not confirmed on disk (the database failed at the load's end: check them)`;
}

/** A bulk load in progress (storage/bulk-load.ts): resources in, batches stored as they fill. */
export interface BulkLoad {
  /** Resources stored so far (whole batches). */
  readonly stored: number;
  /**
   * Of `stored`, those committed whose flush to disk `settle` could not confirm (PostgreSQL: the
   * batches commit without waiting for the disk and the closing barrier failed); 0 otherwise.
   */
  readonly unconfirmed: number;
  /** Takes one resource; `where` names its place in the input (`line 12`), `fullUrl` its Bundle entry's. Throws BulkLoadError. */
  add(value: unknown, where: string, fullUrl?: string): Promise<void>;
  /** A Bundle ended: its `urn:uuid:` full URLs mean nothing to the next one. */
  endBundle(): Promise<void>;
  /** Stores what is pending; returns the number of resources stored by the load. */
  finish(): Promise<number>;
  /** Waits for the batch in flight, whatever its outcome. */
  settle(): Promise<void>;
}

/**
 * Extension points of every write, so features (search index, terminology index, account
 * mirrors) join a change without the repository knowing them. `afterWrite`/`afterDelete` run
 * inside the change's transaction: if they throw, nothing of the change is kept.
 */
export interface ResourceHook {
  /** Resource types this hook cares about; undefined = all. */
  types?: readonly string[];
  /**
   * For a hook whose work depends on stored data that can change at any time (Subscriptions
   * watching a type): it takes part in a write of `resourceType` only while this answers true.
   * What it answers follows the change feed; before asking, the repository waits until this
   * node has heard every change committed before the request (`Database.caughtUp`), so a write
   * never misses what an earlier acknowledged write on any node set up.
   */
  watches?(resourceType: string): boolean;
  /** Checks or adjusts a resource before it is stored (throw a FhirError to refuse). */
  beforeWrite?(resource: Resource, previous: Resource | undefined, auth: AuthInfo, db: Queryable): Promise<void> | void;
  /** Checks a delete before it happens (throw a FhirError to refuse). */
  beforeDelete?(previous: Resource, auth: AuthInfo, tx: Queryable): Promise<void> | void;
  /** Runs in the write transaction after the new version is stored; `auth` is the writer. */
  afterWrite?(tx: Queryable, resource: Resource, previous: Resource | undefined, auth: AuthInfo): Promise<void>;
  /** Runs in the delete transaction after the resource is marked deleted. */
  afterDelete?(tx: Queryable, previous: Resource): Promise<void>;
  /** Removes secrets before a resource leaves the server (e.g. password hashes). */
  redact?(resource: Resource): Resource;
}
