/**
 * What one export job exports, fixed at kick-off (docs/export.md#what-an-export-contains) and
 * stored with the job, so any node can run or resume it.
 */
export interface ExportPlan {
  level: 'system' | 'patient' | 'group';
  /** The resource types, in the order they are exported (one output file each). */
  types: string[];
  /** ISO instant (`_since`). */
  since?: string;
  /** `_typeFilter` searches by type (query pairs each; a resource matching one is exported). */
  typeFilters: Record<string, Array<Array<[string, string]>>>;
  /** Patient and Group exports: the Patients whose compartments are exported (`any` = every Patient). */
  patients?: string[] | 'any';
  /** `_elements`: top-level elements kept by type (`*` = every type). */
  elements?: Record<string, string[]>;
}

/** Where a job's next page starts: the index in `ExportPlan.types` and the last id exported of that type. */
export interface ExportCursor {
  type: number;
  after?: string;
}

/** The file name of a type's output (`Patient.ndjson`) and of the error file. */
export const ERROR_FILE = 'errors.ndjson';
export const outputFile = (type: string): string => `${type}.ndjson`;

/** The media type of every file (`_outputFormat` accepts it and its two abbreviations). */
export const NDJSON = 'application/fhir+ndjson';
export const OUTPUT_FORMATS: readonly string[] = [NDJSON, 'application/ndjson', 'ndjson'];
