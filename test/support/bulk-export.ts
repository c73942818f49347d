import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * A Bulk Data client over plain HTTP (docs/export.md): kick-off, poll until the manifest, and
 * the downloaded files as ids per type. `baseUrl` is the server's (no FHIR base).
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- JSON off the wire
type Json = any;

export interface Manifest {
  transactionTime: string;
  request: string;
  requiresAccessToken: boolean;
  output: Array<{ type: string; url: string; count: number }>;
  error: Array<{ type: string; url: string; count: number }>;
}

export async function call(
  baseUrl: string,
  method: string,
  path: string,
  options: { token?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<{ status: number; headers: Headers; body: Json; text: string }> {
  const headers: Record<string, string> = { ...(options.headers ?? {}) };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (options.body !== undefined) headers['content-type'] ??= 'application/fhir+json';
  const url = path.startsWith('http') ? path : baseUrl + path;
  const res = await fetch(url, { method, headers, body: options.body === undefined ? undefined : JSON.stringify(options.body) });
  const text = await res.text();
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  return { status: res.status, headers: res.headers, body, text };
}

/** Starts an export (`path` under the FHIR base, e.g. `/$export?_type=Patient`); returns the status URL. */
export async function kickOff(baseUrl: string, token: string, path: string, body?: unknown): Promise<string> {
  const res = await call(baseUrl, body === undefined ? 'GET' : 'POST', `/fhir/R4${path}`, { token, body, headers: { prefer: 'respond-async' } });
  assert.equal(res.status, 202, res.text);
  const location = res.headers.get('content-location');
  assert.ok(location, 'Content-Location');
  return location;
}

/** Polls a status URL until it answers something else than 202; returns that answer. */
export async function poll(statusUrl: string, token: string): Promise<{ status: number; headers: Headers; body: Json; text: string }> {
  for (let i = 0; i < 600; i++) {
    const res = await call('', 'GET', statusUrl, { token });
    if (res.status !== 202) return res;
    await sleep(100);
  }
  throw new Error(`export at ${statusUrl} did not finish`);
}

/** The manifest of a finished export (asserts 200). */
export async function manifestOf(statusUrl: string, token: string): Promise<Manifest> {
  const res = await poll(statusUrl, token);
  assert.equal(res.status, 200, res.text);
  return res.body as Manifest;
}

/** Downloads every output file: the ids of each type, sorted (a line that is not a resource of its file's type fails). */
export async function exportedIds(manifest: Manifest, token: string): Promise<Record<string, string[]>> {
  const out: Record<string, string[]> = {};
  for (const file of manifest.output) {
    const res = await call('', 'GET', file.url, { token });
    assert.equal(res.status, 200, res.text);
    assert.match(res.headers.get('content-type') ?? '', /^application\/fhir\+ndjson/);
    const lines = res.text.split('\n').filter((l) => l !== '');
    assert.equal(lines.length, file.count, `${file.type}: the manifest's count is the file's lines`);
    const ids = lines.map((line) => {
      const resource = JSON.parse(line) as { resourceType: string; id: string };
      assert.equal(resource.resourceType, file.type);
      return resource.id;
    });
    out[file.type] = ids.sort();
  }
  return out;
}
