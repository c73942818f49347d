/**
 * A release file (RF2, LOINC CSV, a zip member) that is not what it should be
 * (docs/terminology.md#checks-on-release-files): the message names the file and, when known, the
 * line. `lattice import` prints it and exits 1; the import route answers it as a 400.
 */
export class ReleaseFileError extends Error {
  constructor(
    readonly file: string,
    readonly line: number | undefined,
    problem: string,
  ) {
    super(`${file}${line !== undefined ? ` line ${line}` : ''}: ${problem}`);
    this.name = 'ReleaseFileError';
  }
}

/** The longest line of a release file, unless configured (`LATTICE_TX_IMPORT_MAX_LINE`). */
export const DEFAULT_MAX_LINE = 1_000_000;

/** The error of a line past the bound. */
export function lineTooLong(file: string, line: number, maxLine: number): ReleaseFileError {
  return new ReleaseFileError(file, line, `the line is longer than ${maxLine} bytes (LATTICE_TX_IMPORT_MAX_LINE)`);
}
