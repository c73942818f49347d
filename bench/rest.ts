import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { validateResource } from '../src/fhir/validation/validate-resource.js';
import { load, table, type LoadResult } from './http-load.js';
import { exportRow, measureExport } from './export.js';
import { loadPopulation } from './population.js';
import { measureBare } from './server-process.js';
import { patientResources, resourcesPerPatient, uuidOf, withUrnReferences, writeSyntheaNdjson, type SyntheaShape } from './synthea-like.js';

/** The shape of the generated population (writeSyntheaNdjson's default). */
const SHAPE: SyntheaShape = { patients: 0, encounters: 10, observations: 5 };


export interface RestOptions {
  seconds: number;
  connections: number;
  drivers: Array<'pglite' | 'pg'>;
  /** Resources of the generated NDJSON import (Synthea-shaped). */
  importSize: number;
}

/**
 * REST benchmark (docs/rest.md#cost-of-a-request), per driver: a generated Synthea-shaped
 * population loaded with `lattice import` (resources/s, peak RSS), then — on that data — read,
 * search, create and update under load as ratios to a bare Node HTTP server measured in the
 * same run, transaction Bundles of 500 and of 5,000 entries one after another (resources/s), and
 * a system-level Bulk Data `$export` of the population (resources/s, the server's peak RSS).
 */
