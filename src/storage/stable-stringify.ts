/** JSON with object keys sorted, so equal content gives equal text whatever the key order. */
export function stableStringify(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(stableStringify).join(',')}]`;
  const obj = value as Record<string, unknown>;
  const keys = Object.keys(obj).filter((k) => obj[k] !== undefined).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${stableStringify(obj[k])}`).join(',')}}`;
}

/** Equal up to the server-managed meta fields (versionId, lastUpdated, project): what an update that changes nothing sends. */
export function sameResourceContent(a: { meta?: unknown }, b: { meta?: unknown }): boolean {
  const strip = (r: { meta?: unknown }): unknown => {
    const { versionId: _v, lastUpdated: _l, project: _p, ...meta } = (r.meta ?? {}) as Record<string, unknown>;
    const copy = { ...r } as Record<string, unknown>;
    if (Object.keys(meta).length > 0) copy.meta = meta;
    else delete copy.meta;
    return copy;
  };
  return stableStringify(strip(a)) === stableStringify(strip(b));
}
