import type { Resource } from '@medplum/fhirtypes';
import { toDates, toNumbers, toQuantities, toReferences, toStrings, toTokens, toUris } from './convert.js';
import { typedValue, type TypedValue } from './fhir-values.js';
import { emptyRows, type IndexRows } from './index-rows.js';
import { MAX_COMPOSITE_ITEMS, indexedComposites, indexedParameters, type IndexTable } from './parameters.js';
import { clip, withoutNul } from './normalize.js';

/**
 * Most values one parameter of one resource may index. Beyond it the parameter is cut short:
 * a CodeSystem with 350k concepts must not add 350k token rows per write (the terminology
 * index answers concept questions).
 */
export const MAX_VALUES_PER_PARAMETER = 10_000;

const CONVERT: { [K in IndexTable]: (v: TypedValue) => Array<Omit<IndexRows[K][number], 'param'>> } = {
  string: toStrings,
  token: toTokens,
  reference: toReferences,
  date: toDates,
  number: toNumbers,
  quantity: toQuantities,
  uri: toUris,
};

/**
 * Evaluates every indexed SearchParameter of the resource's type and converts the results
 * into index rows. A parameter whose evaluation throws is skipped: one odd expression must
 * never make a write fail. Duplicate rows of one parameter are kept once.
 */
export function extractRows(resource: Resource): IndexRows {
  const rows = emptyRows();
  const view = bounded(resource);
  for (const param of indexedParameters(resource.resourceType)) {
    let items: unknown[];
    try {
      items = param.evaluate(view);
    } catch {
      continue;
    }
    if (!Array.isArray(items) || items.length === 0) continue;
    addRows(rows, param.table, param.code, items);
  }
  addTextRows(rows, resource);
  // Composites: each component's values of base item i under `<code>#<i>.<k>`, so a search can
  // ask for components of one item (docs/rest.md#composite-parameters). A search must match
  // every component, so an item with a component that has no value can match none: it is not
  // indexed at all (an Observation with a Quantity value writes no code-value-concept rows).
  for (const composite of indexedComposites(resource.resourceType)) {
    let n = 0;
    try {
      n = Math.min(composite.count(view), MAX_COMPOSITE_ITEMS);
    } catch {
      continue;
    }
    for (let i = 0; i < n; i++) {
      const values = composite.tables.map((_table, k) => composite.evaluate(view, i, k));
      if (values.some((items) => items.length === 0)) continue;
      composite.tables.forEach((table, k) => addRows(rows, table, `${composite.code}#${i}.${k}`, values[k]));
    }
  }
  return rows;
}

/**
 * The resource with every array cut to MAX_VALUES_PER_PARAMETER items, so FHIRPath never
 * walks 350k concepts to index 10k of them. Objects are copied only along paths that change;
 * an ordinary resource is returned as it is.
 */
export function bounded<T>(value: T): T {
  if (Array.isArray(value)) {
    let out: unknown[] | undefined = value.length > MAX_VALUES_PER_PARAMETER ? value.slice(0, MAX_VALUES_PER_PARAMETER) : undefined;
    const source = out ?? value;
    for (let i = 0; i < source.length; i++) {
      const item: unknown = bounded(source[i]);
      if (item !== source[i]) (out ??= [...source])[i] = item;
    }
    return (out ?? value) as T;
  }
  if (value !== null && typeof value === 'object') {
    let out: Record<string, unknown> | undefined;
    for (const key in value) {
      const child = (value as Record<string, unknown>)[key];
      if (child === null || typeof child !== 'object') continue;
      const item = bounded(child);
      if (item !== child) (out ??= { ...(value as Record<string, unknown>) })[key] = item;
    }
    return (out ?? value) as T;
  }
  return value;
}

function addRows<K extends IndexTable>(rows: IndexRows, table: K, code: string, items: unknown[]): void {
  const target = rows[table] as Array<Record<string, unknown>>;
  const seen = new Set<string>();
  for (const item of items) {
    const value = typedValue(item);
    if (!value) continue;
    if (table === 'token' && value.type === 'Identifier' && !code.includes('#')) addIdentifierTypes(rows, code, value.data);
    for (const row of CONVERT[table](value)) {
      const key = Object.values(row).join('\u0001');
      if (seen.has(key)) continue;
      seen.add(key);
      target.push({ param: code, ...row });
      if (seen.size >= MAX_VALUES_PER_PARAMETER) return;
    }
  }
}

/**
 * For `:of-type` (docs/rest.md#modifiers): an identifier with a type is indexed again under
 * `<param>:of-type`, one row per type coding, with the coding's system and `<code>|<value>`.
 */
function addIdentifierTypes(rows: IndexRows, code: string, data: unknown): void {
  const identifier = data as { value?: unknown; type?: { coding?: Array<{ system?: unknown; code?: unknown }> } };
  if (typeof identifier.value !== 'string' || !Array.isArray(identifier.type?.coding)) return;
  for (const coding of identifier.type.coding) {
    if (typeof coding?.code !== 'string') continue;
    const key = clip(`${coding.code}|${identifier.value}`);
    const system = typeof coding.system === 'string' ? clip(coding.system) : null;
    if (rows.token.some((r) => r.param === `${code}:of-type` && r.system === system && r.code === key)) continue;
    rows.token.push({ param: `${code}:of-type`, system, code: key, code_lower: key.toLowerCase(), text_value: null });
  }
}

/** Most characters of text one resource indexes for `_content` (and for `_text`). */
const MAX_TEXT = 100_000;

/**
 * `_text`: the narrative's text (tags and entities dropped); `_content`: every string of the
 * resource, the narrative's text included (docs/rest.md#text-search).
 */
function addTextRows(rows: IndexRows, resource: Resource): void {
  const div = (resource as { text?: { div?: unknown } }).text?.div;
  const narrative = typeof div === 'string' ? htmlText(div) : '';
  if (narrative) rows.text.push({ param: '_text', body: withoutNul(narrative.slice(0, MAX_TEXT)) });
  const parts: string[] = [];
  let length = 0;
  const walk = (value: unknown, key: string): void => {
    if (length > MAX_TEXT) return;
    if (typeof value === 'string') {
      const text = key === 'div' ? htmlText(value) : value;
      parts.push(text);
      length += text.length + 1;
    } else if (Array.isArray(value)) for (const v of value) walk(v, key);
    else if (value !== null && typeof value === 'object') for (const [k, v] of Object.entries(value)) if (k !== 'meta' && k !== 'id') walk(v, k);
  };
  walk(resource, '');
  const content = parts.join(' ').slice(0, MAX_TEXT);
  if (content.trim()) rows.text.push({ param: '_content', body: withoutNul(content) });
}

function htmlText(html: string): string {
  return html
    .replace(/<[^>]*>/g, ' ')
    .replace(/&(?:[a-z]+|#\d+);/gi, ' ')
    .replace(/\s+/g, ' ')
    .trim();
}
