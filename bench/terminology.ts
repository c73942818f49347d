import { createHash, randomBytes } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import type { CodeSystem, CodeSystemConcept, ValueSet, ValueSetComposeIncludeFilter } from '@medplum/fhirtypes';
import { startLatticeProcess } from './server-process.js';
import { benchToken } from './token.js';

/**
 * Terminology benchmark: generates a 50,000-concept code system with a deep multi-parent
 * hierarchy (16 levels, a third of the concepts with two parents — the shape of SNOMED CT's
 * is-a graph in miniature), loads it with one PUT, then measures the single-request latency of
 * each terminology operation over HTTP (sequential requests, so the numbers are per request,
 * not throughput). Run through `npm run bench` (bench/run.ts), or alone:
 *   npm run build && node dist/bench/terminology.js
 */

const SIZE = 50_000;
const SYSTEM = 'http://example.org/bench/deep';
const SAMPLES = 40;

/** Concept i (0-based, heap order): primary parent ⌊(i-1)/2⌋, every third concept also the next one. */
export function deepCodeSystem(size = SIZE): { cs: CodeSystem; depth: number } {
  const concept: CodeSystemConcept[] = [];
  for (let i = 0; i < size; i++) {
    const parents = i === 0 ? [] : [Math.floor((i - 1) / 2)];
    const second = Math.floor((i - 1) / 2) + 1;
    if (i > 2 && i % 3 === 0 && second < i && second !== parents[0]) parents.push(second);
    const c: CodeSystemConcept = { code: `C${i}`, display: `Concept ${i} ${['alpha', 'beta', 'gamma', 'delta'][i % 4]}` };
    const property = [
      ...parents.map((p) => ({ code: 'parent', valueCode: `C${p}` })),
      { code: 'group', valueString: `g${i % 10}` },
    ];
    c.property = property;
    if (i % 5 === 0) c.designation = [{ language: 'de', value: `Begriff ${i}` }];
    concept.push(c);
  }
  const cs: CodeSystem = {
    resourceType: 'CodeSystem',
    id: 'bench-deep',
    url: SYSTEM,
    version: '1.0.0',
    name: 'BenchDeep',
    status: 'active',
    content: 'complete',
    hierarchyMeaning: 'is-a',
    property: [
      { code: 'parent', uri: 'http://hl7.org/fhir/concept-properties#parent', type: 'code' },
      { code: 'group', type: 'string' },
    ],
    concept,
  };
  return { cs, depth: Math.floor(Math.log2(size)) + 1 };
}

const valueSet = (id: string, filter: ValueSetComposeIncludeFilter[]): ValueSet => ({
  resourceType: 'ValueSet',
  id,
  url: `http://example.org/bench/ValueSet/${id}`,
  status: 'active',
  compose: { include: [{ system: SYSTEM, filter }] },
});

interface Timing {
  p50: number;
  p95: number;
  max: number;
}

async function time(fn: () => Promise<Response>, samples = SAMPLES): Promise<Timing> {
  const ms: number[] = [];
  for (let i = 0; i < samples + 3; i++) {
    const start = performance.now();
    const res = await fn();
    await res.arrayBuffer();
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
    if (i >= 3) ms.push(performance.now() - start); // the first requests warm caches
  }
  ms.sort((a, b) => a - b);
  return { p50: ms[Math.floor(ms.length / 2)], p95: ms[Math.floor(ms.length * 0.95)], max: ms[ms.length - 1] };
}

/**
 * The super admin's access token through the login flow (PKCE S256), for when bench/token.ts
 * does not provide one. Credentials are those startLatticeProcess configures.
 */
async function adminToken(baseUrl: string): Promise<string | undefined> {
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  const login = await fetch(`${baseUrl}/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: 'admin@example.com', password: 'admin-password-123', codeChallenge: challenge, codeChallengeMethod: 'S256' }),
  });
  if (!login.ok) return undefined;
  const { code } = (await login.json()) as { code?: string };
  if (!code) return undefined;
  const res = await fetch(`${baseUrl}/oauth2/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'authorization_code', code, code_verifier: verifier }).toString(),
  });
  return res.ok ? ((await res.json()) as { access_token: string }).access_token : undefined;
}

