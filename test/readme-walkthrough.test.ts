import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'node:test';
import { projectRoot } from '../src/paths.js';
import { drivers } from './harness.js';

/**
 * The README's shell examples, run in order against a fresh server by
 * scripts/readme-walkthrough.mjs (in-memory PGlite; the examples are the same on PostgreSQL).
 */
test('the README examples work as written, in order, on a fresh server', { skip: !drivers.includes('pglite') && 'PGlite not among the drivers' }, async () => {
  const child = spawn(process.execPath, [join(projectRoot, 'scripts', 'readme-walkthrough.mjs')], {
    cwd: projectRoot,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  assert.equal(code, 0, output);
  assert.match(output, /README walkthrough: (\d+) of \1 examples ran as written/);
  console.log(output.split('\n').find((l) => l.startsWith('README walkthrough')));
});
