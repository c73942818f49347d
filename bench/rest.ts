import { validateResource } from '../src/fhir/validation/validate-resource.js';
import { load, table, type LoadResult } from './http-load.js';
import { startBareProcess, startLatticeProcess } from './server-process.js';
import { benchToken } from './token.js';

/**
 * REST benchmark: a bare Node HTTP server (own process) answering a stored Patient's JSON is
 * the baseline; Lattice (own process, in-memory PGlite) read, search and create are reported
 * as ratios to it, measured in the same run with the same load generator.
 */
export async function benchRest(seconds: number): Promise<string> {
  const lattice = await startLatticeProcess();
  try {
    const token = await benchToken(lattice.url);
    const auth: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
    const json = { ...auth, 'content-type': 'application/fhir+json' };
    const patient = {
      resourceType: 'Patient',
      name: [{ family: 'Bench', given: ['Mark'] }],
      gender: 'female',
      birthDate: '1970-01-01',
      telecom: [{ system: 'email', value: 'bench@example.com' }],
    };
    const res = await fetch(`${lattice.url}/fhir/R4/Patient`, { method: 'POST', headers: json, body: JSON.stringify(patient) });
    const created = (await res.json()) as { id: string };
    const bare = await startBareProcess(JSON.stringify(created));
    const rows: Array<[string, LoadResult]> = [];
    try {
      rows.push(['bare node:http (baseline)', await load(bare.url, { seconds })]);
    } finally {
      await bare.stop();
    }
    const fhir = `${lattice.url}/fhir/R4`;
    rows.push(['GET /Patient/<id>', await load(`${fhir}/Patient/${created.id}`, { seconds, headers: auth })]);
    rows.push(['GET /Patient?name=bench&_count=10', await load(`${fhir}/Patient?name=bench&_count=10`, { seconds, headers: auth })]);
    rows.push(['POST /Patient', await load(`${fhir}/Patient`, { seconds, method: 'POST', headers: json, body: JSON.stringify(patient) })]);

    const n = 20000;
    for (let i = 0; i < 1000; i++) validateResource(patient);
    const start = performance.now();
    for (let i = 0; i < n; i++) validateResource(patient);
    const perCall = ((performance.now() - start) / n) * 1000;
    return `## REST (PGlite in memory, ${seconds}s per case, 10 connections)\n\n${table(rows)}\n\nvalidation of a Patient: ${perCall.toFixed(1)} µs per call (warm)\n`;
  } finally {
    await lattice.stop();
  }
}
