import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { projectRoot } from '../src/paths.js';
import { drivers, startServer, sharedStorage } from './harness.js';
import { latticeArgs } from './support/cli.js';

const codeSystem = (i: number) => ({
  resourceType: 'CodeSystem',
  id: `cli-${i}`,
  url: `http://example.org/cs/cli-${i}`,
  version: '1',
  status: 'active',
  content: 'complete',
  concept: [{ code: 'root', display: 'Root', concept: [{ code: 'leaf', display: 'Leaf' }] }],
});

for (const driver of drivers) {
  describe(`lattice import (${driver})`, () => {
    test('loads NDJSON through the CLI; the server then answers from the index', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'lattice-cli-'));
      try {
        const file = join(dir, 'terminology.ndjson');
        writeFileSync(file, [codeSystem(1), codeSystem(2)].map((r) => JSON.stringify(r)).join('\n') + '\n');
        const { storage, env } = await sharedStorage(driver, dir);
        const run = spawnSync(process.execPath, latticeArgs('import', file), { cwd: projectRoot, env, encoding: 'utf8' });
        assert.equal(run.status, 0, run.stderr);
        assert.match(run.stdout, /imported 2 resources \(2 CodeSystems, 0 ValueSets, 4 concepts; 0 skipped\)/);

        const server = await startServer(driver, storage);
        try {
          const res = await server.fhir('GET', '/CodeSystem/$subsumes?system=http://example.org/cs/cli-2&codeA=root&codeB=leaf');
          assert.equal(res.status, 200, res.text);
          assert.equal(res.body.parameter[0].valueCode, 'subsumes');
        } finally {
          await server.stop();
        }
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

    test('without a file argument it prints the usage and exits 2', () => {
      const run = spawnSync(process.execPath, latticeArgs('import'), { cwd: projectRoot, encoding: 'utf8' });
      assert.equal(run.status, 2);
      assert.match(run.stderr, /Usage:/);
    });
  });
}
