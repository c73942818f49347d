import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { projectRoot } from '../src/paths.js';
import { drivers, startServer, type TestServer } from './harness.js';

/**
 * The HL7 terminology-ecosystem test cases (test/fixtures/tx-cases, see SOURCE.md there), run by
 * test/support/tx-run.mjs against a started server exactly as a certification run would, in
 * both setup modes (suite resources stored with PUT, or sent inline as `tx-resource`).
 *
 * An honest ratchet:
 * - the original suites (lookup, validate-code, expand basics, error texts, case sensitivity)
 *   pass completely, but for the documented failures below;
 * - for every suite, the number of passing cases may not fall below the floor measured when the
 *   suites were added (most of the newer suites' cases do not pass yet). A regression fails the
 *   test; an improvement only needs its floor raised here.
 * `--seed-deviations` sets apart the cases where the seed fixes another answer than HL7's (an
 * unknown ValueSet in $validate-code answers issue code `invalid`, not `not-found`).
 */

const RUNNER = join(projectRoot, 'test', 'support', 'tx-run.mjs');
const CASES = join(projectRoot, 'test', 'fixtures', 'tx-cases');

type Setup = 'put' | 'tx-resource';

/**
 * Suites of the reference server's mode (`tx.fhir.org`) that need no licensed data: run in a
 * second pass with that mode and only these suites (the mode also changes which parts of other
 * suites' answers are optional, so the first pass runs without it).
 */
const REFERENCE_MODE_SUITES = ['UCUM', 'compare', 'related2'];

/** The suites every case of which must pass (but the known failures). */
const ORIGINAL_SUITES = ['simple-cases', 'validation', 'errors', 'case'];

/**
 * Original-suite cases that cannot pass, each for a documented reason. With setup by PUT only:
 * the R4 validator refuses to store a ValueSet whose filter has no `value` (1..1 in R4), so the
 * cases that check the engine's answer to such a filter never reach it. Sent inline as
 * `tx-resource` (how the HL7 runner works), they pass.
 */
const KNOWN_FAILURES: Record<Setup, Set<string>> = {
  put: new Set(['errors/broken-filter-validate', 'errors/broken-filter2-validate', 'errors/broken-filter-expand']),
  'tx-resource': new Set(),
};

/**
 * Passing cases per suite, at least (measured on PGlite and on PostgreSQL, the lower of the
 * two). Raise a floor when a change makes more cases pass; never lower one to make a test pass.
 */
const PASSING_AT_LEAST: Record<Setup, Record<string, number>> = {
  // of: metadata 2, simple-cases 15, parameters 35, language 26, language2 25, validation 51
  // (+3 set apart), version 180 (+26 set apart), errors 7, case 6, translate 2, batch 2, UCUM 8
  // (the two whole-system UCUM expansions and one reference-server message differ by design,
  // docs/terminology.md#deviation-from-the-hl7-test-cases), compare 15, related2 14 of 17 (one
  // needs SNOMED CT, two reference-server answers differ by design, docs/terminology.md#compare)
  put: {
    metadata: 2, 'simple-cases': 15, parameters: 35, language: 26, language2: 25, validation: 51,
    version: 180, errors: 5, case: 6, translate: 2, batch: 2, UCUM: 5, compare: 15, related2: 14,
  },
  'tx-resource': {
    metadata: 2, 'simple-cases': 15, parameters: 35, language: 26, language2: 25, validation: 51,
    version: 180, errors: 7, case: 6, translate: 2, batch: 2, UCUM: 5, compare: 15, related2: 14,
  },
};

interface RunnerTest {
  id: string;
  suite: string;
  operation: string;
  status: 'pass' | 'fail' | 'seed';
  reason: string | null;
}
interface RunnerResult {
  summary: { passed: number; failed: number; seedSetApart: number };
  tests: RunnerTest[];
}

