import type { CodeSystemProperty, ValueSet } from '@medplum/fhirtypes';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Database } from '../core/database.js';
import type { ResourceRepository, SystemRepository } from '../core/repository.js';
import type { VersionRules } from './versions.js';

/** What the terminology feature is wired with (src/app.ts): its tables and the system repository. */
export interface TerminologyEnv {
  db: Database;
  system: SystemRepository;
  log: Logger;
  /** The bounds of limits.ts (defaults when absent). */
  config?: Pick<Config, 'terminologyLimits' | 'txStagedImportAbove' | 'txImportMaxLine'>;
}

/** An indexed code system (one row of `tx_code_system`). */
export interface CodeSystemInfo {
  key: number;
  resourceId: string;
  projectId: string | undefined;
  url: string;
  version: string | undefined;
  lastUpdated: string;
  content: string;
  caseSensitive: boolean;
  /** undefined = is-a. */
  hierarchyMeaning: string | undefined;
  supplements: string | undefined;
  language: string | undefined;
  name: string | undefined;
  title: string | undefined;
  propertyDefs: CodeSystemProperty[];
  conceptCount: number;
  /** Its publication status (status, experimental, standards-status), when it states one. */
  publication?: Publication;
}

/**
 * The publication status of a CodeSystem or ValueSet (docs/terminology.md#status-of-the-resources-used):
 * `status`, `experimental`, and the `structuredefinition-standards-status` extension.
 */
export interface Publication {
  status?: string;
  experimental?: boolean;
  standardsStatus?: string;
}

/** One concept of an indexed code system. */
export interface Concept {
  id: number;
  code: string;
  display: string | undefined;
  definition: string | undefined;
  inactive: boolean;
  abstract: boolean;
  status: string | undefined;
}

/** A designation of a concept (the display counts as one, in the code system's language). */
export interface Designation {
  language: string | undefined;
  use: { system?: string; code?: string; display?: string } | undefined;
  value: string;
  /** The designation's standard extensions (coding-sctdescid, standards-status), as given. */
  extension?: Array<{ url: string } & Record<string, unknown>>;
  /** The supplement (`url|version`) the designation comes from, when not from the code system itself. */
  source?: string;
  /**
   * A former designation and its status (a SNOMED CT inactive description: `inactive`): a
   * display that is valid with the INACTIVE_DISPLAY_FOUND warning, never listed as a designation.
   */
  retired?: string;
  /** Listed by `$lookup`, left out of an expansion's designations (a SNOMED CT synonym preferred in no dialect). */
  secondary?: boolean;
}

/**
 * What the terminology engine needs for one request: the database, the caller's repository
 * (its visibility decides which code systems and value sets exist for the caller) and the
 * resources supplied inline with the request (`tx-resource`).
 */
export interface TermContext {
  /** The terminology index tables (queried with `repo.scope`'s predicate). */
  db: Database;
  /** The caller's repository: its scope decides which code systems and value sets exist. */
  repo: ResourceRepository;
  /** What the feature was wired with (writing base terminologies on first use). */
  env: TerminologyEnv;
  log: Logger;
  /** Request-scoped code systems (tx-resource), indexed in memory only (code-system-index.ts#requestIndex). */
  inlineCodeSystems: CodeSystemInfo[];
  /** Request-scoped value sets (tx-resource). */
  inlineValueSets: ValueSet[];
  /** Supplements the request asked for (`useSupplement`): their designations and properties apply. */
  supplements: CodeSystemInfo[];
  /** `system-version`, `check-system-version`, `force-system-version` of the request (none when absent). */
  versionRules?: VersionRules;
  /** Per-request memo of resolutions and lookups (keyed by purpose + arguments). */
  memo: Map<string, Promise<unknown>>;
  /**
   * Answer from SQL instead of the in-memory index (the reference implementation; the
   * equivalence test compares both). Request-supplied code systems have no SQL rows.
   */
  sqlReference?: boolean;
}

/** A property value stored for a concept, as text with its declared type. */
export interface StoredProperty {
  code: string;
  type: string;
  value: string;
  system: string | undefined;
  display: string | undefined;
}

/** A tx-ecosystem issue before it becomes an OperationOutcome issue. */
export interface TxIssue {
  severity: 'error' | 'warning' | 'information';
  /** FHIR IssueType. */
  code: string;
  /** Code from http://hl7.org/fhir/tools/CodeSystem/tx-issue-type. */
  type: string;
  /** Message id of the reference server (operationoutcome-message-id extension). */
  id?: string;
  text: string;
  expression?: string;
  /** Whether the text is part of `message`; default: errors and warnings are, informational issues are not. */
  inMessage?: boolean;
}
