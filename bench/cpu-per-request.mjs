#!/usr/bin/env node
// Server CPU per warm `$lookup`, for an A/B of two builds on one machine: starts the built server
// of a checkout (`<dir>/dist/lattice.js`, run `npm run build` there first) on an in-memory PGlite
// database, stores a 5,000-concept CodeSystem, warms it, then sends 3 rounds of 30,000 lookups
// (16 connections) and reads the server process's CPU time from /proc (Linux). The load
// generator's own CPU does not count, so the number is steadier than a throughput ratio on a
// 2-core machine. Usage: node bench/cpu-per-request.mjs [checkout dir, default .] [port]
import { resolve } from 'node:path';
import { withMeasuredServer } from './cpu-server.mjs';

const dir = resolve(process.argv[2] ?? '.');
const port = Number(process.argv[3] ?? 18100);

await withMeasuredServer({ dir, port, startTries: 150 }, async ({ base, headers, rounds }) => {
  const concept = Array.from({ length: 5000 }, (_, i) => ({
    code: `c${i}`,
    display: `Concept ${i}`,
    designation: [{ language: 'de', value: `Begriff ${i}` }],
    ...(i > 0 ? { property: [{ code: 'parent', valueCode: `c${Math.floor((i - 1) / 3)}` }] } : {}),
  }));
  const body = { resourceType: 'CodeSystem', id: 'cpu', url: 'http://example.org/cpu', status: 'active', content: 'complete', property: [{ code: 'parent', type: 'code' }], concept };
  const put = await fetch(`${base}/fhir/R4/CodeSystem/cpu`, { method: 'PUT', headers: { ...headers, 'content-type': 'application/fhir+json' }, body: JSON.stringify(body) });
  if (put.status > 201) throw new Error(`storing the code system: ${put.status} ${await put.text()}`);
  const path = (i) => `/fhir/R4/CodeSystem/$lookup?system=http://example.org/cpu&code=c${i % 5000}`;
  for (let i = 0; i < 300; i++) await fetch(base + path(i), { headers }); // the index is built and warm
  let n = 0;
  const figures = await rounds({ connections: 16, amount: 30_000, requests: [{ setupRequest: (req) => ({ ...req, path: path((n++ * 7) % 5000) }) }] }, '$lookup');
  console.log(`${dir}: server CPU per $lookup, µs, three rounds: ${figures.join(', ')}`);
});
