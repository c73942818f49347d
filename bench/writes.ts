import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { load, table, type LoadResult } from './http-load.js';
import { benchPostgres } from './postgres.js';
import { measureBare, startLatticeProcess } from './server-process.js';
import { patientResources, uuidOf, withUrnReferences, type SyntheaShape } from './synthea-like.js';
import { benchToken } from './token.js';

/** Organizations and Practitioners every patient's Bundle refers to by identifier, as Synthea's do. */
const ORGANIZATIONS = 20;
const PRACTITIONERS = 50;
const ORG_SYSTEM = 'https://example.org/org';
const PRACTITIONER_SYSTEM = 'http://hl7.org/fhir/sid/us-npi';

export interface WritesOptions {
  seconds: number;
  connections: number;
  drivers: Array<'pglite' | 'pg'>;
  /** Server processes on PostgreSQL, one row set per value (docs/deployment.md#workers). */
  workers: number[];
  /** Entries of the transaction Bundles, one row per size. */
  sizes: number[];
  /** Bundles in flight at a time. */
  inFlight: number;
}

/**
 * `npm run bench -- writes`: creates under load (ratio to a bare node:http server measured in
 * the same run) and Synthea-shaped transaction Bundles — a patient's Patient, Encounters,
 * Observations and Conditions with `urn:uuid:` references among them and conditional
 * references (`Organization?identifier=…`, `Practitioner?identifier=…`) to shared resources
 * stored before — of each size in `sizes`, `inFlight` at a time (resources/s). On PostgreSQL
 * once per entry of `workers`.
 */
export async function benchWrites(options: WritesOptions): Promise<string> {
  const baseline = await measureBare(JSON.stringify({ resourceType: 'Patient', id: 'x', name: [{ family: 'Smith' }] }), (url) =>
    load(url, { seconds: options.seconds, connections: options.connections }),
  );
  const sections: string[] = [];
  for (const driver of options.drivers) {
    for (const workers of driver === 'pg' ? options.workers : [1]) sections.push(await benchOne(driver, workers, baseline, options));
  }
  return `## Writes (${options.seconds}s per case, ${options.connections} connections; Bundles ${options.inFlight} in flight, no database time limit)\n\n${sections.join('\n\n')}\n`;
}

