import { createReadStream, statSync } from 'node:fs';
import { Readable, Transform } from 'node:stream';
import { progressBar, type ImportSummary } from './import-file.js';

/**
 * `lattice import <file> --url <server>` (docs/terminology.md#import-into-a-running-server):
 * streams the file to a running server's `POST /admin/terminology/import`, which imports it
 * exactly as the direct mode would, while it arrives. Memory is bounded on both sides; the
 * progress bar counts the bytes sent. Authenticates with an access token, or with a client
 * application's credentials (`client_credentials` grant).
 */
export interface RemoteImportOptions {
  /** Server base URL, e.g. `http://localhost:8080`. */
  url: string;
  token?: string;
  clientId?: string;
  clientSecret?: string;
  /** Target project (super admins; a project admin's import always goes to its own project). */
  projectId?: string;
  /** Clinical resources may become shared content (`--shared`, super admins). */
  shared?: boolean;
  /** Further query parameters of the import (`format=rf2`, `unpublished=true`). */
  params?: Record<string, string>;
  out?: NodeJS.WritableStream & { isTTY?: boolean };
}

/** Thrown with the server's answer when it refuses the import. */
export class RemoteImportError extends Error {}

export async function importToServer(path: string, options: RemoteImportOptions): Promise<ImportSummary> {
  const size = statSync(path).size;
  const bar = progressBar(options.out ?? process.stderr);
  let sent = 0;
  const counter = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      sent += chunk.length;
      bar(path, sent, size, 'bytes sent');
      done(null, chunk);
    },
  });
  try {
    return await sendToServer(createReadStream(path).pipe(counter), options);
  } finally {
    bar.done();
  }
}

/**
 * Sends JSON produced while it is sent (e.g. a LOINC release turned into its CodeSystem,
 * docs/terminology.md#loinc) to the server's import; the producer reports its own progress.
 */
export async function importSourceToServer(source: AsyncIterable<string | Buffer>, options: RemoteImportOptions): Promise<ImportSummary> {
  return sendToServer(Readable.from(source), options);
}

async function sendToServer(source: Readable, options: RemoteImportOptions): Promise<ImportSummary> {
  const base = options.url.replace(/\/+$/, '');
  const token = options.token ?? (await clientToken(base, options));
  const body = Readable.toWeb(source) as ReadableStream<Uint8Array>;
  const params = new URLSearchParams({
    ...(options.projectId ? { project: options.projectId } : {}),
    ...(options.shared ? { shared: 'true' } : {}),
    ...options.params,
  });
  const query = params.size > 0 ? `?${params.toString()}` : '';
  const res = await fetch(`${base}/admin/terminology/import${query}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/x-ndjson' },
    body,
    duplex: 'half',
  } as RequestInit & { duplex: 'half' });
  const text = await res.text();
  if (!res.ok) throw new RemoteImportError(`The server refused the import (${res.status}): ${outcomeText(text)}`);
  return JSON.parse(text) as ImportSummary;
}

/** An access token for a client application (`client_credentials`). */
async function clientToken(base: string, options: RemoteImportOptions): Promise<string> {
  if (!options.clientId || !options.clientSecret) throw new RemoteImportError('--url needs --token, or --client-id and --client-secret');
  const res = await fetch(`${base}/oauth2/token`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${options.clientId}:${options.clientSecret}`).toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: 'grant_type=client_credentials',
  });
  const text = await res.text();
  if (!res.ok) throw new RemoteImportError(`The server refused the client credentials (${res.status}): ${outcomeText(text)}`);
  return (JSON.parse(text) as { access_token: string }).access_token;
}

/** The texts of an OperationOutcome answer, else the answer itself. */
function outcomeText(text: string): string {
  try {
    const oo = JSON.parse(text) as { issue?: Array<{ details?: { text?: string }; diagnostics?: string }> };
    const texts = (oo.issue ?? []).map((i) => i.details?.text ?? i.diagnostics).filter(Boolean);
    if (texts.length > 0) return texts.join('; ');
  } catch {
    // not JSON
  }
  return text.slice(0, 500);
}