/** Runs the benchmark against a fresh server process; returns a Markdown report. */
export async function benchTerminology(_seconds = 5): Promise<string> {
  const server = await startLatticeProcess({ LATTICE_BASE_TERMINOLOGY: 'lazy' });
  try {
    const token = (await benchToken(server.url)) ?? (await adminToken(server.url));
    const headers: Record<string, string> = { 'content-type': 'application/fhir+json', ...(token ? { authorization: `Bearer ${token}` } : {}) };
    const fhir = `${server.url}/fhir/R4`;
    const get = (path: string) => () => fetch(`${fhir}${path}`, { headers });
    const post = (path: string, body: unknown) => () => fetch(`${fhir}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });

    const { cs, depth } = deepCodeSystem();
    const body = JSON.stringify(cs);
    let start = performance.now();
    const put = await fetch(`${fhir}/CodeSystem/${cs.id}`, { method: 'PUT', headers, body });
    if (!put.ok) throw new Error(`loading the code system failed: ${put.status} ${(await put.text()).slice(0, 300)}`);
    const loadMs = performance.now() - start;
    for (const vs of [
      valueSet('deep-isa', [{ property: 'concept', op: 'is-a', value: 'C3' }]),
      valueSet('deep-regex', [{ property: 'code', op: 'regex', value: 'C1[0-9]*7' }]),
      valueSet('deep-prop', [{ property: 'concept', op: 'descendent-of', value: 'C1' }, { property: 'group', op: '=', value: 'g3' }]),
    ]) {
      const res = await fetch(`${fhir}/ValueSet/${vs.id}`, { method: 'PUT', headers, body: JSON.stringify(vs) });
      if (!res.ok) throw new Error(`PUT ValueSet/${vs.id}: ${res.status}`);
    }
    const deepest = `C${SIZE - 1}`;
    const s = encodeURIComponent(SYSTEM);
    const rows: Array<[string, Timing]> = [];
    rows.push(['$lookup (deepest concept, all properties)', await time(get(`/CodeSystem/$lookup?system=${s}&code=${deepest}`))]);
    rows.push(['$subsumes (root vs deepest, 15 levels)', await time(get(`/CodeSystem/$subsumes?system=${s}&codeA=C0&codeB=${deepest}`))]);
    rows.push(['$subsumes (not related)', await time(get(`/CodeSystem/$subsumes?system=${s}&codeA=C4&codeB=${deepest}`))]);
    rows.push(['CodeSystem/$validate-code', await time(get(`/CodeSystem/$validate-code?url=${s}&code=C12345`))]);
    const vsUrl = (id: string) => encodeURIComponent(`http://example.org/bench/ValueSet/${id}`);
    rows.push(['ValueSet/$validate-code is-a (member)', await time(get(`/ValueSet/$validate-code?url=${vsUrl('deep-isa')}&system=${s}&code=C30001`))]);
    rows.push(['ValueSet/$validate-code is-a (not member)', await time(get(`/ValueSet/$validate-code?url=${vsUrl('deep-isa')}&system=${s}&code=${deepest}`))]);
    rows.push(['ValueSet/$validate-code regex', await time(get(`/ValueSet/$validate-code?url=${vsUrl('deep-regex')}&system=${s}&code=C10007`))]);
    rows.push(['ValueSet/$validate-code descendent-of + property', await time(get(`/ValueSet/$validate-code?url=${vsUrl('deep-prop')}&system=${s}&code=C13`))]);
    const coding = Array.from({ length: 1000 }, (_, i) => ({ system: SYSTEM, code: `C${i * 37}` }));
    rows.push([
      'ValueSet/$validate-code codeableConcept, 1000 codings',
      await time(post('/ValueSet/$validate-code', { resourceType: 'Parameters', parameter: [{ name: 'url', valueUri: `http://example.org/bench/ValueSet/deep-isa` }, { name: 'codeableConcept', valueCodeableConcept: { coding } }] }), 10),
    ]);
    const sized = (await (await get(`/ValueSet/$expand?url=${vsUrl('deep-isa')}&count=0`)()).json()) as ValueSet;
    const total = sized.expansion?.total ?? 0;
    rows.push([`$expand is-a, first 100 (total ${total.toLocaleString('en')})`, await time(get(`/ValueSet/$expand?url=${vsUrl('deep-isa')}&count=100`))]);
    rows.push(['$expand is-a, page at offset 10000', await time(get(`/ValueSet/$expand?url=${vsUrl('deep-isa')}&count=100&offset=10000`))]);
    rows.push(['$expand is-a + text filter', await time(get(`/ValueSet/$expand?url=${vsUrl('deep-isa')}&count=100&filter=gamma`))]);
    rows.push(['$expand descendent-of + property, count 0', await time(get(`/ValueSet/$expand?url=${vsUrl('deep-prop')}&count=0`))]);

    start = performance.now();
    const reput = await fetch(`${fhir}/CodeSystem/${cs.id}`, { method: 'PUT', headers, body: JSON.stringify({ ...cs, version: '1.0.1' }) });
    if (!reput.ok) throw new Error(`re-indexing failed: ${reput.status}`);
    const reindexMs = performance.now() - start;

    const lines = [
      `## Terminology (${process.env.DATABASE_URL ? 'PostgreSQL' : 'PGlite in memory'}; ${SIZE.toLocaleString('en')} concepts, ${depth} levels, multi-parent; ${SAMPLES} sequential requests per case)`,
      '',
      `load (PUT, ${(body.length / 1e6).toFixed(1)} MB, indexed in the write transaction): ${(loadMs / 1000).toFixed(1)} s; re-index on update: ${(reindexMs / 1000).toFixed(1)} s`,
      '',
      '| operation | p50 ms | p95 ms | max ms |',
      '|---|---|---|---|',
      ...rows.map(([name, t]) => `| ${name} | ${t.p50.toFixed(1)} | ${t.p95.toFixed(1)} | ${t.max.toFixed(1)} |`),
    ];
    return lines.join('\n') + '\n';
  } finally {
    await server.stop();
  }
}

// Stand-alone: `node dist/bench/terminology.js`.
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  benchTerminology().then(
    (report) => {
      console.log(report);
      process.exit(0);
    },
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
}
