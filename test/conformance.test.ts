import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { projectRoot } from '../src/paths.js';
import { drivers, startServer, type TestServer } from './harness.js';

/**
 * The HL7 terminology-ecosystem test cases (shared/conformance, run by its tx-run.mjs against a
 * started server, exactly as a certification run would): every $lookup, $validate-code and
 * CodeSystem/$validate-code case passes except the documented ones below, and the $expand count
 * cannot regress.
 */

const SHARED = join(projectRoot, '..', 'shared');
const RUNNER = join(SHARED, 'conformance', 'tx-run.mjs');
const CASES = join(SHARED, 'conformance', 'tx-cases');

/**
 * Cases that cannot pass, each for a documented reason:
 * - the seed (§4.4, §7) fixes the unknown-ValueSet error as issue code `invalid`; the HL7 case
 *   expects `not-found` (the seed wins where it is explicit: docs/terminology.md#deviation-from-the-hl7-test-cases);
 * - with setup by PUT only: the R4 validator refuses to store a ValueSet whose filter has no
 *   `value` (1..1 in R4), so the cases that check the engine's answer to such a filter never
 *   reach it. Sent inline as `tx-resource` (how the HL7 runner works), they pass.
 */
const SEED_OVERRIDES = [
  'validation/validation-simple-code-bad-valueSet',
  'validation/validation-simple-coding-bad-valueSet',
  'validation/validation-simple-codeableconcept-bad-valueSet',
];
const KNOWN_FAILURES: Record<string, Set<string>> = {
  put: new Set([...SEED_OVERRIDES, 'errors/broken-filter-validate', 'errors/broken-filter2-validate', 'errors/broken-filter-expand']),
  'tx-resource': new Set(SEED_OVERRIDES),
};

/** $expand cases passing today (of 14 in general mode): the count may only go up. */
const EXPAND_PASSING_AT_LEAST: Record<string, number> = { put: 13, 'tx-resource': 14 };

interface RunnerResult {
  summary: { passed: number; failed: number; byOperation: Record<string, { passed: number; failed: number }> };
  tests: Array<{ id: string; operation: string; status: 'pass' | 'fail'; reason: string | null }>;
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

for (const driver of drivers) {
  for (const setup of ['put', 'tx-resource'] as const) {
    describe(`HL7 terminology conformance (${driver}, setup ${setup})`, () => {
      let server: TestServer;
      let result: RunnerResult;

      before(async () => {
        assert.ok(
          existsSync(RUNNER) && existsSync(join(CASES, 'test-cases.json')),
          `the HL7 conformance cases are missing: expected ${RUNNER} and ${CASES} (clone the shared/ folder beside the project)`,
        );
        server = await startServer(driver);
        result = await runConformance(server, ['--all', '--setup', setup]);
      });
      after(() => server?.stop());

      test('every $lookup, $validate-code and CodeSystem/$validate-code case passes (but the documented ones)', () => {
        const failures = result.tests.filter((t) => t.status !== 'pass' && t.operation !== 'expand');
        const unexpected = failures.filter((t) => !KNOWN_FAILURES[setup].has(t.id));
        assert.deepEqual(
          unexpected.map((t) => `${t.id}: ${t.reason}`),
          [],
          'unexpected conformance failures',
        );
        const core = result.tests.filter((t) => ['lookup', 'validate-code', 'cs-validate-code'].includes(t.operation));
        assert.ok(core.length >= 68, `only ${core.length} core cases ran`);
      });

      test(`$expand cases pass (at least ${EXPAND_PASSING_AT_LEAST[setup]})`, () => {
        const expand = result.summary.byOperation.expand;
        assert.ok(expand, 'no $expand cases ran');
        assert.ok(expand.passed >= EXPAND_PASSING_AT_LEAST[setup], `$expand: ${expand.passed} passed, ${expand.failed} failed`);
      });
    });
  }
}