export async function benchRest(options: RestOptions): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'lattice-bench-rest-'));
  try {
    const file = join(dir, 'population.ndjson');
    const generated = await writeSyntheaNdjson(file, options.importSize, SHAPE);
    const baseline = await measureBare(JSON.stringify({ resourceType: 'Patient', id: 'x', name: [{ family: 'Smith' }] }), (url) =>
      load(url, { seconds: options.seconds, connections: options.connections }),
    );
    const sections: string[] = [];
    for (const driver of options.drivers) sections.push(await benchDriver(driver, file, generated, dir, baseline, options));
    return (
      `## REST (${options.seconds}s per case, ${options.connections} connections; import of ${generated.toLocaleString('en')} generated resources)\n\n` +
      sections.join('\n\n') +
      `\n\nvalidation of a Patient: ${validationMicros().toFixed(1)} µs per call (warm)\n`
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function benchDriver(driver: 'pglite' | 'pg', file: string, generated: number, dir: string, baseline: LoadResult, options: RestOptions): Promise<string> {
  const population = await loadPopulation(driver, file, dir, generated);
  const { server, token, imported } = population;
  try {
    // First, on a server that has done nothing else: its peak RSS is the export's.
    const exported = await measureExport(server, token, generated);
    const fhir = `${server.url}/fhir/R4`;
    const auth = { authorization: `Bearer ${token}` };
    const json = { ...auth, 'content-type': 'application/fhir+json' };
    const patient = patientResources(0, { patients: 1, encounters: 0, observations: 0 }).next().value as Record<string, unknown>;
    const check = async (path: string, init: RequestInit = {}) => {
      const res = await fetch(`${fhir}${path}`, { headers: json, ...init });
      if (!res.ok) throw new Error(`${path}: ${res.status} ${(await res.text()).slice(0, 300)}`);
      return (await res.json()) as Record<string, unknown>;
    };
    await check('/Patient/syn-p1');
    const found = await check('/Patient?family=Smith&_count=10');
    if (!Array.isArray(found.entry) || found.entry.length === 0) throw new Error('the search found no imported Patient');
    const { seconds, connections } = options;
    const rows: Array<[string, LoadResult]> = [['bare node:http (baseline)', baseline]];
    rows.push(['GET /Patient/<id>', await load(`${fhir}/Patient/syn-p1`, { seconds, connections, headers: auth })]);
    rows.push(['GET /Patient?family=Smith&_count=10', await load(`${fhir}/Patient?family=Smith&_count=10`, { seconds, connections, headers: auth })]);
    rows.push([
      'GET /Observation?subject=Patient/<id>&code=8302-2',
      await load(`${fhir}/Observation?subject=Patient/syn-p2&code=http://loinc.org|8302-2`, { seconds, connections, headers: auth }),
    ]);
    rows.push(['GET /Encounter?date=ge2015-01-01&_count=10', await load(`${fhir}/Encounter?date=ge2015-01-01&_count=10`, { seconds, connections, headers: auth })]);
    const body = JSON.stringify({ ...patient, id: undefined });
    rows.push(['POST /Patient', await load(`${fhir}/Patient`, { seconds, connections, method: 'POST', headers: json, body })]);
    // Each update changes the content (an identical PUT writes nothing), of one of the
    // imported Patients in turn (one resource for all would measure its row lock).
    let n = 0;
    const patients = Math.max(1, Math.round(generated / resourcesPerPatient(SHAPE)));
    const update = () => {
      const id = `syn-p${n % patients}`;
      const birthDate = `19${String(10 + (Math.floor(n++ / patients) % 89))}-01-01`;
      return { path: `/fhir/R4/Patient/${id}`, body: JSON.stringify({ ...patient, id, birthDate }) };
    };
    rows.push(['PUT /Patient/<id> (changed)', await load(`${fhir}/Patient/syn-p3`, { seconds, connections, method: 'PUT', headers: json, body: update })]);
    // $validate of an Observation against the specification's heart-rate profile (vital signs:
    // slices by pattern, bindings, invariants), next to the same $validate without a profile.
    const validateBody = (profile?: string) =>
      JSON.stringify({ resourceType: 'Parameters', parameter: [{ name: 'resource', resource: HEART_RATE }, ...(profile ? [{ name: 'profile', valueUri: profile }] : [])] });
    await expectValid(fhir, json, validateBody(HEART_RATE_PROFILE));
    rows.push(['POST /Observation/$validate (no profile)', await load(`${fhir}/Observation/$validate`, { seconds, connections, method: 'POST', headers: json, body: validateBody() })]);
    rows.push(['POST /Observation/$validate (heart-rate profile)', await load(`${fhir}/Observation/$validate`, { seconds, connections, method: 'POST', headers: json, body: validateBody(HEART_RATE_PROFILE) })]);
    const tx = await transactions(fhir, json, seconds, 500);
    const txLarge = await transactions(fhir, json, seconds, 5000);
    const ratios = table(rows);
    return (
      `### ${driver}\n\n${ratios}\n\n` +
      `| bulk | resources/s | notes |\n|---|---|---|\n` +
      `| \`lattice import\` NDJSON | ${(generated / imported.seconds).toFixed(0)} | ${generated.toLocaleString('en')} resources in ${imported.seconds.toFixed(1)} s (process start included), peak RSS ${(imported.peakRss / 2 ** 20).toFixed(0)} MiB |\n` +
      `| transaction Bundles of 500 entries, one at a time | ${tx.perSecond.toFixed(0)} | ${tx.bundles} Bundles |\n` +
      `| transaction Bundles of 5,000 entries, one at a time | ${txLarge.perSecond.toFixed(0)} | ${txLarge.bundles} Bundles |\n` +
      exportRow(exported)
    );
  } finally {
    await population.stop();
  }
}

const HEART_RATE_PROFILE = 'http://hl7.org/fhir/StructureDefinition/heartrate';
const HEART_RATE = {
  resourceType: 'Observation',
  meta: { profile: [HEART_RATE_PROFILE] },
  status: 'final',
  category: [{ coding: [{ system: 'http://terminology.hl7.org/CodeSystem/observation-category', code: 'vital-signs', display: 'Vital Signs' }] }],
  code: { coding: [{ system: 'http://loinc.org', code: '8867-4', display: 'Heart rate' }], text: 'Heart rate' },
  subject: { reference: 'Patient/syn-p1' },
  effectiveDateTime: '2024-05-01T09:30:00Z',
  valueQuantity: { value: 72, unit: 'beats/minute', system: 'http://unitsofmeasure.org', code: '/min' },
};

/** The profiled Observation must pass, or the row would measure error answers. */
async function expectValid(fhir: string, headers: Record<string, string>, body: string): Promise<void> {
  const res = await fetch(`${fhir}/Observation/$validate`, { method: 'POST', headers, body });
  const outcome = (await res.json()) as { issue?: Array<{ severity: string; details?: { text?: string } }> };
  const errors = (outcome.issue ?? []).filter((i) => i.severity === 'error');
  if (res.status !== 200 || errors.length > 0) throw new Error(`the heart-rate Observation does not validate: ${res.status} ${JSON.stringify(errors).slice(0, 500)}`);
}

/**
 * POSTs transaction Bundles of `size` entries (Patients, each followed by its Encounters,
 * Observations and Conditions with urn:uuid references) for `seconds`, at least one.
 */
async function transactions(fhir: string, headers: Record<string, string>, seconds: number, size: number): Promise<{ perSecond: number; bundles: number }> {
  let bundles = 0;
  let resources = 0;
  let p = size * 1000; // patients of different Bundle sizes never share ids
  const started = performance.now();
  while (performance.now() - started < seconds * 1000 || bundles === 0) {
    const entry: unknown[] = [];
    while (entry.length < size) {
      for (const r of patientResources(p, { patients: 1, encounters: 40, observations: 11 })) {
        if (entry.length === size) break;
        const { id, ...rest } = r as { id: string; resourceType: string };
        entry.push({ fullUrl: `urn:uuid:${uuidOf(id)}`, resource: withUrnReferences(rest), request: { method: 'POST', url: rest.resourceType } });
      }
      p++;
    }
    const res = await fetch(fhir, { method: 'POST', headers, body: JSON.stringify({ resourceType: 'Bundle', type: 'transaction', entry }) });
    if (res.status !== 200) throw new Error(`transaction: ${res.status} ${(await res.text()).slice(0, 300)}`);
    await res.arrayBuffer();
    bundles++;
    resources += entry.length;
  }
  return { perSecond: resources / ((performance.now() - started) / 1000), bundles };
}

function validationMicros(): number {
  const patient = patientResources(0, { patients: 1, encounters: 0, observations: 0 }).next().value as Record<string, unknown>;
  const n = 20000;
  for (let i = 0; i < 1000; i++) validateResource(patient);
  const start = performance.now();
  for (let i = 0; i < n; i++) validateResource(patient);
  return ((performance.now() - start) / n) * 1000;
}
