/**
 * One input parameter as supplied by the client, whatever the transport: a POSTed
 * `Parameters.parameter` entry or a GET query pair (already converted to its declared type).
 * `parse-input.ts` checks these against the definition and builds the handler's values.
 */
export interface InputEntry {
  name: string;
  /** FHIRPath of the entry in the request body (`Parameters.parameter[2]`); absent for query pairs. */
  path?: string;
  /** Type of the value[x] given (`Coding` for `valueCoding`); absent when the entry has no value[x]. */
  valueType?: string;
  value?: unknown;
  resource?: unknown;
  part?: InputEntry[];
}
