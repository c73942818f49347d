import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { OperationDefinition, OperationDefinitionParameter, Resource } from '@medplum/fhirtypes';
import {
  clientCredentialsToken,
  createClient,
  createMember,
  loginAs,
  loginTokens,
  createProject,
  pkcePair,
  tokenRequest,
  drivers,
  flatContains,
  startServer,
  type ApiResponse,
  type TestClient,
  type TestMember,
  type TestProject,
  type TestServer,
} from './harness.js';

/**
 * The role matrix (docs/auth.md#roles): every caller against every route
 * the server has. Routes are derived from the running application — the non-FHIR routes from
 * `app.routes`, the operations from `app.operations.definitions()` at each level they declare —
 * plus the FHIR REST interactions on Patient and on the account types. What each role should
 * get is declared once, in `TABLE` below; a route the table does not name (e.g. a newly
 * registered operation) still gets the defaults: 401 without a token (unless public), never a
 * 5xx, and never a success by another project's admin on project A's data.
 *
 * Callers: no token, the super admin, A's project admin, a plain member of A (Practitioner),
 * a client application of A (client_credentials), and the admin of another project B.
 * Write interactions of each role hit fresh targets made for that role, so one role's
 * successful delete does not change what the next one sees. After B's admin has tried
 * everything, nothing of A has changed.
 */

type Role = 'anonymous' | 'superAdmin' | 'projectAdmin' | 'member' | 'client' | 'otherAdmin';
/** In the order they run (the super admin last: its writes succeed). */
const ROLES: Role[] = ['anonymous', 'otherAdmin', 'member', 'client', 'projectAdmin', 'superAdmin'];

/** Role groups the table may use instead of single roles (a single role wins over a group). */
const GROUPS = {
  /** Everyone, no token included. */
  any: ROLES,
  /** Everyone with a token. */
  token: ['superAdmin', 'projectAdmin', 'member', 'client', 'otherAdmin'],
  /** Callers that see project A: its own members and the super admin. */
  A: ['superAdmin', 'projectAdmin', 'member', 'client'],
  /** Plain members of A: the person and the client application. */
  members: ['member', 'client'],
  /** The super admin and A's admin. */
  admins: ['superAdmin', 'projectAdmin'],
} as const satisfies Record<string, readonly Role[]>;
type Who = Role | keyof typeof GROUPS;
/** Precedence when several keys of a row name a role: the narrowest wins. */
const PRECEDENCE: Who[] = [...ROLES, 'members', 'admins', 'A', 'token', 'any'];

const ACCOUNT_TYPES = ['User', 'ProjectMembership', 'ClientApplication', 'Project'] as const;
const PERSONAL_ACCOUNTS = ['User', 'ProjectMembership', 'ClientApplication'];
const REST_TYPES = ['Patient', ...ACCOUNT_TYPES];

/** One request of the matrix. */
interface Route {
  /**
   * What the table matches, e.g. `rest update Patient`, `route POST /admin/projects/:projectId/client [A]`,
   * `op CodeSystem/$lookup instance POST own`.
   */
  key: string;
  method: string;
  /** Relative to the server's base URL. */
  path: string;
  body?: unknown;
  /** Public routes answer without a token (their default for no token is "not 5xx", not 401). */
  public: boolean;
  /** The path names one of A's resources or A's project: another project's admin must not succeed. */
  addressesA: boolean;
  /** The resource type and id the route targets (for visibility checks), when it targets one. */
  target?: { type: string; id: string };
}

/** What the role's request is checked with besides its status (throws an AssertionError). */
type Check = (res: ApiResponse, c: CheckContext) => void;
interface CheckContext {
  role: Role;
  route: Route;
  /** The project the caller acts in. */
  projectId?: string;
}
/** Expected status(es); `undefined` = any status below 500. */
type Status = number | readonly number[] | undefined;
type Row = [pattern: RegExp, statuses: Partial<Record<Who, Status>>, check?: Check];

// ---------------------------------------------------------------------------------------------
// Inputs of the terminology operations (by `<Type>/$<code>`); values are typed from the
// operation's own definition. Project A owns A_CS (a1 ⊃ a2) and A_VS (all of A_CS).
// ---------------------------------------------------------------------------------------------
const GENDER_CS = 'http://hl7.org/fhir/administrative-gender';
const GENDER_VS = 'http://hl7.org/fhir/ValueSet/administrative-gender';
const A_CS = 'http://example.org/role-matrix/a-codes';
const A_VS = 'http://example.org/role-matrix/a-values';
const A_CM = 'http://example.org/role-matrix/a-map';

type Simple = string | number | boolean;
type Inputs = Record<string, Simple | Record<string, unknown>>;
interface OperationInputs {
  /** Type level, against the shared base terminologies. */
  shared?: Inputs;
  /** Type level, against A's canonicals. */
  own?: Inputs;
  /** Instance level, on A's resource. */
  instance?: Inputs;
}
const OPERATION_INPUTS: Record<string, OperationInputs> = {
  'CodeSystem/$lookup': {
    shared: { system: GENDER_CS, code: 'male' },
    own: { system: A_CS, code: 'a1' },
    instance: { code: 'a1' },
  },
  'ValueSet/$validate-code': {
    shared: { url: GENDER_VS, system: GENDER_CS, code: 'female' },
    own: { url: A_VS, system: A_CS, code: 'a2' },
    instance: { system: A_CS, code: 'a2' },
  },
  'CodeSystem/$validate-code': {
    shared: { url: GENDER_CS, code: 'male' },
    own: { url: A_CS, code: 'a2' },
    instance: { code: 'a2' },
  },
  'CodeSystem/$subsumes': {
    shared: { system: GENDER_CS, codeA: 'male', codeB: 'male' },
    own: { system: A_CS, codeA: 'a1', codeB: 'a2' },
    instance: { codeA: 'a1', codeB: 'a2' },
  },
  'ValueSet/$expand': {
    shared: { url: GENDER_VS },
    own: { url: A_VS },
    instance: { count: 10 },
  },
  'CodeSystem/$import': {
    own: { system: A_CS, concept: { code: 'imported', display: 'Imported' } },
  },
  'ConceptMap/$translate': {
    own: { url: A_CM, system: A_CS, code: 'a1' },
    instance: { system: A_CS, code: 'a1' },
  },
  // `$validate` is defined on Resource: asked on A's Patient (instance) and on Patient (type).
  'Resource/$validate': {
    instance: { mode: 'delete' },
  },
};

