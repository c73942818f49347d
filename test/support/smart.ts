import { randomBytes } from 'node:crypto';
import type { AccessPolicy, ClientApplication, Patient, ProjectMembership } from '@medplum/fhirtypes';
import { createLocalJWKSet, jwtVerify, type JWTPayload } from 'jose';
import { createMembership, createUser } from '../../src/auth/accounts.js';
import { createClient, type TestServer } from '../harness.js';

/** Helpers of the SMART launch tests (docs/auth.md#smart-launch). */

/** Stores a Patient in a project (as the system) and returns its id. */
export async function createPatient(server: TestServer, projectId: string, family: string): Promise<string> {
  const patient = await server.app.system.create<Patient>({ resourceType: 'Patient', name: [{ given: ['Pat'], family }], meta: { project: projectId } });
  return patient.id!;
}

/** A person whose membership profile is a Patient of the project (what an invited patient gets). */
export async function createPatientMember(server: TestServer, projectId: string): Promise<{ email: string; password: string; patientId: string; userId: string }> {
  const email = `patient-${randomBytes(5).toString('hex')}@example.org`;
  const password = `pw-${randomBytes(9).toString('base64url')}`;
  const patientId = await createPatient(server, projectId, 'Self');
  const user = await createUser(server.app.system, {
    email,
    password,
    passwordCost: server.config.passwordCost,
    firstName: 'Pat',
    lastName: 'Self',
    ownerProjectId: projectId,
  });
  await createMembership(server.app.system, { projectId, member: { reference: `User/${user.id}` }, profile: { reference: `Patient/${patientId}` } });
  return { email, password, patientId, userId: user.id! };
}

/**
 * A client application of the project with registered redirect URIs and, when given, the scopes
 * it may be granted (`ClientApplication.scope`, written as the system).
 */
export async function createSmartClient(
  server: TestServer,
  projectId: string,
  options: { redirectUri?: string; scope?: string } = {},
): Promise<{ clientId: string; secret: string }> {
  const created = await createClient(server, projectId, { name: 'SMART app' });
  const client = await server.app.system.read<ClientApplication>('ClientApplication', created.clientId);
  await server.app.system.update({
    ...client,
    redirectUri: options.redirectUri ?? 'https://app.example/callback',
    ...(options.scope ? { scope: options.scope } : {}),
  });
  return { clientId: created.clientId, secret: created.secret };
}

/** Verifies an ID token against the server's published keys; returns its claims. */
export async function verifyIdToken(server: TestServer, idToken: string, audience: string): Promise<JWTPayload> {
  const jwks = await server.request('GET', '/.well-known/jwks.json', { token: null });
  const { payload, protectedHeader } = await jwtVerify(idToken, createLocalJWKSet(jwks.body), { issuer: server.baseUrl, audience, algorithms: ['ES256'] });
  if (protectedHeader.typ !== 'JWT') throw new Error(`unexpected id_token typ ${protectedHeader.typ}`);
  return payload;
}

/** Stores an AccessPolicy in a project and attaches it to a membership (as the system); returns the policy id. */
export async function attachPolicy(server: TestServer, projectId: string, membershipId: string, policy: Omit<AccessPolicy, 'resourceType'>): Promise<string> {
  const stored = await server.app.system.create<AccessPolicy>({ resourceType: 'AccessPolicy', ...policy, meta: { project: projectId } });
  const membership = await server.app.system.read<ProjectMembership>('ProjectMembership', membershipId);
  await server.app.system.update({ ...membership, accessPolicy: { reference: `AccessPolicy/${stored.id}` } });
  return stored.id!;
}
