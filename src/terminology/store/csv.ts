import { DEFAULT_MAX_LINE, lineTooLong, ReleaseFileError } from './release-file-error.js';

/**
 * A streaming reader of RFC 4180 CSV (docs/terminology.md#loinc): comma-separated fields,
 * optionally in double quotes, `""` for a quote inside quotes, line breaks inside quotes kept;
 * CRLF or LF line ends; a UTF-8 byte-order mark is dropped. Rows are yielded as they complete,
 * so memory is bounded by one chunk and one row, whatever the file. A row longer than
 * `maxLine` characters, a NUL character or bytes that are not UTF-8 are a ReleaseFileError
 * naming the file (`name`) and line (docs/terminology.md#checks-on-release-files).
 */
export interface CsvOptions {
  /** The file's name, for messages. */
  name?: string;
  /** Characters of one row (LATTICE_TX_IMPORT_MAX_LINE); DEFAULT_MAX_LINE when absent. */
  maxLine?: number;
  /** Set to the line each yielded row starts on. */
  position?: { line: number };
}

export async function* csvRows(source: AsyncIterable<Buffer | string>, options: CsvOptions = {}): AsyncGenerator<string[]> {
  const name = options.name ?? 'CSV';
  const maxLine = options.maxLine ?? DEFAULT_MAX_LINE;
  const decoder = new TextDecoder('utf-8', { fatal: true });
  let line = 1; // the line being read
  let rowLine = 1; // the line the current row started on
  let consumed = 0; // characters fed before the current text
  let rowStart = 0; // where the current row started (in characters fed)
  const rowLines: number[] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false; // inside a quoted field
  let afterQuote = false; // a quote seen inside a quoted field: closing, or the first of `""`
  let first = true;
  let pendingCR = false;
  const rows: string[][] = [];
  const endRow = (at: number, cr = false) => {
    row.push(field);
    field = '';
    if (at - rowStart > maxLine) throw lineTooLong(name, rowLine, maxLine);
    if (!(row.length === 1 && row[0] === '')) {
      rows.push(row);
      rowLines.push(rowLine);
    }
    row = [];
    rowStart = at + 1;
    // after a CR the LF that ends the line is still to come
    rowLine = cr ? line + 1 : line;
  };
  const feed = (text: string) => {
    let start = 0; // start of the plain run not yet copied into `field`
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c === 10) line++;
      else if (c === 0) throw new ReleaseFileError(name, line, 'the line holds a NUL character');
      if (quoted) {
        if (afterQuote) {
          afterQuote = false;
          if (c === 34) {
            // `""`: one quote (the first was not copied)
            start = i;
            continue;
          }
          quoted = false; // the quote closed the field: fall through to the unquoted handling
        } else {
          if (c === 34) {
            field += text.slice(start, i);
            afterQuote = true;
            start = i + 1;
          }
          continue;
        }
      }
      if (pendingCR) {
        pendingCR = false;
        if (c === 10) {
          start = i + 1;
          continue;
        }
      }
      if (c === 44) {
        row.push(field + text.slice(start, i));
        field = '';
        start = i + 1;
      } else if (c === 10 || c === 13) {
        field += text.slice(start, i);
        endRow(consumed + i, c === 13);
        start = i + 1;
        pendingCR = c === 13;
      } else if (c === 34 && field === '' && start === i) {
        quoted = true;
        start = i + 1;
      }
    }
    if (!afterQuote) field += text.slice(start);
    consumed += text.length;
    if (consumed - rowStart > maxLine) throw lineTooLong(name, rowLine, maxLine);
  };
  const decode = (chunk?: Buffer): string => {
    try {
      return chunk ? decoder.decode(chunk, { stream: true }) : decoder.decode();
    } catch {
      // Where: the first replaced character of this chunk, read leniently.
      const lenient = chunk ? new TextDecoder('utf-8').decode(chunk) : '';
      const bad = lenient.indexOf('\uFFFD');
      const before = bad > 0 ? lenient.slice(0, bad).split('\n').length - 1 : 0;
      throw new ReleaseFileError(name, line + before, 'the line is not valid UTF-8');
    }
  };
  const flush = function* (): Generator<string[]> {
    for (let k = 0; k < rows.length; k++) {
      if (options.position) options.position.line = rowLines[k];
      yield rows[k];
    }
    rows.length = 0;
    rowLines.length = 0;
  };
  for await (const chunk of source) {
    let text = typeof chunk === 'string' ? chunk : decode(chunk);
    if (first) {
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
      first = text.length === 0;
    }
    feed(text);
    yield* flush();
  }
  feed(decode());
  if (quoted && !afterQuote) throw new ReleaseFileError(name, rowLine, 'a quoted field is not closed at the end of the file (is the file cut short?)');
  if (field !== '' || row.length > 0) endRow(consumed);
  yield* flush();
}

/** Rows as objects keyed by the header row's names; a row with another number of fields is a ReleaseFileError. */
export async function* csvRecords(source: AsyncIterable<Buffer | string>, options: CsvOptions = {}): AsyncGenerator<Record<string, string>> {
  let header: string[] | undefined;
  const position = options.position ?? { line: 0 };
  for await (const row of csvRows(source, { ...options, position })) {
    if (!header) {
      header = row.map((h) => h.trim());
      continue;
    }
    if (row.length !== header.length) {
      throw new ReleaseFileError(options.name ?? 'CSV', position.line, `${row.length} fields where the header has ${header.length} (is the file cut short?)`);
    }
    const rec: Record<string, string> = {};
    for (let i = 0; i < header.length; i++) rec[header[i]] = row[i] ?? '';
    yield rec;
  }
}