// ---------------------------------------------------------------------------------------------
// Content checks used by the table.
// ---------------------------------------------------------------------------------------------
/** The value of a Parameters answer's out-parameter (first entry with that name). */
const paramValue = (res: ApiResponse, name: string): unknown => {
  const p: object | undefined = res.body?.parameter?.find((x: { name?: string }) => x.name === name);
  return p && Object.entries(p).find(([k]) => k.startsWith('value'))?.[1];
};
const hasDisplay =
  (display: string): Check =>
  (res) =>
    assert.equal(paramValue(res, 'display'), display, res.text);
const resultIs =
  (ok: boolean): Check =>
  (res) =>
    assert.equal(paramValue(res, 'result'), ok, res.text);
const translatesTo =
  (code: string): Check =>
  (res) => {
    assert.equal(paramValue(res, 'result'), true, res.text);
    const match = res.body?.parameter?.find((x: { name?: string }) => x.name === 'match');
    const concept = match?.part?.find((x: { name?: string }) => x.name === 'concept')?.valueCoding;
    assert.equal(concept?.code, code, res.text);
  };
const outcomeIs =
  (outcome: string): Check =>
  (res) =>
    assert.equal(paramValue(res, 'outcome'), outcome, res.text);
const expands =
  (...codes: string[]): Check =>
  (res) => {
    const got: string[] = flatContains<{ code: string; contains?: [] }>(res.body?.expansion?.contains).map((c) => c.code);
    for (const code of codes) assert.ok(got.includes(code), `expansion lacks ${code}: ${res.text}`);
  };
/** A/own-variant checks: A's callers get the answer; B's admin gets the not-found answer (status only, or `forB`). */
const forA =
  (check: Check, forB?: Check): Check =>
  (res, c) =>
    c.role === 'otherAdmin' ? forB?.(res, c) : check(res, c);

/** Whether the role sees A's resource of this type (docs/auth.md#roles). */
function sees(role: Role, type: string): boolean {
  if (role === 'superAdmin') return true;
  if (role === 'otherAdmin' || role === 'anonymous') return false;
  return !PERSONAL_ACCOUNTS.includes(type) || role === 'projectAdmin';
}
/** Bundle answers: the target is listed exactly when the role may see it. */
const listsTargetIfVisible: Check = (res, c) => {
  const ids: string[] = (res.body?.entry ?? []).map((e: { resource?: { id?: string } }) => e.resource?.id);
  const target = c.route.target!;
  if (sees(c.role, target.type)) assert.ok(ids.includes(target.id), `${target.type}/${target.id} missing: ${res.text.slice(0, 500)}`);
  else assert.ok(!ids.includes(target.id), `${target.type}/${target.id} listed for ${c.role}`);
};
const meIsOwnProject: Check = (res, c) => assert.ok(JSON.stringify(res.body?.project ?? '').includes(c.projectId!), res.text);

/**
 * THE table: route pattern → expected status per role (group), plus an optional content check.
 * The first row whose pattern matches the route's key decides. Rows declare only what the
 * docs state; anything else falls back to `defaults()`.
 */
