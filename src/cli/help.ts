import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectRoot } from '../paths.js';
import { environmentText } from './environment.js';

/** What the command line asked for before any command runs: help, the version, or nothing. */
export type EarlyAnswer = { text: string } | undefined;

const HELP_WORDS = new Set(['--help', '-h', 'help']);

/** The package version (package.json beside the code). */
export function packageVersion(): string {
  return (JSON.parse(readFileSync(join(projectRoot, 'package.json'), 'utf8')) as { version: string }).version;
}

/**
 * `lattice --help` | `-h` | `help` [command], `lattice <command> --help` | `-h`, `lattice
 * --version` | `-v`: the text to print (exit 0), or undefined for any other command line.
 * `usage` is the usage of every command (src/main.ts); a command's help is its lines of it.
 */
export function earlyAnswer(argv: string[], usage: string): EarlyAnswer {
  const [first, second] = argv;
  if (first === '--version' || first === '-v') return { text: `lattice ${packageVersion()}` };
  if (first !== undefined && HELP_WORDS.has(first)) return { text: helpText(usage, HELP_WORDS.has(second ?? '') ? undefined : second) };
  if (first !== undefined && argv.slice(1).some((a) => HELP_WORDS.has(a) && a !== 'help')) return { text: helpText(usage, first) };
  return undefined;
}

/** Usage (of one command when `command` names one), the environment variables, and where the docs are. */
export function helpText(usage: string, command?: string): string {
  const shown = command ? commandUsage(usage, command) : usage;
  return [
    `lattice ${packageVersion()}: a FHIR R4 clinical data and terminology server.`,
    '',
    shown,
    '  lattice --help | -h | help [command]  this help;  lattice --version  the version',
    '',
    'Run from the project folder as `npx lattice …` (or `npm start` for `lattice serve`).',
    '',
    'Environment variables (README.md "Configuration" has them in full):',
    environmentText(),
    '',
    'Documentation: README.md, docs/operating.md (backups, PostgreSQL, TLS), docs/rest.md, docs/terminology.md, docs/auth.md.',
  ].join('\n');
}

/** The usage lines of one command (an entry starts at a line `  lattice <command>`), or all of it for an unknown one. */
function commandUsage(usage: string, command: string): string {
  const lines = usage.split('\n');
  const out: string[] = [lines[0]];
  let inside = false;
  for (const line of lines.slice(1)) {
    if (/^ {2}lattice /.test(line)) inside = line.startsWith(`  lattice ${command} `) || line === `  lattice ${command}` || line.startsWith(`  lattice ${command}\t`);
    if (inside) out.push(line);
  }
  return out.length > 1 ? out.join('\n') : usage;
}