/** Runs tx-run.mjs against the server and returns its JSON report. */
async function runConformance(server: TestServer, args: string[]): Promise<RunnerResult> {
  const dir = mkdtempSync(join(tmpdir(), 'lattice-tx-'));
  const json = join(dir, 'tx-results.json');
  try {
    const child = spawn(process.execPath, [RUNNER, '--json', json, ...args], {
      env: { ...process.env, FHIR_BASE: server.fhirUrl, FHIR_TOKEN: server.adminToken ?? '', TX_CASES: CASES },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    assert.ok(existsSync(json), `tx-run.mjs wrote no report (exit ${code}):\n${output}`);
    const result = JSON.parse(readFileSync(json, 'utf8')) as RunnerResult;
    // The summary line the runner prints must agree with its report.
    assert.match(output, new RegExp(`${result.summary.passed} passed, ${result.summary.failed} failed`));
    return result;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Per suite: passed / failed / set apart, in manifest order. */
function countBySuite(tests: RunnerTest[]): Map<string, { pass: number; fail: number; seed: number }> {
  const counts = new Map<string, { pass: number; fail: number; seed: number }>();
  for (const t of tests) {
    let c = counts.get(t.suite);
    if (!c) counts.set(t.suite, (c = { pass: 0, fail: 0, seed: 0 }));
    c[t.status]++;
  }
  return counts;
}

for (const driver of drivers) {
  for (const setup of ['put', 'tx-resource'] as const) {
    describe(`HL7 terminology conformance (${driver}, setup ${setup})`, () => {
      let server: TestServer;
      let result: RunnerResult;
      let counts: Map<string, { pass: number; fail: number; seed: number }>;

      before(async () => {
        assert.ok(existsSync(join(CASES, 'test-cases.json')), `the HL7 conformance cases are missing: expected ${CASES}`);
        server = await startServer(driver);
        result = await runConformance(server, ['--all', '--seed-deviations', '--setup', setup]);
        const reference = await runConformance(server, ['--all', '--seed-deviations', '--setup', setup, '--modes', 'tx.fhir.org', '--suite', REFERENCE_MODE_SUITES.join(',')]);
        result = {
          summary: {
            passed: result.summary.passed + reference.summary.passed,
            failed: result.summary.failed + reference.summary.failed,
            seedSetApart: result.summary.seedSetApart + reference.summary.seedSetApart,
          },
          tests: [...result.tests, ...reference.tests],
        };
        counts = countBySuite(result.tests);
        const table = [...counts].map(([suite, c]) => `${suite} ${c.pass}/${c.pass + c.fail}${c.seed ? ` (+${c.seed} set apart)` : ''}`);
        console.log(`conformance ${driver} ${setup}: ${table.join(', ')}; total ${result.summary.passed} of ${result.summary.passed + result.summary.failed}`);
      });
      after(() => server?.stop());

      test('every case of the original suites passes (but the documented ones)', () => {
        const original = result.tests.filter((t) => ORIGINAL_SUITES.includes(t.suite));
        assert.ok(original.length >= 80, `only ${original.length} cases of the original suites ran`);
        const unexpected = original.filter((t) => t.status === 'fail' && !KNOWN_FAILURES[setup].has(t.id));
        assert.deepEqual(
          unexpected.map((t) => `${t.id}: ${t.reason}`),
          [],
          'unexpected conformance failures',
        );
      });

      test('no suite passes fewer cases than its floor', () => {
        const floors = PASSING_AT_LEAST[setup];
        const below = Object.entries(floors)
          .filter(([suite, floor]) => (counts.get(suite)?.pass ?? 0) < floor)
          .map(([suite, floor]) => `${suite}: ${counts.get(suite)?.pass ?? 0} passed, floor ${floor}`);
        assert.deepEqual(below, [], 'conformance regressed');
        const unlisted = [...counts.keys()].filter((suite) => !(suite in floors));
        assert.deepEqual(unlisted, [], 'every suite has a floor');
      });
    });
  }
}
