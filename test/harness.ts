import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { OperationOutcome, Practitioner } from '@medplum/fhirtypes';
import pg from 'pg';
import pino from 'pino';
import { createApp, type App } from '../src/app.js';
import { loadConfig, type Config } from '../src/config.js';
import type { Database } from '../src/core/database.js';
import type { ResourceHook } from '../src/core/repository.js';
import { migrate } from '../src/storage/migrate.js';
import { openPgliteDatabase } from '../src/storage/pglite-database.js';
import { createMembership, createUser, findUserIdByEmail } from '../src/auth/accounts.js';

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

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- JSON bodies off the wire are untyped by nature
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
  /**
   * Bearer token; defaults to the server's plain member (`server.memberToken`); `null` sends
   * none. Pass `server.adminToken` where a test needs super-admin rights.
   */
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
  /**
   * Access token of the super admin: pass it explicitly (`{ token: server.adminToken }`) where a
   * test needs super-admin rights (creating projects, users, client applications, writing
   * shared content, reading other projects). Undefined when the server was started without an
   * admin password (first-start tests).
   */
  adminToken?: string;
  /**
   * The default caller of `request`/`fhir`: a plain member (Practitioner profile, not admin) of
   * an ordinary project, `server.projectId`. Undefined when `adminToken` is.
   */
  memberToken?: string;
  /** That member (user, membership, profile, credentials). */
  member?: TestMember;
  /** The ordinary project the default member belongs to (not the super-admin project). */
  projectId?: string;
  /** Any HTTP request to the server; `path` is relative to baseUrl (e.g. `/fhir/R4/Patient`). */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- JSON bodies off the wire are untyped by nature
  request<T = any>(method: string, path: string, options?: RequestOptions): Promise<ApiResponse<T>>;
  /** `request` with the path relative to the FHIR base (e.g. `/Patient`). */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- JSON bodies off the wire are untyped by nature
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
  /** Extra write hooks (e.g. one that fails on purpose). */
  hooks?: ResourceHook[];
  /** Collects the server's log lines (JSON, level info and above) instead of discarding them. */
  logLines?: string[];
}

/** The PostgreSQL server URL for tests (set by scripts/test.mjs). */
export function testDatabaseServerUrl(): string {
  const url = process.env.TEST_DATABASE_URL;
  if (!url) throw new Error('TEST_DATABASE_URL is not set (scripts/test.mjs starts a private PostgreSQL)');
  return url;
}

/**
 * Creates a database on the test PostgreSQL server and returns its URL: empty, or with
 * `migrated` a copy of the run's migrated template (LATTICE_TEST_PG_TEMPLATE, made by
 * scripts/test.mjs) — a few times cheaper than migrating an empty one for every test server.
 */