async function benchOne(driver: 'pglite' | 'pg', workers: number, baseline: LoadResult, options: WritesOptions): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'lattice-bench-writes-'));
  const postgres = driver === 'pg' ? await benchPostgres() : undefined;
  try {
    const storage: Record<string, string> = postgres ? { DATABASE_URL: postgres.url } : { LATTICE_DATA_DIR: join(dir, 'data'), DATABASE_URL: '' };
    const server = await startLatticeProcess({ ...storage, LATTICE_WORKERS: String(workers), LATTICE_BASE_TERMINOLOGY: 'lazy', LATTICE_DB_STATEMENT_TIMEOUT: '0' });
    try {
      const token = await benchToken(server.url);
      const fhir = `${server.url}/fhir/R4`;
      const json = { authorization: `Bearer ${token}`, 'content-type': 'application/fhir+json' };
      await post(fhir, json, sharedResources());
      const patient = patientResources(0, { patients: 1, encounters: 0, observations: 0 }).next().value as Record<string, unknown>;
      const body = JSON.stringify({ ...patient, id: undefined });
      const { seconds, connections } = options;
      const rows: Array<[string, LoadResult]> = [
        ['bare node:http (baseline)', baseline],
        ['POST /Patient', await load(`${fhir}/Patient`, { seconds, connections, method: 'POST', headers: json, body })],
      ];
      const bulk: string[] = [];
      let next = 0;
      for (const size of options.sizes) {
        const tx = await transactions(fhir, json, seconds, size, options.inFlight, () => next++);
        bulk.push(`| Synthea-shaped transaction Bundles of ${size.toLocaleString('en')} entries | ${tx.perSecond.toFixed(0)} | ${tx.bundles} Bundles, ${tx.conditional} conditional references each |`);
      }
      return `### ${driver}${driver === 'pg' ? `, ${workers} worker${workers > 1 ? 's' : ''}` : ''}\n\n${table(rows)}\n\n| bulk | resources/s | notes |\n|---|---|---|\n${bulk.join('\n')}`;
    } finally {
      await server.stop();
    }
  } finally {
    await postgres?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function post(fhir: string, headers: Record<string, string>, bundle: unknown): Promise<void> {
  const res = await fetch(fhir, { method: 'POST', headers, body: JSON.stringify(bundle) });
  if (res.status !== 200) throw new Error(`transaction: ${res.status} ${(await res.text()).slice(0, 300)}`);
  await res.arrayBuffer();
}

/** A transaction Bundle of the Organizations and Practitioners the patients' Bundles refer to by identifier. */
export function sharedResources(): unknown {
  const entry: unknown[] = [];
  for (let i = 0; i < ORGANIZATIONS; i++) {
    entry.push({ resource: { resourceType: 'Organization', identifier: [{ system: ORG_SYSTEM, value: `ORG${i}` }], name: `Clinic ${i}` }, request: { method: 'POST', url: 'Organization' } });
  }
  for (let i = 0; i < PRACTITIONERS; i++) {
    entry.push({
      resource: { resourceType: 'Practitioner', identifier: [{ system: PRACTITIONER_SYSTEM, value: `${9990000 + i}` }], name: [{ family: `Doctor${i}` }] },
      request: { method: 'POST', url: 'Practitioner' },
    });
  }
  return { resourceType: 'Bundle', type: 'transaction', entry };
}

/** One patient's Bundle entries: `urn:uuid:` references among them, conditional references to the shared resources. */
function patientEntries(p: number, shape: SyntheaShape): { entries: unknown[]; conditional: number } {
  const org = `Organization?identifier=${ORG_SYSTEM}|ORG${p % ORGANIZATIONS}`;
  const doctor = `Practitioner?identifier=${PRACTITIONER_SYSTEM}|${9990000 + (p % PRACTITIONERS)}`;
  const entries: unknown[] = [];
  let conditional = 0;
  for (const r of patientResources(p, shape)) {
    const { id, ...rest } = r as { id: string; resourceType: string };
    const resource = withUrnReferences(rest);
    if (rest.resourceType === 'Patient') {
      Object.assign(resource, { generalPractitioner: [{ reference: doctor }], managingOrganization: { reference: org } });
      conditional += 2;
    } else if (rest.resourceType === 'Encounter') {
      Object.assign(resource, { serviceProvider: { reference: org }, participant: [{ individual: { reference: doctor } }] });
      conditional += 2;
    }
    entries.push({ fullUrl: `urn:uuid:${uuidOf(id)}`, resource, request: { method: 'POST', url: rest.resourceType } });
  }
  return { entries, conditional };
}

/**
 * A Synthea-shaped transaction Bundle of `size` entries: whole patients (one Encounter per 40
 * entries, 5 Observations each) from `nextPatient()` on, cut at `size`; `conditional` counts its
 * conditional references (bench/cpu-per-transaction.mjs uses it too).
 */
export function transactionBundle(size: number, nextPatient: () => number): { bundle: unknown; conditional: number } {
  const shape = { patients: 1, encounters: Math.max(1, Math.round(size / 40)), observations: 5 };
  const entry: unknown[] = [];
  let conditional = 0;
  while (entry.length < size) {
    const made = patientEntries(nextPatient(), shape);
    entry.push(...made.entries.slice(0, size - entry.length));
    conditional += made.conditional;
  }
  return { bundle: { resourceType: 'Bundle', type: 'transaction', entry }, conditional };
}

/** POSTs Bundles of `size` entries for `seconds` (at least one each), `inFlight` at a time. */
async function transactions(
  fhir: string,
  headers: Record<string, string>,
  seconds: number,
  size: number,
  inFlight: number,
  nextPatient: () => number,
): Promise<{ perSecond: number; bundles: number; conditional: number }> {
  let bundles = 0;
  let resources = 0;
  let conditional = 0;
  const started = performance.now();
  const sender = async () => {
    while (performance.now() - started < seconds * 1000 || bundles === 0) {
      const made = transactionBundle(size, nextPatient);
      await post(fhir, headers, made.bundle);
      bundles++;
      resources += size;
      conditional = made.conditional;
    }
  };
  await Promise.all(Array.from({ length: inFlight }, sender));
  return { perSecond: resources / ((performance.now() - started) / 1000), bundles, conditional };
}