const TABLE: Row[] = [
  // Non-FHIR routes (route keys come from app.routes; `[A]` = A's project id, `[unknown]` = made up).
  [/^route GET \/\.well-known\//, { any: 200 }],
  [/^route POST \/auth\/login$/, { any: 400 }], // wrong password
  [/^route POST \/auth\/profile$/, { any: 400 }], // missing login
  [/^route POST \/auth\/patient$/, { any: 400 }], // missing login
  [/^route POST \/auth\/launch$/, { anonymous: 401, token: 400 }], // missing patient
  [/^route POST \/oauth2\/token$/, { any: 400 }], // missing grant_type
  [/^route GET \/oauth2\/authorize$/, { any: 400 }], // no client_id
  [/^route GET \/setpassword\/:id\/:secret$/, { any: 404 }], // unknown link
  [/^route POST \/auth\/setpassword$/, { any: 404 }], // unknown link
  [/^route POST \/oauth2\/logout$/, { anonymous: 401, token: 200 }],
  [/^route GET \/auth\/me$/, { anonymous: 401, token: 200 }, (res, c) => c.role !== 'anonymous' && meIsOwnProject(res, c)],
  [/^route POST \/admin\/projects\/:projectId\/client \[A\]$/, { anonymous: 401, admins: 201, members: 403, otherAdmin: 403 }],
  [/^route POST \/admin\/projects\/:projectId\/invite \[A\]$/, { anonymous: 401, admins: 200, members: 403, otherAdmin: 403 }],
  // A made-up client id: unknown to admins (404), forbidden to everyone else.
  [/^route POST \/admin\/projects\/:projectId\/client\/:clientId\/secret \[A\]$/, { anonymous: 401, admins: 404, members: 403, otherAdmin: 403 }],
  // Members (docs/auth.md#managing-members): the list of A's members; a made-up membership id is
  // unknown to admins (404), forbidden to everyone else.
  [/^route GET \/admin\/projects\/:projectId\/members \[A\]$/, { anonymous: 401, admins: 200, members: 403, otherAdmin: 403 }],
  [/^route (GET|POST|DELETE) \/admin\/projects\/:projectId\/members\/:membershipId(\/resend)? \[A\]$/, { anonymous: 401, admins: 404, members: 403, otherAdmin: 403 }],
  [/^route (GET|POST|DELETE) \/admin\/projects\/:projectId\/[\w/:]+ \[unknown\]$/, { anonymous: 401, superAdmin: 404, token: 403 }],

  // FHIR REST on A's Patient (fresh per role).
  [/^rest metadata$/, { any: 200 }],
  [/^rest metadata terminology$/, { any: 200 }, (res) => assert.equal(res.body?.resourceType, 'TerminologyCapabilities', res.text)],
  [/^rest create Patient$/, { anonymous: 401, token: 201 }],
  [/^rest (read|vread|history|update|delete) Patient$/, { anonymous: 401, A: 200, otherAdmin: 404 }],
  [/^rest (search|type-history) \w+$/, { anonymous: 401, token: 200 }, listsTargetIfVisible],
  [/^rest compartment Patient$/, { anonymous: 401, A: 200, otherAdmin: 404 }, listsTargetIfVisible],

  // FHIR REST on account resources: written only by super admins; User/ProjectMembership/
  // ClientApplication seen by the project's admin (plain members see only their own, which the
  // targets are not); the Project by all of its members.
  [/^rest create (User|ProjectMembership|ClientApplication|Project)$/, { anonymous: 401, superAdmin: 201, token: 403 }],
  [/^rest (read|vread|history) (User|ProjectMembership|ClientApplication)$/, { anonymous: 401, admins: 200, members: 404, otherAdmin: 404 }],
  [/^rest (read|vread|history) Project$/, { anonymous: 401, A: 200, otherAdmin: 404 }],
  [/^rest update (User|ProjectMembership|ClientApplication|Project)$/, { anonymous: 401, superAdmin: 200, token: 403 }],
  // A delete is 403 where the caller sees the account; where it does not, the docs say 403
  // ("checked before visibility") and the tenancy test says 404: both are refusals.
  [/^rest delete (User|ClientApplication)$/, { anonymous: 401, superAdmin: 200, projectAdmin: 403, members: [403, 404], otherAdmin: [403, 404] }],
  // A project's admins remove its members (contract case #135, docs/auth.md#managing-members).
  [/^rest delete ProjectMembership$/, { anonymous: 401, admins: 200, members: [403, 404], otherAdmin: 404 }],
  [/^rest delete Project$/, { anonymous: 401, superAdmin: 200, A: 403, otherAdmin: [403, 404] }],

  // Operations (`op <Type>/$<code> <level> <method> <variant>`). GET of a state-changing one → 405.
  [/^op CodeSystem\/\$import type GET /, { anonymous: 401, token: 405 }],
  [/^op CodeSystem\/\$import type POST empty$/, { anonymous: 401, token: 400 }],
  // $import: project admins (own code systems) and super admins; B's admin cannot resolve A's canonical.
  [/^op CodeSystem\/\$import type POST own$/, { anonymous: 401, admins: 200, members: 403, otherAdmin: 400 }],
  // Type level without inputs: each terminology operation names what is missing (400).
  [/^op (CodeSystem|ValueSet)\/\$(lookup|validate-code|subsumes|expand) type \w+ empty$/, { anonymous: 401, token: 400 }],
  [/^op CodeSystem\/\$lookup type \w+ shared$/, { anonymous: 401, token: 200 }, hasDisplay('Male')],
  [/^op ValueSet\/\$validate-code type \w+ shared$/, { anonymous: 401, token: 200 }, resultIs(true)],
  [/^op CodeSystem\/\$validate-code type \w+ shared$/, { anonymous: 401, token: 200 }, resultIs(true)],
  [/^op CodeSystem\/\$subsumes type \w+ shared$/, { anonymous: 401, token: 200 }, outcomeIs('equivalent')],
  [/^op ValueSet\/\$expand type \w+ shared$/, { anonymous: 401, token: 200 }, expands('male', 'female')],
  // A's canonicals: resolve for A's callers; for B's admin they do not exist (the documented not-found answers).
  [/^op CodeSystem\/\$lookup (type|instance) \w+ own$/, { anonymous: 401, A: 200, otherAdmin: 404 }, forA(hasDisplay('A one'))],
  [/^op ValueSet\/\$validate-code type \w+ own$/, { anonymous: 401, A: 200, otherAdmin: 400 }, forA(resultIs(true))],
  [/^op CodeSystem\/\$validate-code type \w+ own$/, { anonymous: 401, token: 200 }, forA(resultIs(true), resultIs(false))],
  [/^op CodeSystem\/\$subsumes (type|instance) \w+ own$/, { anonymous: 401, A: 200, otherAdmin: 404 }, forA(outcomeIs('subsumes'))],
  [/^op ValueSet\/\$expand type \w+ own$/, { anonymous: 401, A: 200, otherAdmin: 400 }, forA(expands('a1', 'a2'))],
  [/^op ValueSet\/\$validate-code instance \w+ own$/, { anonymous: 401, A: 200, otherAdmin: 404 }, forA(resultIs(true))],
  [/^op CodeSystem\/\$validate-code instance \w+ own$/, { anonymous: 401, A: 200, otherAdmin: 404 }, forA(resultIs(true))],
  [/^op ValueSet\/\$expand instance \w+ (own|empty)$/, { anonymous: 401, A: 200, otherAdmin: 404 }, forA(expands('a1', 'a2'))],
  // $translate: A's map for A's callers; for B's admin it does not exist (404 by url and by id).
  [/^op ConceptMap\/\$translate (type|instance) \w+ own$/, { anonymous: 401, A: 200, otherAdmin: 404 }, forA(translatesTo('b1'))],
  [/^op ConceptMap\/\$translate (type|instance) \w+ empty$/, { anonymous: 401, token: 400 }],
  // A batch without validations answers no validations; $versions is the same for everyone.
  [/^op ValueSet\/\$batch-validate-code type \w+ empty$/, { anonymous: 401, token: 200 }],
  [/^op \$versions system \w+ empty$/, { anonymous: 401, token: 200 }, (res) => assert.equal(paramValue(res, 'default'), '4.0', res.text)],
  // Instance level without a code: "no code" is checked before the instance, except by $lookup.
  [/^op CodeSystem\/\$lookup instance \w+ empty$/, { anonymous: 401, A: 400, otherAdmin: 404 }],
  [/^op (CodeSystem|ValueSet)\/\$(validate-code|subsumes) instance \w+ empty$/, { anonymous: 401, token: 400 }],
  // $validate (docs/rest.md#validate): no resource → 400; on A's instance B's admin gets 404 first.
  [/^op Resource\/\$validate type \w+ empty$/, { anonymous: 401, token: 400 }],
  [/^op Resource\/\$validate instance \w+ empty$/, { anonymous: 401, A: 400, otherAdmin: 404 }],
  [/^op Resource\/\$validate instance \w+ own$/, { anonymous: 401, A: 200, otherAdmin: 404 }, (res) => assert.equal(res.body?.issue?.[0]?.details?.text, 'All OK', res.text)],
  // Patient/$everything (docs/rest.md#everything) on A's patient.
  [/^op Patient\/\$everything instance \w+ empty$/, { anonymous: 401, A: 200, otherAdmin: 404 }, (res) => assert.equal(res.body?.type, 'searchset', res.text)],
];

/** What a route the table does not name must do. */
function defaults(route: Route, role: Role): Status {
  if (role === 'anonymous') return route.public ? undefined : 401;
  return undefined; // any status below 500 (the cross-project rule is checked for every route)
}

/** The expected status and check of `route` for `role`. */
function expected(route: Route, role: Role): { status: Status; check?: Check; row?: RegExp } {
  for (const [pattern, statuses, check] of TABLE) {
    if (!pattern.test(route.key)) continue;
    const who = PRECEDENCE.find((w) => w in statuses && (w === role || (GROUPS as Record<string, readonly Role[]>)[w]?.includes(role)));
    return { status: who ? statuses[who] : defaults(route, role), check, row: pattern };
  }
  return { status: defaults(route, role) };
}

// ---------------------------------------------------------------------------------------------

/** Per-role targets: fresh ones for everything a successful write would consume. */
interface Targets {
  Patient: string;
  User: string;
  ProjectMembership: string;
  ClientApplication: string;
  Project: string;
  /** A fresh member (for bodies that reference a user and a profile). */
  member: TestMember;
}

for (const driver of drivers) {
  describe(`role matrix (${driver})`, () => {
    let server: TestServer;
    let a: TestProject;
    let b: TestProject;
    let aMember: TestMember;
    let aClientToken: string;
    let aClient: TestClient;
    /** Project A's resources that operations run on at instance level, by type. */
    const instances: Record<string, string> = {};
    const counts: Partial<Record<Role, number>> = {};
    const usedRows = new Set<RegExp>();

    before(async () => {
      server = await startServer(driver);
      a = await createProject(server, 'Matrix A');
      b = await createProject(server, 'Matrix B');
      aMember = await createMember(server, a.projectId, { firstName: 'Plain', lastName: 'Member' });
      aClient = await createClient(server, a.projectId, { token: a.adminToken, name: 'Matrix A client' });
      aClientToken = aClient.token;
      const cs = await server.fhir('POST', '/CodeSystem', {
        token: a.adminToken,
        body: {
          resourceType: 'CodeSystem',
          url: A_CS,
          name: 'ACodes',
          status: 'active',
          content: 'complete',
          hierarchyMeaning: 'is-a',
          concept: [{ code: 'a1', display: 'A one', concept: [{ code: 'a2', display: 'A two' }] }],
        },
      });
      assert.equal(cs.status, 201, cs.text);
      const vs = await server.fhir('POST', '/ValueSet', {
        token: a.adminToken,
        body: { resourceType: 'ValueSet', url: A_VS, status: 'active', compose: { include: [{ system: A_CS }] } },
      });
      assert.equal(vs.status, 201, vs.text);
      const cm = await server.fhir('POST', '/ConceptMap', {
        token: a.adminToken,
        body: {
          resourceType: 'ConceptMap',
          url: A_CM,
          status: 'active',
          group: [{ source: A_CS, target: 'http://example.org/role-matrix/b-codes', element: [{ code: 'a1', target: [{ code: 'b1', equivalence: 'equivalent' }] }] }],
        },
      });
      assert.equal(cm.status, 201, cm.text);
      instances.CodeSystem = cs.body.id;
      instances.ValueSet = vs.body.id;
      instances.ConceptMap = cm.body.id;
    });
    after(async () => {
      const total = Object.values(counts).reduce((s, n) => s + n, 0);
      console.log(`# role matrix (${driver}): ${total} requests (${ROLES.map((r) => `${r} ${counts[r] ?? 0}`).join(', ')})`);
      await server?.stop();
    });

    /** A second login of the role's identity (the client has no login: its own token). */
    const throwawayToken = async (role: Role): Promise<string | null> => {
      switch (role) {
        case 'anonymous':
          return null;
        case 'superAdmin':
          return loginAs(server, 'admin@example.com', 'admin-password-123');
        case 'projectAdmin':
          return loginAs(server, a.adminEmail, a.adminPassword, a.projectId);
        case 'member':
          return loginAs(server, aMember.email, aMember.password, a.projectId);
        case 'otherAdmin':
          return loginAs(server, b.adminEmail, b.adminPassword, b.projectId);
        case 'client': // a client's token is a login of its own too (docs/auth.md#revocation)
          return (await clientCredentialsToken(server, aClient.clientId, aClient.secret)).access_token;
        default:
          return tokenOf(role);
      }
    };

    const tokenOf = (role: Role): string | null => {
      switch (role) {
        case 'anonymous':
          return null;
        case 'superAdmin':
          return server.adminToken!;
        case 'projectAdmin':
          return a.adminToken;
        case 'member':
          return aMember.token;
        case 'client':
          return aClientToken;
        case 'otherAdmin':
          return b.adminToken;
      }
    };
    /** The project the role's token acts in (its `project` claim). */
    const projectOf = (role: Role): string | undefined => {
      const token = tokenOf(role);
      return token ? JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString()).project : undefined;
    };

    /** A resource of project A of any type, for instance-level operations on types without a fixture. */
    async function instanceOf(type: string): Promise<string> {
      const t = type === 'Resource' || type === 'DomainResource' ? 'Patient' : type;
      // A Subscription must say what it watches and how it notifies (docs/rest.md#subscriptions).
      const required = t === 'Subscription' ? { status: 'off', reason: 'matrix', criteria: 'Patient', channel: { type: 'websocket' } } : {};
      instances[t] ??= (await server.app.system.create({ resourceType: t, ...required, meta: { project: a.projectId } } as unknown as Resource)).id!;
      return instances[t];
    }

    async function targetsFor(role: Role): Promise<Targets> {
      const patient = await server.fhir('POST', '/Patient', { token: a.adminToken, body: { resourceType: 'Patient', name: [{ family: `Target ${role}` }] } });
      assert.equal(patient.status, 201, patient.text);
      const member = await createMember(server, a.projectId, { firstName: 'Target', lastName: role });
      const client = await createClient(server, a.projectId, { token: a.adminToken, name: `Target ${role}` });
      let project = a.projectId;
      if (role === 'superAdmin') {
        // Its update and delete succeed: they get a project of their own to work on.
        const res = await server.fhir('POST', '/Project', { token: server.adminToken, body: { resourceType: 'Project', name: 'Matrix throwaway' } });
        assert.equal(res.status, 201, res.text);
        project = res.body.id;
      }
      return {
        Patient: patient.body.id,
        User: member.userId,
        ProjectMembership: member.membershipId,
        ClientApplication: client.clientId,
        Project: project,
        member,
      };
    }

    /** Every route of the matrix for one role, derived from the running application. */
    async function routesFor(role: Role, t: Targets): Promise<Route[]> {
      const routes: Route[] = [];
      const aIds = new Set([a.projectId, ...Object.values(instances), t.Patient, t.User, t.ProjectMembership, t.ClientApplication, t.Project]);

      // Non-FHIR routes: each `:param` filled (projectId with A's id and with a made-up one).
      for (const r of server.app.routes) {
        const names = [...r.url.matchAll(/:(\w+)/g)].map((m) => m[1]);
        const variants: Array<[label: string, values: Record<string, string>]> = names.includes('projectId')
          ? [
              ['A', { projectId: a.projectId }],
              ['unknown', { projectId: 'no-such-project' }],
            ]
          : [['', {}]];
        for (const [label, values] of variants) {
          const path = r.url.replace(/:(\w+)/g, (_, name: string) => values[name] ?? `made-up-${name}`);
          routes.push({
            key: `route ${r.method} ${r.url}${label ? ` [${label}]` : ''}`,
            method: r.method,
            path,
            body: r.method === 'POST' ? routeBody(r.url, role) : undefined,
            public: !r.auth,
            addressesA: label === 'A',
          });
        }
      }

      // FHIR REST interactions.
      routes.push({ key: 'rest metadata', method: 'GET', path: '/fhir/R4/metadata', public: true, addressesA: false });
      routes.push({ key: 'rest metadata terminology', method: 'GET', path: '/fhir/R4/metadata?mode=terminology', public: true, addressesA: false });

      // Compartment search on A's Patient: the patient itself is in its compartment (before the deletes).
      routes.push({
        key: 'rest compartment Patient',
        method: 'GET',
        path: `/fhir/R4/Patient/${t.Patient}/*`,
        public: false,
        addressesA: false,
        target: { type: 'Patient', id: t.Patient },
      });

      // Interaction by interaction (all deletes last), each on every type.
      const interactions: Array<[name: string, method: string, path: (type: string, id: string) => string]> = [
        ['create', 'POST', (type) => `/${type}`],
        ['read', 'GET', (type, id) => `/${type}/${id}`],
        ['vread', 'GET', (type, id) => `/${type}/${id}/_history/1`],
        ['search', 'GET', (type, id) => `/${type}?_id=${id}`],
        ['history', 'GET', (type, id) => `/${type}/${id}/_history`],
        ['type-history', 'GET', (type) => `/${type}/_history?_count=1000`],
        ['update', 'PUT', (type, id) => `/${type}/${id}`],
        ['delete', 'DELETE', (type, id) => `/${type}/${id}`],
      ];
      for (const [interaction, method, path] of interactions) {
        for (const type of REST_TYPES) {
          const id = t[type as keyof Targets] as string;
          const body = interaction === 'create' ? createBody(type, role, t) : interaction === 'update' ? await updateBody(type, id) : undefined;
          routes.push({ key: `rest ${interaction} ${type}`, method, path: `/fhir/R4${path(type, id)}`, body, public: false, addressesA: false, target: { type, id } });
        }
      }

      // Operations, at every level their definition declares.
      for (const def of server.app.operations.definitions()) {
        const types = (def.resource ?? []) as string[];
        const levels: Array<{ level: 'system' | 'type' | 'instance'; type?: string }> = [];
        if (def.system) levels.push({ level: 'system' });
        for (const type of types) {
          if (def.type) levels.push({ level: 'type', type });
          if (def.instance) levels.push({ level: 'instance', type });
        }
        for (const { level, type } of levels) {
          const inputs = OPERATION_INPUTS[`${type}/$${def.code}`] ?? {};
          // Operations on every type (`Resource`) are asked on Patient.
          const pathType = type === 'Resource' || type === 'DomainResource' ? 'Patient' : type;
          const base = level === 'system' ? '' : level === 'type' ? `/${pathType}` : `/${pathType}/${await instanceOf(type!)}`;
          const name = level === 'system' ? `$${def.code}` : `${type}/$${def.code}`;
          const variants: Array<[string, Inputs]> =
            level === 'instance'
              ? [['empty', {}], ...(inputs.instance ? [['own', inputs.instance] as [string, Inputs]] : [])]
              : [['empty', {}], ...(['shared', 'own'] as const).filter((v) => inputs[v]).map((v) => [v, inputs[v]!] as [string, Inputs])];
          for (const [variant, values] of variants) {
            const addressesA = level === 'instance';
            const op = (method: string, path: string, body?: unknown): void => {
              routes.push({ key: `op ${name} ${level} ${method} ${variant}`, method, path: `/fhir/R4${path}`, body, public: false, addressesA });
            };
            op('POST', `${base}/$${def.code}`, parametersBody(def, values));
            // GET where the inputs are simple (a state-changing operation is asked too: it must answer 405).
            const simple = Object.entries(values).filter((e): e is [string, Simple] => typeof e[1] !== 'object');
            if (simple.length === Object.keys(values).length) op('GET', `${base}/$${def.code}${queryString(simple)}`);
          }
        }
      }
      // Any path naming one of A's ids addresses A's data (search `?_id=` does not: it may answer empty).
      for (const r of routes) if (!r.addressesA && [...aIds].some((id) => r.path.includes(`/${id}`))) r.addressesA = true;
      return routes;
    }

    function routeBody(url: string, role: Role): unknown {
      const unique = `${role.toLowerCase()}-${randomBytes(4).toString('hex')}`;
      switch (url) {
        case '/auth/login':
          return { email: `nobody-${unique}@example.org`, password: 'wrong-password' };
        case '/auth/setpassword':
          return { id: 'made-up-link', secret: 'made-up-secret', password: 'a-good-password' };
        case '/admin/projects/:projectId/invite':
          return { resourceType: 'Practitioner', firstName: 'Invited', lastName: role, email: `invited-${unique}@example.org` };
        case '/admin/projects/:projectId/client':
          return { name: `Client by ${role}` };
        default:
          return {};
      }
    }

    function createBody(type: string, role: Role, t: Targets): unknown {
      const unique = `${role.toLowerCase()}-${randomBytes(4).toString('hex')}`;
      switch (type) {
        case 'Patient':
          return { resourceType: 'Patient', name: [{ family: `Created by ${role}` }] };
        case 'User':
          return { resourceType: 'User', firstName: 'Rest', lastName: 'User', email: `rest-${unique}@example.org` };
        case 'ProjectMembership':
          // The target member's user in the role's target project (the super admin's is a new one).
          return {
            resourceType: 'ProjectMembership',
            project: { reference: `Project/${t.Project}` },
            user: { reference: `User/${t.User}` },
            profile: { reference: t.member.profile },
          };
        case 'ClientApplication':
          return { resourceType: 'ClientApplication', name: `Rest app ${unique}` };
        default:
          return { resourceType: type, name: `Rest project ${unique}` };
      }
    }

    /** The target as the super admin reads it, with one harmless change. */
    async function updateBody(type: string, id: string): Promise<unknown> {
      const res = await server.fhir('GET', `/${type}/${id}`, { token: server.adminToken });
      assert.equal(res.status, 200, res.text);
      const body = { ...res.body };
      delete body.meta;
      if (type === 'Patient') body.gender = 'other';
      if (type === 'User') body.firstName = 'Changed';
      if (type === 'ClientApplication' || type === 'Project') body.description = 'Changed';
      return body;
    }

    /** Runs every route as `role`; returns the mismatches (empty when all is as the table says). */
    async function runAs(role: Role, t: Targets): Promise<string[]> {
      const failures: string[] = [];
      const routes = await routesFor(role, t);
      const aIds = role === 'otherAdmin' ? await idsOfA() : [];
      for (const route of routes) {
        // Logout ends the login it is called with: it gets a login of its own, so the role's
        // token keeps working for the rest of the matrix (and for the other tests).
        const token = route.key === 'route POST /oauth2/logout' ? await throwawayToken(role) : tokenOf(role);
        const res = await server.request(route.method, route.path, { token, body: route.body, contentType: 'application/json' });
        counts[role] = (counts[role] ?? 0) + 1;
        const where = `${role} ${route.method} ${route.path} (${route.key}) → ${res.status}`;
        const { status, check, row } = expected(route, role);
        if (row) usedRows.add(row);
        if (res.status >= 500) failures.push(`${where}: server error ${res.text.slice(0, 300)}`);
        else if (status !== undefined && !([] as number[]).concat(status).includes(res.status)) {
          failures.push(`${where}, expected ${JSON.stringify(status)}: ${res.text.slice(0, 300)}`);
        } else if (check && res.status < 300) {
          try {
            check(res, { role, route, projectId: projectOf(role) });
          } catch (err) {
            failures.push(`${where}: ${(err as Error).message.slice(0, 500)}`);
          }
        }
        if (role === 'otherAdmin') failures.push(...crossProject(route, res, aIds).map((f) => `${where}: ${f}`));
      }
      return failures;
    }

    /** Another project's admin never succeeds on A's data, nor sees any of A's ids. */
    function crossProject(route: Route, res: ApiResponse, aIds: string[]): string[] {
      if (res.status < 200 || res.status >= 300) return [];
      if (route.addressesA) return ['success on project A\'s data'];
      // Bundles repeat the query in their links: look at the entries only.
      const shown = res.body?.resourceType === 'Bundle' ? JSON.stringify(res.body.entry ?? []) : res.text;
      const leaked = aIds.filter((id) => shown.includes(id));
      return leaked.length ? [`shows project A's ids ${leaked.join(', ')}`] : [];
    }

    async function idsOfA(): Promise<string[]> {
      const rows = await server.app.db.query<{ id: string }>('SELECT id FROM resource WHERE project_id = $1', [a.projectId]);
      return [a.projectId, ...rows.rows.map((r) => r.id)];
    }

    /** Everything of project A: resources and history, its terminology index, its memberships. */
    async function snapshotOfA(): Promise<string> {
      const db = server.app.db;
      const p = [a.projectId];
      const parts = await Promise.all([
        db.query('SELECT resource_type, id, version_id, deleted, content FROM resource WHERE project_id = $1 ORDER BY 1, 2', p),
        db.query('SELECT resource_type, id, version_id, deleted FROM resource_history WHERE project_id = $1 ORDER BY 1, 2, 3', p),
        db.query('SELECT resource_id, url, version, concept_count, last_updated FROM tx_code_system WHERE project_id = $1 ORDER BY 1', p),
        db.query(
          `SELECT s.resource_id, c.code, c.display FROM tx_concept c JOIN tx_code_system s ON s.cs_key = c.cs_key
           WHERE s.project_id = $1 ORDER BY 1, 2`,
          p,
        ),
        db.query('SELECT id, member_type, member_id, profile, admin FROM auth_membership WHERE project_id = $1 ORDER BY 1', p),
      ]);
      return JSON.stringify(parts.map((r) => r.rows));
    }

    for (const role of ROLES) {
      test(`${role}: every route answers as the role table says`, async () => {
        const t = await targetsFor(role);
        const before = role === 'otherAdmin' ? await snapshotOfA() : '';
        const failures = await runAs(role, t);
        assert.deepEqual(failures, [], `${failures.length} mismatches:\n${failures.join('\n')}`);
        if (role === 'otherAdmin') assert.equal(await snapshotOfA(), before, "project A changed after B's admin's requests");
      });
    }

    // -------------------------------------------------------------------------------------------
    // Scope and access-policy dimension (docs/auth.md#scopes, docs/auth.md#access-policies): A's
    // plain member logged in with one scope form each (v1, v2, one asking more than its membership
    // has), and a member whose membership has an access policy. Expected per REST interaction on
    // Patient: read, search, create, update, delete. Then every route of the matrix with each
    // such token: never a 5xx.
    // -------------------------------------------------------------------------------------------
    type Rest = 'read' | 'search' | 'create' | 'update' | 'delete';
    const OK: Record<Rest, number> = { read: 200, search: 200, create: 201, update: 200, delete: 200 };
    const only = (...allowed: Rest[]): Record<Rest, number> =>
      Object.fromEntries((Object.keys(OK) as Rest[]).map((k) => [k, allowed.includes(k) ? OK[k] : 403])) as Record<Rest, number>;
    const SCOPED: Array<[label: string, scope: string, expect: Record<Rest, number>]> = [
      ['v1 user/Patient.read', 'openid user/Patient.read', only('read', 'search')],
      ['v1 user/Patient.write', 'user/Patient.write', only('create', 'update', 'delete')],
      ['v1 user/Patient.*', 'user/Patient.*', OK],
      ['v1 user/*.read', 'user/*.read', only('read', 'search')],
      ['v2 user/Patient.rs', 'user/Patient.rs', only('read', 'search')],
      ['v2 user/Patient.cud', 'user/Patient.cud', only('create', 'update', 'delete')],
      ['v2 user/Patient.cruds', 'user/Patient.cruds', OK],
      ['v2 user/Observation.rs (another type)', 'user/Observation.rs', only()],
      ['more than the membership has: user/*.*', 'user/*.*', OK],
    ];

    async function scopedToken(email: string, password: string, scope: string): Promise<string> {
      return (await loginTokens(server, email, password, { projectId: a.projectId, scope })).access_token;
    }

    async function restAs(token: string): Promise<Record<Rest, number>> {
      const target = await server.fhir('POST', '/Patient', { token: a.adminToken, body: { resourceType: 'Patient', name: [{ family: 'Scoped' }] } });
      const id = target.body.id as string;
      return {
        read: (await server.fhir('GET', `/Patient/${id}`, { token })).status,
        search: (await server.fhir('GET', '/Patient?_count=1', { token })).status,
        create: (await server.fhir('POST', '/Patient', { token, body: { resourceType: 'Patient' } })).status,
        update: (await server.fhir('PUT', `/Patient/${id}`, { token, body: { resourceType: 'Patient', id, gender: 'other' } })).status,
        delete: (await server.fhir('DELETE', `/Patient/${id}`, { token })).status,
      };
    }

    async function noServerErrors(token: string, label: string): Promise<string[]> {
      const routes = await routesFor('member', await targetsFor('member'));
      const failures: string[] = [];
      for (const route of routes) {
        if (route.key === 'route POST /oauth2/logout') continue; // would end the scoped login
        const res = await server.request(route.method, route.path, { token, body: route.body, contentType: 'application/json' });
        if (res.status >= 500) failures.push(`${label} ${route.method} ${route.path} → ${res.status}: ${res.text.slice(0, 300)}`);
      }
      return failures;
    }

    for (const [label, scope, expect] of SCOPED) {
      test(`scope ${label}: Patient interactions as declared, no route a 5xx`, async () => {
        const token = await scopedToken(aMember.email, aMember.password, scope);
        assert.deepEqual(await restAs(token), expect);
        assert.deepEqual(await noServerErrors(token, label), []);
      });
    }

    test('system/ scopes through client_credentials: a client of A with system/Patient.rs reads and searches Patient only; no route a 5xx', async () => {
      const client = await createClient(server, a.projectId, { token: a.adminToken, name: 'Matrix scoped client' });
      const res = await tokenRequest(server, { grant_type: 'client_credentials', client_id: client.clientId, client_secret: client.secret, scope: 'system/Patient.rs' });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.scope, 'system/Patient.rs');
      const token = res.body.access_token as string;
      assert.deepEqual(await restAs(token), only('read', 'search'));
      assert.deepEqual(await noServerErrors(token, 'system/Patient.rs client'), []);
    });

    test('a patient/ scope without a patient context, or a system/ scope for a person, is not granted: 400 invalid_scope', async () => {
      for (const scope of ['patient/Patient.rs', 'system/*.*']) {
        const pkce = pkcePair();
        const login = await server.request('POST', '/auth/login', {
          body: { email: aMember.email, password: aMember.password, projectId: a.projectId, scope, codeChallenge: pkce.challenge, codeChallengeMethod: 'S256' },
          contentType: 'application/json',
          token: null,
        });
        assert.equal(login.status, 200, login.text);
        const tokens = await tokenRequest(server, { grant_type: 'authorization_code', code: login.body.code, code_verifier: pkce.verifier });
        assert.equal(tokens.status, 400, tokens.text);
        assert.equal(tokens.body.error, 'invalid_scope', tokens.text);
      }
    });

    test('more than the membership has: a plain member with user/*.* still cannot write Project or see others\' memberships', async () => {
      const token = await scopedToken(aMember.email, aMember.password, 'user/*.*');
      assert.equal((await server.fhir('POST', '/Project', { token, body: { resourceType: 'Project', name: 'x' } })).status, 403);
      const memberships = await server.fhir('GET', '/ProjectMembership', { token });
      assert.equal(memberships.status, 200);
      assert.deepEqual(memberships.body.entry.map((e: { resource: Resource }) => e.resource.id), [aMember.membershipId]);
    });

    test('access policy: a member with a Patient read-only policy reads and searches Patient, writes nothing, other types 403; no route a 5xx', async () => {
      const policy = await server.fhir('POST', '/AccessPolicy', { token: a.adminToken, body: { resourceType: 'AccessPolicy', resource: [{ resourceType: 'Patient', readonly: true }] } });
      assert.equal(policy.status, 201, policy.text);
      const email = `policy-${randomBytes(4).toString('hex')}@example.org`;
      const password = `pw-${randomBytes(9).toString('base64url')}`;
      const invited = await server.request('POST', `/admin/projects/${a.projectId}/invite`, {
        body: { resourceType: 'Practitioner', firstName: 'Policy', lastName: 'Member', email, password, membership: { accessPolicy: { reference: `AccessPolicy/${policy.body.id}` } } },
        contentType: 'application/json',
        token: a.adminToken,
      });
      assert.equal(invited.status, 200, invited.text);
      const token = await scopedToken(email, password, 'openid');
      assert.deepEqual(await restAs(token), only('read', 'search'));
      assert.equal((await server.fhir('GET', '/Observation', { token })).status, 403);
      assert.deepEqual(await noServerErrors(token, 'policy member'), []);
    });

    test('every row of the table matched a route (no stale rows)', () => {
      const unused = TABLE.map(([pattern]) => pattern).filter((p) => !usedRows.has(p));
      assert.deepEqual(unused, []);
    });
  });
}

/** A Parameters body whose values are typed from the operation's definition (`valueUri`, `valueCoding`, …). */
function parametersBody(def: OperationDefinition, values: Inputs): unknown {
  const parameter = Object.entries(values).map(([name, value]) => {
    const declared = (def.parameter ?? []).find((p: OperationDefinitionParameter) => p.use === 'in' && p.name === name);
    const type = declared?.type ?? (typeof value === 'number' ? 'integer' : typeof value === 'boolean' ? 'boolean' : 'string');
    return { name, [`value${type[0].toUpperCase()}${type.slice(1)}`]: value };
  });
  return parameter.length ? { resourceType: 'Parameters', parameter } : { resourceType: 'Parameters' };
}

function queryString(values: Array<[string, Simple]>): string {
  const q = new URLSearchParams(values.map(([k, v]) => [k, String(v)])).toString();
  return q ? `?${q}` : '';
}