export async function createTestDatabase(options: { migrated?: boolean } = {}): Promise<string> {
  const template = options.migrated ? process.env.LATTICE_TEST_PG_TEMPLATE : undefined;
  const serverUrl = testDatabaseServerUrl();
  const name = `lattice_test_${randomBytes(6).toString('hex')}`;
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${name}${template ? ` TEMPLATE ${template}` : ''}`);
  } finally {
    await client.end();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/**
 * A fresh in-memory PGlite loaded from the run's migrated template (see scripts/test.mjs), or
 * undefined to let the app open its configured database.
 */
async function templateDatabase(driver: Driver, options: StartOptions, config: Config): Promise<Database | undefined> {
  const template = process.env.LATTICE_TEST_PGLITE_TEMPLATE;
  if (driver !== 'pglite' || options.dataDir || !template || !existsSync(template)) return undefined;
  const { statementTimeoutMs, acquireTimeoutMs } = config.database;
  const db = await openPgliteDatabase('memory://', { loadDataDir: new Blob([readFileSync(template)]), limits: { statementTimeoutMs, acquireTimeoutMs }, autoAnalyze: true });
  await migrate(db);
  return db;
}

/**
 * Storage that command-line processes (`lattice import`, `admin`) and later test servers share:
 * a PGlite folder under `dir`, or a fresh PostgreSQL database; `env` points a process at it
 * (quiet logs, a known admin password, base terminologies loaded lazily, plus `extra`).
 */
export async function sharedStorage(
  driver: Driver,
  dir: string,
  extra: Record<string, string> = {},
): Promise<{ storage: StartOptions; env: NodeJS.ProcessEnv }> {
  const storage: StartOptions = driver === 'pg' ? { databaseUrl: await createTestDatabase() } : { dataDir: join(dir, 'data') };
  const env = {
    ...process.env,
    LOG_LEVEL: 'warn',
    LATTICE_ADMIN_PASSWORD: 'admin-password-123',
    LATTICE_BASE_TERMINOLOGY: 'lazy',
    ...extra,
    ...(storage.databaseUrl ? { DATABASE_URL: storage.databaseUrl } : { LATTICE_DATA_DIR: storage.dataDir }),
  };
  return { storage, env };
}

/** Starts a server on the given driver (fresh in-memory PGlite / fresh PostgreSQL database by default). */
export async function startServer(driver: Driver, options: StartOptions = {}): Promise<TestServer> {
  const env: Record<string, string | undefined> = {
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    LATTICE_ADMIN_EMAIL: 'admin@example.com',
    LATTICE_ADMIN_PASSWORD: 'admin-password-123',
    // Base terminologies are written when first used, so no test server pays for loading all.
    LATTICE_BASE_TERMINOLOGY: 'lazy',
    // The cheapest allowed scrypt cost (1 MiB, ~2 ms a hash): the suite logs in thousands of
    // times; test/password.test.ts checks the production default.
    LATTICE_PASSWORD_COST: '10',
    ...options.env,
  };
  if (driver === 'pg') env.DATABASE_URL = options.databaseUrl ?? (await createTestDatabase({ migrated: true }));
  else env.LATTICE_DATA_DIR = options.dataDir ?? 'memory://';
  const config = loadConfig(env);
  const lines = options.logLines;
  const log = lines ? pino({ level: 'info' }, { write: (line: string) => void lines.push(line) }) : pino({ level: config.logLevel });
  const app = await createApp(config, { log, db: await templateDatabase(driver, options, config), extraHooks: options.hooks });
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
    async request<T>(method: string, path: string, opts: RequestOptions = {}): Promise<ApiResponse<T>> {
      const headers: Record<string, string> = { ...(opts.headers ?? {}) };
      const token = opts.token === undefined ? server.memberToken : opts.token;
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
      return { status: res.status, headers: res.headers, body: parsed as T, text };
    },
    fhir(method, path, opts) {
      return server.request(method, `/fhir/R4${path}`, opts);
    },
    stop: () => app.close(),
  };
  await loginAsAdmin(server);
  await addDefaultMember(server);
  return server;
}

/**
 * Makes the default caller: an ordinary project (created by the super admin over HTTP) with a
 * plain member whose Practitioner profile lives in it, so that every request a test does not
 * give a token to runs with a plain member's rights — as most real clients do.
 */
async function addDefaultMember(server: TestServer): Promise<void> {
  if (!server.adminToken) return;
  try {
    const res = await server.fhir('POST', '/Project', { token: server.adminToken, body: { resourceType: 'Project', name: 'Default project' } });
    if (res.status !== 201) throw new Error(`creating the default project failed: ${res.status} ${res.text}`);
    server.projectId = res.body.id as string;
    server.member = await createMember(server, server.projectId, { firstName: 'Default', lastName: 'Member' });
    server.memberToken = server.member.token;
  } catch (err) {
    await server.stop();
    throw err;
  }
}

/**
 * Fills `server.adminToken` with a super-admin access token obtained through the real HTTP
 * flow (POST /auth/login with a PKCE S256 challenge, then POST /oauth2/token). The
 * credentials are LATTICE_ADMIN_EMAIL / LATTICE_ADMIN_PASSWORD of the server's environment;
 * when a test starts a server without a password (`env: {LATTICE_ADMIN_PASSWORD: ''}`), the
 * token stays undefined.
 */
async function loginAsAdmin(server: TestServer): Promise<void> {
  const email = server.config.adminEmail;
  const password = server.config.adminPassword;
  if (!password) return; // a generated password (first-start test): the test logs in itself
  try {
    server.adminToken = await loginAs(server, email, password);
  } catch (err) {
    await server.stop(); // startServer throws: do not leave the server (and its database) open
    throw err;
  }
}

/** The first issue's text of an OperationOutcome body. */
export function ooText(body: Partial<OperationOutcome> | undefined): string | undefined {
  return body?.issue?.[0]?.details?.text;
}

// ---------------------------------------------------------------------------------------------
// Authentication helpers (src/auth). Every helper talks to the server over real HTTP, except
// that users are created in-process (through src/auth/accounts.ts), because creating a person
// with a password is the invite feature's job and not part of these tests' subject.
// ---------------------------------------------------------------------------------------------

/** The body of a successful `POST /oauth2/token`. */
export interface TokenSet {
  token_type: string;
  access_token: string;
  expires_in: number;
  scope?: string;
  refresh_token?: string;
  project: { reference: string };
  profile: { reference: string };
}

/** A fresh PKCE verifier and its S256 challenge (RFC 7636). */
export function pkcePair(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

/**
 * `POST /oauth2/token` with a form-encoded body; returns the raw response (no token needed).
 * `headers` may carry e.g. `authorization: Basic …`.
 */
export function tokenRequest(server: TestServer, params: Record<string, string>, headers: Record<string, string> = {}): Promise<ApiResponse> {
  return server.request('POST', '/oauth2/token', {
    raw: new URLSearchParams(params).toString(),
    contentType: 'application/x-www-form-urlencoded',
    headers,
    token: null,
  });
}

/**
 * Logs in over HTTP like MedplumClient does: `POST /auth/login` (with a PKCE S256
 * challenge; `projectId` picks the membership), `POST /auth/profile` when the user has several
 * memberships (`options.membershipId` chooses, else the first), then the code exchange at
 * `POST /oauth2/token`. Returns the token response; throws with the server's answer on failure.
 */
export async function loginTokens(
  server: TestServer,
  email: string,
  password: string,
  options: { projectId?: string; membershipId?: string; scope?: string } = {},
): Promise<TokenSet> {
  const pkce = pkcePair();
  const login = await server.request('POST', '/auth/login', {
    body: { email, password, projectId: options.projectId, scope: options.scope, codeChallenge: pkce.challenge, codeChallengeMethod: 'S256' },
    contentType: 'application/json',
    token: null,
  });
  if (login.status !== 200) throw new Error(`login of ${email} failed: ${login.status} ${login.text}`);
  let code: string | undefined = login.body.code;
  if (!code) {
    const membershipId = options.membershipId ?? login.body.memberships?.[0]?.id;
    const profile = await server.request('POST', '/auth/profile', {
      body: { login: login.body.login, profile: membershipId },
      contentType: 'application/json',
      token: null,
    });
    if (profile.status !== 200) throw new Error(`profile choice failed: ${profile.status} ${profile.text}`);
    code = profile.body.code as string;
  }
  const tokens = await tokenRequest(server, { grant_type: 'authorization_code', code, code_verifier: pkce.verifier });
  if (tokens.status !== 200) throw new Error(`code exchange failed: ${tokens.status} ${tokens.text}`);
  return tokens.body as TokenSet;
}

/** `loginTokens` reduced to the access token: `Authorization: Bearer <this>`. */
export async function loginAs(server: TestServer, email: string, password: string, projectId?: string): Promise<string> {
  return (await loginTokens(server, email, password, { projectId })).access_token;
}

/** A person with a membership in a project, logged in to it. */
export interface TestMember {
  email: string;
  password: string;
  userId: string;
  membershipId: string;
  /** The profile reference, e.g. `Practitioner/123`. */
  profile: string;
  /** Access token acting in the project. */
  token: string;
}

/**
 * Adds a person to a project and logs them in: a server-scoped User (reused when a user with
 * that e-mail exists, e.g. to give one person memberships in two projects — pass the same
 * password), a Practitioner profile stored in the project, and a ProjectMembership
 * (`admin` as given, default false).
 */
export async function createMember(
  server: TestServer,
  projectId: string,
  options: { admin?: boolean; email?: string; password?: string; firstName?: string; lastName?: string } = {},
): Promise<TestMember> {
  const services = server.app;
  const email = (options.email ?? `user-${randomBytes(5).toString('hex')}@example.org`).toLowerCase();
  const password = options.password ?? `pw-${randomBytes(9).toString('base64url')}`;
  const firstName = options.firstName ?? 'Test';
  const lastName = options.lastName ?? 'Member';
  const userId =
    (await findUserIdByEmail(services.db, email)) ??
    (await createUser(services.system, { email, password, passwordCost: server.config.passwordCost, firstName, lastName, ownerProjectId: projectId })).id!;
  const practitioner = await services.system.create<Practitioner>({
    resourceType: 'Practitioner',
    name: [{ given: [firstName], family: lastName }],
    meta: { project: projectId },
  });
  const profile = `Practitioner/${practitioner.id}`;
  const membership = await createMembership(services.system, {
    projectId,
    member: { reference: `User/${userId}` },
    profile: { reference: profile },
    admin: options.admin === true,
  });
  const token = await loginAs(server, email, password, projectId);
  return { email, password, userId, membershipId: membership.id!, profile, token };
}

/** A project created by the super admin, with one project admin logged in. */
export interface TestProject {
  /** The stored Project resource. */
  project: { resourceType: 'Project'; id: string; name: string; [key: string]: unknown };
  projectId: string;
  adminEmail: string;
  adminPassword: string;
  /** Access token of the project's admin (projectAdmin, not super admin). */
  adminToken: string;
  admin: TestMember;
}

/**
 * Creates a project as the super admin (`POST /fhir/R4/Project`) and an admin member of it
 * (see `createMember`), logged in. Use `createMember(server, projectId)` for plain members.
 */
export async function createProject(server: TestServer, name: string): Promise<TestProject> {
  const res = await server.fhir('POST', '/Project', { token: server.adminToken, body: { resourceType: 'Project', name } });
  if (res.status !== 201) throw new Error(`creating project ${name} failed: ${res.status} ${res.text}`);
  const admin = await createMember(server, res.body.id, { admin: true, firstName: name, lastName: 'Admin' });
  return {
    project: res.body,
    projectId: res.body.id,
    adminEmail: admin.email,
    adminPassword: admin.password,
    adminToken: admin.token,
    admin,
  };
}

/** A ClientApplication of a project with its one-time secret and a client-credentials token. */
export interface TestClient {
  /** The 201 body of `POST /admin/projects/<id>/client` (includes `secret`). */
  client: { resourceType: 'ClientApplication'; id: string; name: string; secret: string; [key: string]: unknown };
  clientId: string;
  secret: string;
  /** Access token from `client_credentials` (acts as a member of the project). */
  token: string;
}

/**
 * Creates a client application through `POST /admin/projects/<projectId>/client` (as
 * `options.token`, default the super admin) and gets a token with `client_credentials`.
 */
export async function createClient(
  server: TestServer,
  projectId: string,
  options: { name?: string; token?: string } = {},
): Promise<TestClient> {
  const res = await server.request('POST', `/admin/projects/${projectId}/client`, {
    body: { name: options.name ?? 'Test client' },
    contentType: 'application/json',
    token: options.token ?? server.adminToken,
  });
  if (res.status !== 201) throw new Error(`creating client failed: ${res.status} ${res.text}`);
  const tokens = await clientCredentialsToken(server, res.body.id, res.body.secret);
  return { client: res.body, clientId: res.body.id, secret: res.body.secret, token: tokens.access_token };
}

/** `client_credentials` with the credentials in the body (default) or in HTTP Basic. */
export async function clientCredentialsToken(
  server: TestServer,
  clientId: string,
  secret: string,
  via: 'body' | 'basic' = 'body',
): Promise<TokenSet> {
  const res =
    via === 'body'
      ? await tokenRequest(server, { grant_type: 'client_credentials', client_id: clientId, client_secret: secret })
      : await tokenRequest(
          server,
          { grant_type: 'client_credentials' },
          { authorization: `Basic ${Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(secret)}`).toString('base64')}` },
        );
  if (res.status !== 200) throw new Error(`client_credentials failed: ${res.status} ${res.text}`);
  return res.body as TokenSet;
}

/** The entries of an `$expand` answer's `contains`, nested ones included (depth first, in order). */
export function flatContains<T extends { contains?: T[] }>(contains: T[] | undefined): T[] {
  const out: T[] = [];
  for (const c of contains ?? []) out.push(c, ...flatContains(c.contains));
  return out;
}
