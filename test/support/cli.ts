import { spawn } from 'node:child_process';
import { projectRoot } from '../../src/paths.js';

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

/** What a finished `lattice import` process printed, and its exit code. */
export interface ImportRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * `lattice import <args>` as a real process, without blocking this one (tests whose server runs
 * in this process answer it meanwhile).
 */
export function importAsync(args: string[], env: NodeJS.ProcessEnv = process.env): Promise<ImportRun> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, latticeArgs('import', ...args), { cwd: projectRoot, env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += String(c)));
    child.stderr.on('data', (c: Buffer) => (stderr += String(c)));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

/**
 * `lattice import <args>` as a real process, killed with SIGKILL as soon as its progress output
 * (stderr) matches `when`; answers the signal it ended with (null when it ended by itself first)
 * and what it printed.
 */
export async function killImportWhen(args: string[], env: NodeJS.ProcessEnv, when: RegExp): Promise<{ signal: NodeJS.Signals | null; stderr: string }> {
  const child = spawn(process.execPath, latticeArgs('import', ...args), { cwd: projectRoot, env });
  let stderr = '';
  const ended = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
  child.stdout.resume();
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += String(chunk);
    if (when.test(stderr)) child.kill('SIGKILL');
  });
  const signal = await ended;
  return { signal, stderr };
}
