import { StringDecoder } from 'node:string_decoder';

/**
 * Reads a stream of top-level JSON values — one JSON document, or NDJSON (one value per line) —
 * in bounded memory (docs/terminology.md#cli-import). Each value is parsed whole, except that
 * the array under one of `splitKeys` at the top level of an object (a CodeSystem's `concept`, a
 * Bundle's `entry`) is handed out in batches of elements: `header` (the members before the
 * array), then `items` batches, then `end` (the members after it). Memory is bounded by the
 * largest element and a batch, not by the document: a 350k-concept CodeSystem on one line
 * never exists as one string or one object.
 */
export type JsonStreamEvent =
  | { kind: 'value'; value: unknown; bytes: number; line: number; where?: string }
  | { kind: 'header'; key: string; header: Record<string, unknown>; bytes: number }
  | { kind: 'items'; items: unknown[]; bytes: number }
  | { kind: 'end'; tail: Record<string, unknown>; bytes: number };

export interface JsonStreamOptions {
  /** Top-level keys whose array is streamed (default `concept` and `entry`). */
  splitKeys?: ReadonlySet<string>;
  /** Elements per `items` batch (default 2000). */
  batch?: number;
}

const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const COMMA = 0x2c;

/** Thrown for input that is not a sequence of JSON values. */
export class JsonStreamError extends Error {}

/** Yields the events of `source` (Buffers or strings), in document order. */
export async function* jsonStream(source: AsyncIterable<Buffer | string>, options: JsonStreamOptions = {}): AsyncGenerator<JsonStreamEvent> {
  const splitKeys = options.splitKeys ?? new Set(['concept', 'entry']);
  const batchSize = options.batch ?? 2000;
  const decoder = new StringDecoder('utf8');
  let bytes = 0;
  let first = true;
  /** Line of the input (newlines outside strings: JSON strings hold none), and where the value being captured began. */
  let line = 1;
  let valueLine = 1;

  let depth = 0;
  let inString = false;
  let escape = false;
  /** Text of the value being captured (pieces of chunks). */
  let pieces: string[] = [];
  let capturing = false;
  /** Depth-1 string: where it started in the capture (for cutting a split key out). */
  let keyText = '';
  let collectingKey = false;
  let keyStart = 0; // capture length at the key's opening quote
  let lastKey: string | undefined;
  let afterColonKey: string | undefined; // a depth-1 key whose value has not started yet
  /** Split mode: 0 = no, 1 = in the streamed array, 2 = after it (capturing the tail). */
  let split = 0;
  let splitKey = '';
  let itemTexts: string[] = [];
  let itemPieces: string[] | undefined;
  let capturedLength = 0;
  let itemStart = 0; // where the element in progress starts in the current chunk
  let keyFrom = 0; // where the key in progress starts in the current chunk

  const joined = () => {
    const text = pieces.join('');
    pieces = [text];
    return text;
  };
  const flushItems = function* (): Generator<JsonStreamEvent> {
    if (itemTexts.length === 0) return;
    const items = parse(`[${itemTexts.join(',')}]`) as unknown[];
    itemTexts = [];
    yield { kind: 'items', items, bytes };
  };

  for await (const chunk of source) {
    let text = typeof chunk === 'string' ? chunk : decoder.write(chunk);
    bytes += typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.length;
    if (first && text.length > 0) {
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
      first = false;
    }
    let pieceStart = 0;
    const n = text.length;
    for (let i = 0; i < n; i++) {
      const c = text.charCodeAt(i);
      if (inString) {
        if (escape) escape = false;
        else if (c === BACKSLASH) escape = true;
        else if (c === QUOTE) {
          inString = false;
          if (collectingKey) {
            collectingKey = false;
            keyText += text.slice(keyFrom, i);
            lastKey = keyText;
          }
        }
        continue;
      }
      if (c <= 0x20) {
        if (c === 0x0a) line++;
        continue; // whitespace (and newlines between NDJSON values)
      }
      if (!capturing) {
        if (c !== OPEN_OBJECT && c !== OPEN_ARRAY) throw new JsonStreamError(`line ${line}: unexpected '${text[i]}' between JSON values`);
        capturing = true;
        valueLine = line;
        pieces = [];
        capturedLength = 0;
        pieceStart = i;
        depth = 1;
        split = 0;
        lastKey = undefined;
        afterColonKey = undefined;
        continue;
      }
      if (split === 1 && depth === 2 && itemPieces === undefined && c !== COMMA && c !== CLOSE_ARRAY) {
        // An element of the streamed array starts here.
        itemPieces = [];
        itemStart = i;
      }
      switch (c) {
        case QUOTE:
          inString = true;
          if (depth === 1 && split !== 1 && afterColonKey === undefined) {
            collectingKey = true;
            keyText = '';
            keyStart = capturedLength + (i - pieceStart);
            keyFrom = i + 1;
          }
          break;
        case COLON:
          if (depth === 1 && split !== 1) afterColonKey = lastKey;
          break;
        case COMMA:
          if (depth === 1) afterColonKey = undefined;
          if (split === 1 && depth === 2 && itemPieces) {
            itemPieces.push(text.slice(itemStart, i));
            itemTexts.push(itemPieces.join(''));
            itemPieces = undefined;
            if (itemTexts.length >= batchSize) yield* flushItems();
          }
          break;
        case OPEN_OBJECT:
        case OPEN_ARRAY:
          depth++;
          if (depth === 2 && c === OPEN_ARRAY && split === 0 && afterColonKey !== undefined && splitKeys.has(afterColonKey)) {
            // The streamed array begins: the members so far are the header.
            pieces.push(text.slice(pieceStart, i));
            const sofar = joined();
            const headerText = sofar.slice(0, keyStart).replace(/[\s,]*$/, '');
            const header = parse(`${headerText}}`) as Record<string, unknown>;
            split = 1;
            splitKey = afterColonKey;
            pieces = [];
            yield { kind: 'header', key: splitKey, header, bytes };
          }
          break;
        case CLOSE_OBJECT:
        case CLOSE_ARRAY:
          if (split === 1 && depth === 2 && c === CLOSE_ARRAY) {
            if (itemPieces) {
              itemPieces.push(text.slice(itemStart, i));
              itemTexts.push(itemPieces.join(''));
              itemPieces = undefined;
            }
            yield* flushItems();
            split = 2;
            pieces = ['{'];
            capturedLength = 1;
            pieceStart = i + 1;
            depth--;
            afterColonKey = undefined;
            continue;
          }
          depth--;
          if (depth === 0) {
            pieces.push(text.slice(pieceStart, i + 1));
            const whole = pieces.join('');
            pieces = [];
            capturing = false;
            if (split === 2) {
              yield { kind: 'end', tail: parse(whole.replace(/^\{[\s,]*/, '{')) as Record<string, unknown>, bytes };
            } else {
              yield { kind: 'value', value: parse(whole, valueLine), bytes, line: valueLine };
            }
            split = 0;
            pieceStart = i + 1;
          }
          break;
      }
    }
    // Keep what is still being captured.
    if (itemPieces) {
      itemPieces.push(text.slice(itemStart));
      itemStart = 0;
    } else if (capturing && split !== 1) {
      const rest = text.slice(pieceStart);
      pieces.push(rest);
      capturedLength += rest.length;
    }
    if (collectingKey) {
      keyText += text.slice(keyFrom);
      keyFrom = 0;
    }
  }
  if (capturing || inString) throw new JsonStreamError(`line ${valueLine}: unexpected end of JSON input`);
}

function parse(text: string, line?: number): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    throw new JsonStreamError(line === undefined ? message : `line ${line}: ${message}`);
  }
}
