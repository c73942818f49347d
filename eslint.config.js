// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/**
 * Lint, type-checked (typescript-eslint `recommendedTypeChecked`) with `no-explicit-any` on.
 * The layering rules (Fastify only in src/http, features never import the app wiring, src/core
 * imports only contracts, no import cycles) are checked by test/architecture.test.ts over the
 * whole import graph, with the rest of the suite.
 */
export default tseslint.config(
  // test/support/tx-run.mjs is the conformance kit's runner, kept verbatim.
  { ignores: ['dist/**', 'data/**', 'node_modules/**', 'coverage/**', '.tmp/**', '.*', 'test/fixtures/**', 'test/support/tx-run.mjs'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: { allowDefaultProject: ['*.js', 'scripts/*.mjs', 'test/support/*.mjs'] }, tsconfigRootDir: import.meta.dirname },
      globals: { process: 'readonly', console: 'readonly', URL: 'readonly', Buffer: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', setInterval: 'readonly', clearInterval: 'readonly', fetch: 'readonly', AbortController: 'readonly', TextEncoder: 'readonly', TextDecoder: 'readonly', URLSearchParams: 'readonly', structuredClone: 'readonly', performance: 'readonly', setImmediate: 'readonly' },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-explicit-any': 'error',
      'no-constant-condition': ['error', { checkLoops: false }],
      // Async functions without await implement promise-returning contracts (handlers, drivers).
      '@typescript-eslint/require-await': 'off',
      // node:test's describe/test return promises the runner awaits.
      '@typescript-eslint/no-floating-promises': [
        'error',
        { allowForKnownSafeCalls: [{ from: 'package', package: 'node:test', name: ['describe', 'test', 'it', 'suite'] }] },
      ],
    },
  },
  {
    // End-to-end tests read JSON bodies off the wire: member access on them is untyped by
    // nature. Explicit `any` stays an error there too (the harness's response body is the one
    // documented exception).
    files: ['test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
    },
  },
  {
    // Plain JavaScript (scripts, this config) has no types to check.
    files: ['**/*.js', '**/*.mjs'],
    ...tseslint.configs.disableTypeChecked,
  },
  {
    // Fastify stays inside the HTTP adapter.
    files: ['src/**/*.ts'],
    ignores: ['src/http/**'],
    rules: { 'no-restricted-imports': ['error', { paths: [{ name: 'fastify', message: 'Only src/http/ knows Fastify.' }] }] },
  },
);
