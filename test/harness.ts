import { randomBytes } from 'node:crypto';
import pg from 'pg';
import pino from 'pino';
import { createApp, type App } from '../src/app.js';
import { loadConfig, type Config } from '../src/config.js';

/**
 * End-to-end test harness: starts a real Lattice server on a loopback port, on PGlite or on
 * a fresh database of the PostgreSQL server named by TEST_DATABASE_URL, and talks to it over
 * real HTTP. `LATTICE_TEST_DRIVERS` (set by scripts/test.mjs) lists the drivers to run.
 */
export type Driver = 'pglite' | 'pg';

export const drivers: Driver[] = (process.env.LATTICE_TEST_DRIVERS ?? 'pglite')
  .split(',')
  .map((d) => d.trim())
  .filter((d): d is Driver => d === 'pglite' || d === 'pg');

export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface RequestOptions {
  body?: unknown;
  /** Raw body (sent as is). */
  raw?: string | Buffer;
  headers?: Record<string, string>;
  /** Bearer token; defaults to the server's admin token; `null` sends none. */
  token?: string | null;
  contentType?: string;
}

export interface TestServer {
  app: App;
  config: Config;
  driver: Driver;
  /** e.g. http://127.0.0.1:41234 */
  baseUrl: string;
  /** e.g. http://127.0.0.1:41234/fhir/R4 */
  fhirUrl: string;
  /** Access token of the super admin (undefined until authentication exists). */
  adminToken?: string;
  /** Any HTTP request to the server; `path` is relative to baseUrl (e.g. `/fhir/R4/Patient`). */
  request<T = any>(method: string, path: string, options?: RequestOptions): Promise<ApiResponse<T>>;
  /** `request` with the path relative to the FHIR base (e.g. `/Patient`). */
  fhir<T = any>(method: string, path: string, options?: RequestOptions): Promise<ApiResponse<T>>;
  /** Stops the server (keeps the data when a data folder / database was given). */
  stop(): Promise<void>;
}

export interface StartOptions {
  /** Reuse a PGlite folder or a PostgreSQL database URL (restart tests). */
  dataDir?: string;
  databaseUrl?: string;
  /** Extra environment for the configuration (e.g. SMTP_URL). */
  env?: Record<string, string>;
}

/** The PostgreSQL server URL for tests (set by scripts/test.mjs). */
export function testDatabaseServerUrl(): string {
  const url = process.env.TEST_DATABASE_URL;
  if (!url) throw new Error('TEST_DATABASE_URL is not set (scripts/test.mjs starts a private PostgreSQL)');
  return url;
}

/** Creates an empty database on the test PostgreSQL server and returns its URL. */
export async function createTestDatabase(): Promise<string> {
  const serverUrl = testDatabaseServerUrl();
  const name = `lattice_test_${randomBytes(6).toString('hex')}`;
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${name}`);
  } finally {
    await client.end();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Starts a server on the given driver (fresh in-memory PGlite / fresh PostgreSQL database by default). */
export async function startServer(driver: Driver, options: StartOptions = {}): Promise<TestServer> {
  const env: Record<string, string | undefined> = {
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    LATTICE_ADMIN_EMAIL: 'admin@example.com',
    LATTICE_ADMIN_PASSWORD: 'admin-password-123',
    ...options.env,
  };
  if (driver === 'pg') env.DATABASE_URL = options.databaseUrl ?? (await createTestDatabase());
  else env.LATTICE_DATA_DIR = options.dataDir ?? 'memory://';
  const config = loadConfig(env);
  const app = await createApp(config, { log: pino({ level: config.logLevel }) });
  const address = await app.listen();
  const port = new URL(address).port;
  const baseUrl = `http://127.0.0.1:${port}`;
  if (!options.env?.LATTICE_PUBLIC_URL) config.publicUrl = baseUrl;

  const server: TestServer = {
    app,
    config,
    driver,
    baseUrl,
    fhirUrl: `${baseUrl}/fhir/R4`,
    async request(method, path, opts = {}) {
      const headers: Record<string, string> = { ...(opts.headers ?? {}) };
      const token = opts.token === undefined ? server.adminToken : opts.token;
      if (token) headers.authorization ??= `Bearer ${token}`;
      let body: string | Buffer | undefined = opts.raw;
      if (opts.body !== undefined) body = JSON.stringify(opts.body);
      if (body !== undefined && !Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) {
        headers['content-type'] = opts.contentType ?? 'application/fhir+json';
      }
      const res = await fetch(baseUrl + path, { method, headers, body: body as BodyInit | undefined });
      const text = await res.text();
      let parsed: unknown = undefined;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {
        parsed = undefined;
      }
      return { status: res.status, headers: res.headers, body: parsed as any, text };
    },
    fhir(method, path, opts) {
      return server.request(method, `/fhir/R4${path}`, opts);
    },
    stop: () => app.close(),
  };
  await loginAsAdmin(server);
  return server;
}

/** Fills `adminToken` once authentication exists (TODO(auth)). */
async function loginAsAdmin(_server: TestServer): Promise<void> {}

/** The first issue's text of an OperationOutcome body. */
export function ooText(body: any): string | undefined {
  return body?.issue?.[0]?.details?.text;
}
