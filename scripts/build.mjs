#!/usr/bin/env node
// `npm run build` (and `prepare`, so `npm ci` builds once): type-checks and compiles with tsc
// (dist/src, dist/test, dist/bench), then bundles the server into one file, dist/lattice-server.js,
// loaded by dist/lattice.js — what `npm start` and the `lattice` bin run (scripts/bundle-options.mjs).
// One file loads several times faster than the
// ~1,000 modules it replaces (no per-file resolution, no package.json look-ups); see
// docs/errors.md#start-up.
import { spawnSync } from 'node:child_process';
import { build } from 'esbuild';
import { bundleOptions } from './bundle-options.mjs';

// tsc writes its output also when it reports type errors; the build still fails at the end.
const tsc = spawnSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.json'], { stdio: 'inherit' });

// The resource types, from 37 MB of StructureDefinitions: once here, not on every start.
const { saveResourceTypes } = await import('../dist/src/fhir/definitions.js');
saveResourceTypes();

for (const options of bundleOptions('dist')) await build(options);

if (tsc.status !== 0) process.exit(tsc.status ?? 1);
