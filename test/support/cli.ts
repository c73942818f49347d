/**
 * The command line of a Lattice process, as `spawn(process.execPath, latticeArgs(...))` takes it.
 * `npm test` bundles the current source once per run (scripts/test.mjs sets LATTICE_TEST_CLI):
 * a process then starts in about half a second, where loading the TypeScript through tsx took
 * several. Run outside that command (node --test on one file), it falls back to tsx.
 */
export function latticeArgs(...args: string[]): string[] {
  const bundle = process.env.LATTICE_TEST_CLI;
  return bundle ? [bundle, ...args] : ['--import', 'tsx', 'src/main.ts', ...args];
}
