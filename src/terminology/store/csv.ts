/**
 * A streaming reader of RFC 4180 CSV (docs/terminology.md#loinc): comma-separated fields,
 * optionally in double quotes, `""` for a quote inside quotes, line breaks inside quotes kept;
 * CRLF or LF line ends; a UTF-8 byte-order mark is dropped. Rows are yielded as they complete,
 * so memory is bounded by one chunk and one row, whatever the file.
 */
export async function* csvRows(source: AsyncIterable<Buffer | string>): AsyncGenerator<string[]> {
  const decoder = new TextDecoder('utf-8');
  let row: string[] = [];
  let field = '';
  let quoted = false; // inside a quoted field
  let afterQuote = false; // a quote seen inside a quoted field: closing, or the first of `""`
  let first = true;
  let pendingCR = false;
  const rows: string[][] = [];
  const endRow = () => {
    row.push(field);
    field = '';
    if (!(row.length === 1 && row[0] === '')) rows.push(row);
    row = [];
  };
  const feed = (text: string) => {
    let start = 0; // start of the plain run not yet copied into `field`
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
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
        endRow();
        start = i + 1;
        pendingCR = c === 13;
      } else if (c === 34 && field === '' && start === i) {
        quoted = true;
        start = i + 1;
      }
    }
    if (!afterQuote) field += text.slice(start);
  };
  for await (const chunk of source) {
    let text = typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true });
    if (first) {
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
      first = text.length === 0;
    }
    feed(text);
    for (const r of rows) yield r;
    rows.length = 0;
  }
  feed(decoder.decode());
  if (quoted && !afterQuote) throw new Error('CSV: a quoted field is not closed at the end of the file');
  if (field !== '' || row.length > 0) endRow();
  for (const r of rows) yield r;
}

/** Rows as objects keyed by the header row's names. */
export async function* csvRecords(source: AsyncIterable<Buffer | string>): AsyncGenerator<Record<string, string>> {
  let header: string[] | undefined;
  for await (const row of csvRows(source)) {
    if (!header) {
      header = row.map((h) => h.trim());
      continue;
    }
    const rec: Record<string, string> = {};
    for (let i = 0; i < header.length; i++) rec[header[i]] = row[i] ?? '';
    yield rec;
  }
}
